"""A writer with names no spec knows (targets/foreign_writer.py), recorded for
real under fork and forkserver: its queue waits come from the probe's generic
hooks, non-null and within 5% of the target's own timings, its generation
from the producer's time between its hand-offs, and the fsync its
storage's close() makes is fsync, not close (with its close named in a
--probe spec, as a user names their own, the fsync inside it keeps its own
column and bars and close's time is its own)."""

from __future__ import annotations

import pytest
from helpers import TARGETS
from own_timings import agree, record_with_own_timings

CLOSE_SPEC = "foreign_storage:Ledger.close=close"


@pytest.fixture(scope="module", params=["fork", "forkserver"])
def recorded(request, tmp_path_factory):
    """(summary, the target's own timings, whether its close was hooked, the run)."""
    method = request.param
    probe = ["--probe", CLOSE_SPEC] if method == "forkserver" else []
    summary, own, run = record_with_own_timings(tmp_path_factory, f"foreign-{method}", probe,
                                                [f"{TARGETS}/foreign_writer.py", method],
                                                ("put_wait_s", "get_wait_s"))
    return summary, own, bool(probe), run


def test_no_spec_matched_the_writers_names(recorded):
    summary, own, _, _ = recorded
    assert {s["target"] for s in summary["saves"]} == {"__main__.drain"}
    assert len(summary["saves"]) == len(own) == 2


def test_queue_waits_are_measured_and_agree_with_the_targets_own(recorded):
    summary, own, _, _ = recorded
    for save, mine in zip(summary["saves"], own):
        assert save["save"] == mine["save"]
        for key in ("put_wait_s", "get_wait_s"):
            assert mine[key] > 0.15, mine  # long enough that 5% is more than the clock's noise
            assert save[key] is not None, (key, save)
            assert agree(save[key], mine[key]), (key, save[key], mine[key])
        # Its fill has no hook: its generation is its time between hand-offs, the
        # second half's slow fills (6 x 0.1 s of sleep) and the copies, and not the queue's.
        assert save["gen_from"] == "between hand-offs"
        assert 0.6 <= save["gen_s"] < 0.6 + 0.15, save["gen_s"]
        assert save["critical_path"]["generation"] >= 0.6 > 10 * save["critical_path"]["queue"]
        assert save["gen_cpu_s"] is None or save["gen_cpu_s"] < 0.3  # it slept: the sampler says so


def test_fsync_is_its_own_phase_and_not_counted_in_close(recorded):
    summary, own, close_hooked, _ = recorded
    for save, mine in zip(summary["saves"], own):
        assert agree(save["fsync_s"], mine["fsync_s"], floor=0.002), (save, mine)
        assert save["critical_path"]["fsync"] > 0
        if close_hooked:  # close is the Ledger's close less the fsync inside it
            expected = mine["close_s"] - mine["fsync_s"]
            assert agree(save["close_s"], expected, floor=0.002), (save, mine)
        else:  # only os.close is hooked: a moment, and the fsync before it is not in it
            assert save["close_s"] < 0.01
    (pair,) = summary["chunk_timeline"]["pairs"]
    spans = pair["writer_spans"]
    assert len(spans["fsync"]) == 2
    if close_hooked:
        # Each fsync bar sits in a gap of the close bars: close before it and after, not over it.
        closes = spans["close"]
        for start, seconds in spans["fsync"]:
            assert any(abs(s + d - start) < 1e-6 for s, d in closes)
            assert any(abs(s - (start + seconds)) < 1e-6 for s, d in closes)
            assert not any(s < start + seconds / 2 < s + d for s, d in closes)


def test_the_generic_hooks_were_applied_without_a_spec(recorded):
    summary, _, _, run = recorded
    from writerprof.run import load

    applied = {}
    for e in load(run).events_of("hook"):
        if e["data"]["spec"].startswith("multiprocessing.queues:") and e["data"]["status"] == "applied":
            applied.setdefault(e["data"]["spec"], set()).add(e["pid"])
    assert set(applied) == {"multiprocessing.queues:Queue.put=put", "multiprocessing.queues:Queue.get=get",
                            "multiprocessing.queues:JoinableQueue.put=put",
                            "multiprocessing.queues:SimpleQueue.put=put", "multiprocessing.queues:SimpleQueue.get=get"}
    producer = summary["saves"][0]["producer_pid"]
    assert all(producer in pids for pids in applied.values())  # the writers have them from their parent
