"""Warnings from what was measured where it happened, on real recordings of a
producer handing chunks of shared memory to a writer child per save
(targets/handoff.py): a writer's start-up ends at its first unit of work (the
first chunk it took, the first byte it wrote or sent), never at its first
file write; page-fault-storm counts the faults inside the calls it names,
not the writer's life; which side sets the pace is read from each side's
waits over its loop's wall time, a producer's wait for a freed buffer being
a wait, not generation. Both sides of each: it fires where it should, and
clean runs, each recorded twice, warn of nothing."""

from __future__ import annotations

import json

import numpy as np
import pytest

from helpers import TARGETS, run_writerprof

from writerprof.run import load

FORK_ACTION = "start the writers with fork"
HANDOFF = f"{TARGETS}/handoff.py"


def recorded(tmp_path, name: str, *config: str, env=None) -> tuple[dict, object]:
    """(report --json, the loaded run) of handoff.py run with config (NAME=VALUE) under record."""
    out = tmp_path / f"{name}-out"
    out.mkdir()
    run = tmp_path / name
    run_writerprof("record", "-o", run, "--", "python", HANDOFF, out, *config, timeout=300, env=env)
    return json.loads(run_writerprof("report", "--json", run).stdout), load(run)


def codes(summary: dict) -> set[str]:
    return {d["code"] for d in summary["diagnoses"]}


def warnings(summary: dict) -> list[str]:
    return [f"{d['code']}: {d['message']}" for d in summary["diagnoses"] if d["severity"] == "warning"]


def advice(summary: dict) -> list[str]:
    return [a["what"] for d in summary["diagnoses"] for a in d.get("fix") or []]


def found(summary: dict, code: str) -> list[dict]:
    return [d for d in summary["diagnoses"] if d["code"] == code]


def writer_calls(run, save: dict, phase: str) -> np.ndarray:
    """The writer's chunk records of one phase, in time order."""
    c = run.chunk_columns
    code = next(k for k, v in run.phase_names.items() if v == phase)
    rows = np.flatnonzero((c["proc"] == save["writer"]) & (c["phase"] == code))
    return c.to_records()[rows][np.argsort(c["start_ns"][rows])] if len(rows) else np.zeros(0)


def process_start_ns(run, save: dict) -> int:
    starts = [e["data"] for e in run.events_of("process_start") if e["data"].get("child_pid") == save["writer_pid"]]
    return int(starts[0]["start_ns"])


def test_a_fork_writer_waiting_for_its_first_chunk_is_not_starting_up(tmp_path):
    """The producer computes 1.5 s before its first chunk; the writer, forked in a few ms, waits for it,
    then works on each chunk before its write (a checksum): its start-up ends as it takes that chunk."""
    for n in (1, 2):
        summary, run = recorded(tmp_path, f"run{n}", "method=fork", "first_s=1.5", "work_s=0.02")
        assert len(summary["saves"]) == 2 and {s["start_method"] for s in summary["saves"]} == {"fork"}
        assert warnings(summary) == [] and not [a for a in advice(summary) if a.startswith(FORK_ACTION)]
        for save in summary["saves"]:
            took = int(writer_calls(run, save, "get")["end_ns"][0])
            phases = save["startup"]
            # Process.start() to the first chunk's return, to the nanosecond: not to the first write after it.
            assert sum(phases.values()) == pytest.approx((took - process_start_ns(run, save)) / 1e9, abs=1e-9)
            assert save["startup_s"] == pytest.approx(sum(phases.values()) - phases["first_chunk"])


def test_a_fork_writer_slow_to_reach_its_first_chunk_is_told_no_fork(tmp_path):
    """The writer's target takes 0.5 s before its first get (making a client) while the producer,
    its buffers filled, waits for one to come back: that start-up held the save up."""
    summary, _ = recorded(tmp_path, "run", "method=fork", "setup_s=0.5")
    (d,) = found(summary, "writer-startup")
    assert d["evidence"]["start_method"] == "fork" and d["evidence"]["phases_s"]["target_setup"] >= 0.5
    assert d["fix"] and not [a for a in advice(summary) if a.startswith(FORK_ACTION)]
    assert "main-reimport" not in codes(summary)


def test_a_forkserver_writers_re_run_of_main_is_start_up_before_any_file_write(tmp_path):
    """Each writer re-runs a __main__ that takes 0.5 s, then keeps each chunk it takes and writes the
    file only after the last: its start-up ends at its first chunk, long before its first write."""
    summary, run = recorded(tmp_path, "run", "method=forkserver", "rerun_s=0.5", "mode=hold")
    assert len(summary["saves"]) == 2
    for save in summary["saves"]:
        assert writer_calls(run, save, "write")["start_ns"][0] > writer_calls(run, save, "get")["end_ns"][-1]
        assert save["startup"]["main_rerun"] >= 0.5
    (d,) = found(summary, "main-reimport")
    assert d["evidence"]["writers"] == 2 and d["evidence"]["per_writer_s"] >= 0.5
    assert d["evidence"]["start_method"] == "forkserver"


def test_a_writer_that_sends_its_chunks_and_writes_no_file_starts_work_at_its_first_chunk(tmp_path):
    """Each forkserver writer re-runs a __main__ of 0.5 s, then sends every chunk it takes to a peer on
    loopback (an upload of no protocol writerprof reads), after a copy of its own (a fault a page),
    and never writes a file: its re-run is its start-up all the same, its copies no fault storm, and
    its wait for chunks a small share of its loop."""
    summary, run = recorded(tmp_path, "run", "method=forkserver", "rerun_s=0.5", "mode=send", "chunks=16")
    assert not list((tmp_path / "run-out").iterdir())  # no file written
    assert len(summary["saves"]) == 2
    for save in summary["saves"]:
        assert save["upload"] is not None and save["bytes"] == 16 * 8 << 20
        took = int(writer_calls(run, save, "get")["end_ns"][0])
        assert sum(save["startup"].values()) <= (took - process_start_ns(run, save)) / 1e9 + 1e-9
    (d,) = found(summary, "main-reimport")
    assert d["evidence"]["writers"] == 2 and d["evidence"]["per_writer_s"] >= 0.5
    assert {"page-fault-storm", "generation-bound"}.isdisjoint(codes(summary))


def test_writers_uploading_each_chunk_as_a_part_are_judged_by_what_they_did(tmp_path, s3_server):
    """The issue's object-store case: forkserver writers re-run a __main__ of 0.5 s, then upload each
    chunk they take as a part of a boto3 multipart upload (its body a copy), and write no file; the
    producer waits for the buffers they free."""
    summary, _ = recorded(tmp_path, "run", "method=forkserver", "rerun_s=0.5", "mode=s3",
                          f"endpoint={s3_server.endpoint}", f"bucket={s3_server.bucket}", env=s3_server.env)
    assert not list((tmp_path / "run-out").iterdir())  # no file written
    assert len(summary["saves"]) == 2
    for save in summary["saves"]:
        assert (save["upload"]["kind"], save["upload"]["status"], save["parts"]) == ("multipart", "ok", 8)
        assert save["startup"]["main_rerun"] >= 0.5
    (d,) = found(summary, "main-reimport")
    assert d["evidence"]["writers"] == 2
    (bound,) = found(summary, "writer-bound")
    assert "writes and fsync" not in bound["message"]  # it wrote no file: its uploads, if anything, set the pace
    assert {"page-fault-storm", "generation-bound"}.isdisjoint(codes(summary)), warnings(summary)


def test_forkserver_writers_with_a_light_main_warn_of_nothing(tmp_path):
    """The producer generates its first chunk as the writer starts: the start-up costs the save nothing."""
    for n in (1, 2):
        summary, _ = recorded(tmp_path, f"run{n}", "method=forkserver", "first_s=0.3", "saves=3")
        assert len(summary["saves"]) == 3
        assert warnings(summary) == []


def test_copies_into_memory_of_its_own_are_no_fault_storm(tmp_path):
    """The writer copies each chunk into fresh memory (a fault a page: 100k+ in its life) between its
    calls, and writes the copy: its calls take few faults."""
    for n in (1, 2):
        summary, run = recorded(tmp_path, f"run{n}", "mode=fresh", "saves=1", "chunks=52", "fsync=0")
        (save,) = summary["saves"]
        (writer,) = [p for p in summary["processes"] if p["id"] == save["writer"]]
        c = run.chunk_columns
        mine = c["proc"] == save["writer"]
        in_calls = int(c["minflt"][mine].sum() + c["majflt"][mine].sum())
        assert writer["minflt"] > 100_000 and in_calls < writer["minflt"] / 20, (writer["minflt"], in_calls)
        assert "page-fault-storm" not in codes(summary), warnings(summary)


def test_a_writer_faulting_its_buffers_again_in_each_write_is_a_fault_storm(tmp_path):
    """The writer drops its buffer's pages before each write: the write faults them in again."""
    summary, _ = recorded(tmp_path, "run", "mode=refault", "saves=1", "chunks=256", "chunk_mib=1", "fsync=0")
    (d,) = found(summary, "page-fault-storm")
    e = d["evidence"]
    assert e["faults_by_phase"]["write"] > 2 * e["buffer_pages"] and e["faults_per_page"] > 2
    assert "in its write calls" in d["message"] and "in the writer's life" in d["message"]


def test_a_slow_writer_is_writer_bound_however_its_producer_generates(tmp_path):
    """The writer works 50 ms on each chunk (no hook times it); the producer, whose fill no hook
    names either, waits for a freed buffer most of its loop."""
    summary, _ = recorded(tmp_path, "run", "work_s=0.05")
    (d,) = found(summary, "writer-bound")
    assert d["evidence"]["free_wait_s"] > d["evidence"]["gen_s"]
    assert "generation-bound" not in codes(summary)
    assert all(s["gen_from"] == "between hand-offs" for s in summary["saves"])


def test_a_slow_producer_is_generation_bound(tmp_path):
    """The producer computes 0.1 s of CPU on each chunk, 1.6 s in all: the writer waits for it."""
    summary, _ = recorded(tmp_path, "run", "gen_s=0.1", "chunk_mib=2")
    (d,) = found(summary, "generation-bound")
    assert d["evidence"]["gen_cpu_s"] > 0.8  # it computed there, as the sampler's readings say
    assert "writer-bound" not in codes(summary)
