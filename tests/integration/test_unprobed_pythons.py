"""A CMD whose Python processes the probe cannot reach (its own PYTHONPATH,
-I, -E, -S): record's summary and the report count them, say why and what
to do, instead of "0 probed" and "no probed Python process lived long
enough"."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from helpers import run_writerprof

# Alive for a few of the sampler's ticks (the sampler sees what is alive at a tick).
SLEEPS = "import time; time.sleep(0.5)"
PY = shlex.quote(sys.executable)

CASES = {
    "env PYTHONPATH": (["env", "PYTHONPATH=/elsewhere", sys.executable, "-c", SLEEPS],
                       {"why": "pythonpath"}, "the PYTHONPATH it started with lacks record's probe directory"),
    "a shell's exec": (["sh", "-c", f"PYTHONPATH=/elsewhere exec {PY} -c {shlex.quote(SLEEPS)}"],
                       {"why": "pythonpath"}, "PYTHONPATH=/your/dir:$PYTHONPATH"),
    "-I": ([sys.executable, "-I", "-c", SLEEPS], {"why": "options", "options": "-I"},
           "a Python started with -I ignores PYTHONPATH"),
    "-E": ([sys.executable, "-E", "-c", SLEEPS], {"why": "options", "options": "-E"}, "drop -E to probe it"),
    "-S": ([sys.executable, "-S", "-c", SLEEPS], {"why": "options", "options": "-S"},
           "a Python started with -S runs no sitecustomize"),
}


@pytest.mark.parametrize("case", CASES)
def test_python_processes_out_of_the_probes_reach_are_counted_with_why_and_the_fix(tmp_path, case):
    command, why, says = CASES[case]
    run = tmp_path / "run"
    done = run_writerprof("record", "-o", run, "--", *command)
    assert "processes        0 probed, 1 sampled, 1 Python process not probed" in done.stderr
    assert "1 Python process not probed (pid " in done.stderr and says in done.stderr
    assert "stacks           none: no Python process was probed" in done.stderr
    assert "lived long enough" not in done.stderr
    (entry,) = json.loads(run_writerprof("report", run, "--json").stdout)["run"]["not_probed"]
    assert {k: entry[k] for k in why} == why and entry["processes"] == 1
    text = run_writerprof("report", run).stdout
    assert "  note      1 Python process not probed" in text and says.split()[-1] in text


def test_a_probed_python_that_starts_programs_and_an_isolated_python_has_that_one_counted(tmp_path):
    # 200 short programs, sampled every millisecond: many a fork is seen before its exec, as the parent's Python.
    script = ("import subprocess, sys\n"
              "for _ in range(200):\n"
              "    subprocess.run(['true'])\n"
              f"subprocess.run([sys.executable, '-I', '-c', {SLEEPS!r}])\n")
    run = tmp_path / "run"
    done = run_writerprof("record", "--interval", "1ms", "-o", run, "--", sys.executable, "-c", script)
    assert "processes        1 probed," in done.stderr and ", 1 Python process not probed" in done.stderr, done.stderr
    (entry,) = json.loads(run_writerprof("report", run, "--json").stdout)["run"]["not_probed"]
    assert entry["options"] == "-I" and entry["processes"] == 1


def test_a_probed_python_has_nothing_to_say(tmp_path):
    run = tmp_path / "run"
    done = run_writerprof("record", "-o", run, "--", sys.executable, "-c", SLEEPS)
    assert "processes        1 probed, 1 sampled\n" in done.stderr and "not probed" not in done.stderr
    assert json.loads(run_writerprof("report", run, "--json").stdout)["run"]["not_probed"] == []
