"""`record --stall`: a run that hangs gets one snapshot of its processes while
it hangs, and the report names the wait. Small programs of the tests' own
(targets/stall_*.py) hang as the benchmark's writers did: a fork that copied
a lock locked (mlcommons/storage #642), processes retrying a failing
sem_unlink on a CPU (#777), an MPI rank whose writer waits on a queue
nobody feeds; each is ended by the test once the snapshot is written. A slow
save that makes progress gets none, nor a long set-up before the first save."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import TARGETS, run_writerprof, writerprof_command
from writerprof.analysis import shapes, stalls
from writerprof.probes.writerprof_probe.format import host_name
from writerprof.run import layout

STALL = "2"  # seconds: short for the tests; what is asserted holds at any length
WAIT_S = 120  # for the snapshot, on a loaded machine
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")


def _target(name: str) -> str:
    return os.path.join(TARGETS, name)


def _recording(run: Path, *cmd) -> subprocess.Popen:
    return subprocess.Popen([*writerprof_command(), "record", "-o", str(run), "--stall", STALL, "--", *map(str, cmd)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _snapshot(run: Path, host: str, recording: subprocess.Popen) -> dict:
    """The host's first stall snapshot, once written whole."""
    path = layout.host_dir(run, host) / layout.STALLS_FILE
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        text = path.read_text() if path.exists() else ""
        if text.endswith("\n"):
            return json.loads(text.splitlines()[0])
        if recording.poll() is not None:
            break
        time.sleep(0.1)
    recording.kill()
    _, err = recording.communicate()
    raise AssertionError(f"no stall snapshot in {path}: record said\n{err}")


def _ended(recording: subprocess.Popen) -> str:
    _, err = recording.communicate(timeout=120)
    assert recording.returncode == 0, err
    return err


def _report(run: Path) -> dict:
    summary = json.loads(run_writerprof("report", "--json", run).stdout)
    assert not shapes.mismatches(summary, shapes.Summary)
    return summary


def _kill(pids) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("host", [None, "hostb"], ids=["launcher", "agent"])
def test_a_fork_that_copied_a_lock_locked_is_named_a_deadlock(tmp_path, host):
    """On the launcher's host, record's sampler takes the snapshot; on
    another host (WRITERPROF_HOST), that host's agent does."""
    run = tmp_path / "run"
    cmd = [sys.executable, _target("stall_fork_lock.py"), str(tmp_path / "ckpt")]
    # Only CMD is another host's: record itself stays the launcher's.
    recording = _recording(run, *(["env", f"WRITERPROF_HOST={host}", *cmd] if host else cmd))
    snapshot = _snapshot(run, host or host_name(), recording)
    (child,) = [p for p in snapshot["processes"] if p["role"] == "fork_child"]
    (main,) = [p for p in snapshot["processes"] if p["role"] == "main"]
    (blocked,) = [t for t in child["threads"] if t["tid"] == child["pid"]]
    assert blocked["syscall_name"] == "futex" and blocked["window_cpu_ns"] is not None
    assert any(f["function"].endswith("save") for f in blocked["frames"])  # py-spy's stack of it
    _kill([child["pid"]])  # the parent's join returns: CMD ends
    said = _ended(recording)
    # record says what its own sampler took; the other host's is in the report
    assert ("no save made progress for" in said) == (host is None)
    assert [p for p in (run / "hosts").iterdir() if (p / layout.STALLS_FILE).exists()] == [
        layout.host_dir(run, host or host_name())]

    summary = _report(run)
    assert summary["stalls"]["stall_s"] == float(STALL)
    (found,) = summary["stalls"]["snapshots"]
    by_pid = {p["pid"]: p for p in found["processes"]}
    forked, parent = by_pid[child["pid"]], by_pid[main["pid"]]
    assert forked["wait_kind"] == stalls.LOCK and "stall_fork_lock.py" in forked["where"]
    (held,) = forked["on"]
    assert held["pid"] == main["pid"] and "holder" in held["threads"]  # the parent's threads at the fork
    assert parent["wait_kind"] == stalls.CHILD and parent["on"] == [{"pid": child["pid"], "how": "for the end of"}]
    assert found["deadlocks"] == [sorted([child["pid"], main["pid"]])] and not found["spinning"]
    (stall,) = [d for d in summary["diagnoses"] if d["code"] == "stall"]
    assert "copied locked at the fork" in stall["message"] and stall["evidence"]["deadlocks"]


def test_processes_retrying_a_failing_unlink_are_named_spinning(tmp_path):
    run, stop = tmp_path / "run", tmp_path / "stop"
    recording = _recording(run, sys.executable, _target("stall_unlink_retry.py"), stop, "2")
    snapshot = _snapshot(run, host_name(), recording)
    stop.touch()
    _ended(recording)

    (found,) = _report(run)["stalls"]["snapshots"]
    workers = sorted(p["pid"] for p in snapshot["processes"] if p["role"] == "fork_child")
    assert len(workers) == 2 and found["spinning"] == workers and not found["deadlocks"]
    by_pid = {p["pid"]: p for p in found["processes"]}
    for pid in workers:
        worker = by_pid[pid]
        assert worker["spins"] and worker["waits_on"] is None and "retry" in worker["where"]
        # The journal's last semaphore operation: the unlink that failed, again and again.
        last = worker["last_op"]
        assert last["kind"] == "semaphore" and last["op"] == "unlink" and last["outcome"] == "FileNotFoundError"
        assert last["failed_unlinks"] > 1
    (parent,) = [p for p in found["processes"] if p["journal_role"] == "main"]
    assert parent["wait_kind"] == stalls.CHILD and sorted(o["pid"] for o in parent["on"]) == workers


@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install 'writerprof[mpi]')")
def test_an_mpi_rank_whose_writer_waits_on_an_unfed_queue(tmp_path):
    run = tmp_path / "run"
    recording = _recording(run, MPIEXEC, "-n", "2", sys.executable, _target("stall_mpi_writer.py"), tmp_path)
    snapshot = _snapshot(run, host_name(), recording)
    _kill(p["pid"] for p in snapshot["processes"] if p["role"] == "fork_child")  # rank 0's has ended by then
    _ended(recording)

    (found,) = _report(run)["stalls"]["snapshots"]
    by_rank = {}
    for p in found["processes"]:
        by_rank.setdefault((p["rank"], p["journal_role"]), p)
    writer, producer, rank0 = by_rank[(1, "fork_child")], by_rank[(1, "main")], by_rank[(0, "main")]
    assert writer["wait_kind"] == stalls.QUEUE_GET and "write" in writer["where"]
    assert writer["on"] == [{"pid": producer["pid"], "how": "fed by"}]
    assert writer["last_op"]["op"] == "get" and producer["last_op"]["puts"] == 2
    assert producer["wait_kind"] == stalls.CHILD and [o["pid"] for o in producer["on"]] == [writer["pid"]]
    assert sorted([writer["pid"], producer["pid"]]) in found["deadlocks"]
    assert rank0["named"] and (0, "fork_child") not in by_rank  # rank 0 saved: at the barrier, its writer gone


@pytest.mark.parametrize("writes, pause, setup", [("12", "0.4", "0"), ("3", "0.2", "5")],
                         ids=["slow-writes", "long-set-up"])
def test_a_slow_save_that_progresses_takes_no_snapshot(tmp_path, writes, pause, setup):
    """Nor does a set-up longer than --stall before the first save: no save had begun."""
    run = tmp_path / "run"
    done = run_writerprof("record", "-o", run, "--stall", STALL, "--", sys.executable,
                          _target("stall_slow_writer.py"), tmp_path / "ckpt", writes, pause, setup)
    assert "no save made progress" not in done.stderr
    assert not (layout.host_dir(run, host_name()) / layout.STALLS_FILE).exists()
    summary = _report(run)
    assert summary["stalls"] == {"stall_s": float(STALL), "snapshots": [], "losses": []}
    assert not [d for d in summary["diagnoses"] if d["code"] == "stall"]
