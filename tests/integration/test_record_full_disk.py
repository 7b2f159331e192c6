"""`writerprof record` when its run directory fills up or vanishes: CMD's
exit status, CMD's output whole, record without a traceback, a run.json that
says what is missing, and a run that `report` reads once there is room again.

The reproducer's own files go to a normal directory; only the run directory
is on a tiny tmpfs (skipped where mount is not allowed)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest

from writerprof.run import directory, layout, load

from helpers import run_writerprof, writerprof_command

REPRO = ["repro", "--json", "--saves", "2", "--size", "64MiB", "--keep", "--seed", "3"]
ROOM = 48 * 1024  # what the run directory gets: its first files, not the journals nor the samples


def _fill(mountpoint, leave: int) -> None:
    free = os.statvfs(mountpoint)
    (mountpoint / "filler").write_bytes(b"\0" * max(0, free.f_bavail * free.f_frsize - leave))


def _saves(stdout: str) -> list[tuple]:
    records = [json.loads(line) for line in stdout.splitlines()]
    return [(r["bytes"], r["start_method"]) for r in records if r["record"] == "save"]


def _digests(out) -> list[str]:
    return sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir())


@pytest.mark.parametrize("stacks", [False, True], ids=["no-stacks", "stacks"])
@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_a_full_run_directory_fails_neither_cmd_nor_record(tiny_filesystem, tmp_path, method, stacks):
    _fill(tiny_filesystem, ROOM)
    run_dir = tiny_filesystem / "run"
    out = tmp_path / "out"
    out.mkdir()
    argv = writerprof_command() + ["record", *(["--no-stacks"] * (not stacks)), "-o", str(run_dir), "--",
                                   *writerprof_command(), *REPRO, "--start-method", method, "--dir", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr  # CMD's status
    assert "Traceback" not in done.stderr
    assert _saves(done.stdout) == [(64 << 20, method)] * 2  # the target's output is whole
    files = sorted(out.iterdir())
    assert len(files) == 2 and all(f.stat().st_size == 64 << 20 for f in files)
    meta = json.loads((run_dir / layout.RUN_FILE).read_bytes())
    assert meta["exit_status"] == 0 and meta["ended_by"] == "exit"
    # The disk did fill, and what it cost is said: record's own files in run.json's
    # "incomplete" and the summary, the journals cut short among the summary's losses.
    assert all("No space left on device" in why for why in meta["incomplete"]), meta["incomplete"]
    summary = done.stderr[done.stderr.index(f"writerprof record: {run_dir}\n"):]
    assert len(meta["incomplete"]) == summary.count("recording incomplete:")
    assert "  recording problems " in summary and "recording problems none" not in summary
    os.remove(tiny_filesystem / "filler")  # room again: report reads what was kept
    report = run_writerprof("report", run_dir, check=False)
    assert report.returncode == 0 or len(report.stderr.strip().splitlines()) == 1, report.stderr
    assert "Traceback" not in report.stderr


def test_run_json_is_finished_on_a_disk_with_no_room_left(tiny_filesystem):
    """No new file fits: run.json is rewritten in the blocks it already has."""
    run_dir = directory.create(tiny_filesystem / "run", ["python", "bench.py"], interval_ns=50_000_000,
                               sampler=True, probes=[], env={})
    _fill(tiny_filesystem, 0)
    with pytest.raises(OSError):
        (tiny_filesystem / "more").write_bytes(b"\0" * 65536)  # full indeed
    directory.finish(run_dir, exit_status=3, ended_by="exit", signal=None, incomplete=["a reason"])
    run = load(run_dir)
    assert run.complete and run.meta["exit_status"] == 3 and run.meta["incomplete"] == ["a reason"]
    assert run.meta["command"] == ["python", "bench.py"]
    assert sorted(p.name for p in run_dir.iterdir()) == [layout.HOSTS_DIR, layout.RUN_FILE]


VANISHES = """
import os, shutil, time
time.sleep(0.3)
shutil.rmtree(os.environ["WRITERPROF_RUN"])
time.sleep(0.3)
print("still here", flush=True)
"""


def test_a_run_directory_removed_under_record(tmp_path):
    done = subprocess.run(writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--", sys.executable,
                                                  "-c", VANISHES], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "still here\n" and "Traceback" not in done.stderr
    said = [line for line in done.stderr.splitlines() if "run.json not finished" in line]
    assert len(said) == 1 and "no such run directory" in said[0]
    assert "cannot read the recording" in done.stderr
