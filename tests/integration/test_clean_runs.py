"""No false alarms: clean, well-placed runs of the shapes real checkpoint
code has, each recorded twice: no warning in either report, and a compare of
the two names no cause. Fork (the built-in reproducer), a forkserver writer
with its module preloaded and a light entry script, a process pool's
workers, and a rank that writes its own files. A compare that names a cause
is made again of the second run and a third: a cause is the runs', not the
machine's, where it is in both pairs."""

from __future__ import annotations

import json
import sys

import pytest

from helpers import TARGETS, run_writerprof, writerprof_command

CLEAN = {
    "fork": ["writerprof", "repro", "--saves", "3", "--size", "64MiB", "--start-method", "fork", "--mpi", "off"],
    # (Saves of 256 MiB: its writers start in ~0.01 s, a share of a save only a tiny one would notice.)
    "forkserver-preloaded": [sys.executable, "-m", "preloaded", "{out}", "3", "64"],
    # (Files of 64 MiB, 6 a run: the spread of a run's saves, which a compare of one run a side takes as
    # the run-to-run spread, is then read off enough saves that are not all page-cache noise.)
    "pool": [sys.executable, f"{TARGETS}/any_writer.py", "pool", "{out}", "--files", "6", "--size", str(64 << 20),
             "--method", "forkserver"],
    "in-rank": [sys.executable, f"{TARGETS}/any_writer.py", "self", "{out}", "--files", "6", "--size", str(64 << 20)],
}


@pytest.mark.parametrize("shape", CLEAN)
def test_a_clean_run_warns_of_nothing(tmp_path, shape):
    runs = [_recorded_without_warnings(tmp_path, shape, n) for n in (1, 2)]
    comparison = _compared(*runs)
    if comparison["causes"] or comparison["fix"]:
        # One run a side cannot tell a cause from what this shared VM did between the two
        # (its page cache's pages handed back late, another test's burst): a cause the
        # runs really had is in the next pair too.
        comparison = _compared(runs[1], _recorded_without_warnings(tmp_path, shape, 3))
    assert comparison["causes"] == [] and comparison["fix"] == [], f"{shape}: {comparison['verdict']}"


def _recorded_without_warnings(tmp_path, shape: str, n: int):
    out = tmp_path / f"out{n}"
    out.mkdir()
    command = [part.format(out=out) for part in CLEAN[shape]]
    if command[0] == "writerprof":
        command = writerprof_command() + command[1:]
    run = tmp_path / f"run{n}"
    run_writerprof("record", "-o", run, "--", *command, cwd=TARGETS)
    report = json.loads(run_writerprof("report", "--json", run).stdout)
    assert report["throughput"]["saves"] >= 3, report["throughput"]
    warnings = [f"{d['code']}: {d['message']}" for d in report["diagnoses"] if d["severity"] == "warning"]
    assert warnings == [], warnings
    return run


def _compared(a, b) -> dict:
    return json.loads(run_writerprof("compare", "--json", a, b).stdout)
