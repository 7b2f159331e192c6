"""writer-startup judges the writer's own start-up (Process.start() to its
target's first wait for a chunk; not that wait, the producer generating) in
the median save, and its fix advises nothing the run already does; the fork
advice names the native threads live as the writers were started. Synthetic
runs (writerprof.synthetic) of 2 ranks x 3 saves."""

from __future__ import annotations

from collections import Counter

import pytest

from writerprof.analysis import fixes
from writerprof.analysis.fixes import Target
from writerprof.synthetic import Scenario

from test_diagnoses import found, summary_of  # noqa: F401 (a fixture)

FORK_ACTION = "start the writers with fork"  # the fork advice, as a writers' run words it

SHORT = dict(chunks_per_save=4, fsync_s=0.01)  # saves of ~0.12 s, as the reproducer's 64 MiB ones


def test_one_slow_start_among_three_saves_does_not_fire_it(summary_of):
    summary = summary_of(**SHORT, overrides={(0, 1): {"target_setup_s": 0.455}})
    stalled = [s for s in summary["saves"] if s["startup"]["target_setup"] > 0.4]
    assert len(stalled) == 1 and stalled[0]["startup_s"] > stalled[0]["duration_s"] / 2  # the stall is there
    assert found(summary, "writer-startup") == []


def test_the_wait_for_the_first_chunk_is_the_producer_generating_not_the_writer_starting(summary_of):
    summary = summary_of(chunks_per_save=2, gen_s=0.1, write_s=0.01, fsync_s=0.01)
    assert all(s["startup"]["first_chunk"] > 0.3 * s["duration_s"] for s in summary["saves"])
    assert found(summary, "writer-startup") == []


def test_a_start_up_paid_in_every_save_fires_it_even_beside_one_fast_save(summary_of):
    summary = summary_of(**SHORT, target_setup_s=0.3, overrides={(0, 1): {"target_setup_s": 0.001}})
    fired = found(summary, "writer-startup")
    assert len(fired) == 2  # both ranks: rank 0's one fast save does not hide it
    for d in fired:
        e = d["evidence"]
        assert e["phases_s"]["target_setup"] == pytest.approx(0.3, rel=0.01) and "first_chunk" not in e["phases_s"]
        assert e["share"] > 0.5 and e["saves"] == 3
        assert 0.5 * e["startup_s"] < e["critical_s"] <= e["startup_s"]  # most of it held the save up
        assert e["share_low"] <= e["share"] <= e["share_high"] and e["interval_coverage"] == 0.75  # 3 saves: their range, 75%
        assert "most of it in target_setup (0.300 s)" in d["message"] and "3 saves" in d["message"]


def test_a_fork_run_is_not_told_to_start_its_writers_with_fork(summary_of):
    (d, _) = found(summary_of(**SHORT, target_setup_s=0.3), "writer-startup")
    assert d["evidence"]["start_method"] == "fork"
    assert not [a for a in d["fix"] if a["what"].startswith(FORK_ACTION)]
    assert any("keep it for every save" in a["what"] for a in d["fix"])
    spawn = fixes.for_diagnosis({**d, "evidence": {**d["evidence"], "start_method": "spawn"}}, Target(), 3)
    assert [a["what"].split(":")[0] for a in spawn][:2] == [
        "start the writers with forkserver (with set_forkserver_preload of the target's module)", FORK_ACTION]


def test_the_fork_advice_names_the_native_threads_live_as_the_writers_started(summary_of):
    pooled = summary_of(start_method="forkserver", main_rerun_s=0.8, fork_threads=3)
    for d in found(pooled, "writer-startup") + found(pooled, "main-reimport"):
        (fork,) = [a for a in d["fix"] if a["what"].startswith(FORK_ACTION)]
        assert "native threads, which no Python Thread runs, were live as the writers were started " \
               "(2 tokio-runtime-w)" in fork["what"]
        assert "deadlock hazard" in fork["what"] and "safe only where none is live at the fork itself" in fork["what"]
    alone = summary_of(start_method="forkserver", main_rerun_s=0.8)
    (d, _) = found(alone, "main-reimport")
    (fork,) = [a for a in d["fix"] if a["what"].startswith(FORK_ACTION)]
    assert "no other thread, native ones included, was live as the writers were started" in fork["what"]
    assert "deadlock" not in fork["what"]


def test_unnamed_native_threads_are_said_to_carry_their_process_s_name():
    target = Target(native_threads=Counter({"": 1, "tokio-runtime-w": 3}))
    (fork,) = [a for a in fixes._writer_startup({"evidence": {"start_method": "forkserver"}}, target, 3)
               if a["what"].startswith(FORK_ACTION)]
    assert "(3 tokio-runtime-w, 1 with no name of its own)" in fork["what"]
    # A run recorded before the census says it cannot tell.
    (unknown,) = [a for a in fixes._writer_startup({"evidence": {"start_method": "forkserver"}}, Target(), 3)
                  if a["what"].startswith(FORK_ACTION)]
    assert "this recording does not list them" in unknown["what"]


def test_fork_with_threads_names_the_native_ones(summary_of):
    (d, _) = found(summary_of(fork_threads=3, fsync_s=0.01), "fork-with-threads")
    assert d["severity"] == "info"
    assert "3 live threads (the kernel's count), 1 of them Python's (MainThread), and native ones run by no " \
           "Python Thread (2 tokio-runtime-w)" in d["message"]
    assert d["evidence"]["native_only"] == ["tokio-runtime-w"] * 2
