"""The Python processes the probe was not in: the options that keep it out,
the sampler's exec record, and which unjournaled Pythons count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from writerprof.analysis.unprobed import keeping_out, not_probed
from writerprof.probes.writerprof_probe import format as journal
from writerprof.record import pythons
from writerprof.record.sampler import Sampler
from writerprof.record.system import HOST
from writerprof.run import directory, layout


@pytest.mark.parametrize("argv, options", [
    (["python3", "-I", "t.py"], "-I"),
    (["python3", "-sEu", "t.py"], "-E"),
    (["python3", "-IS", "t.py"], "-I -S"),
    (["python3", "-S", "-E", "-m", "mod"], "-E -S"),
    (["python3", "-W", "ignore", "-S", "t.py"], "-S"),
    (["python3", "-WI", "t.py"], ""),  # -W's value, not -I
    (["python3", "-X", "dev", "-E", "t.py"], "-E"),
    (["python3", "--check-hash-based-pycs", "always", "-I", "t.py"], "-I"),
    (["python3", "-cI"], ""),  # -c's command
    (["python3", "-c", "-I"], ""),
    (["python3", "-m", "pip", "-E"], ""),  # the module's own arguments
    (["python3", "t.py", "-I"], ""),  # the script's
    (["python3", "-", "-S"], ""),
    (["python3"], ""),
])
def test_the_options_that_keep_the_probe_out(argv, options):
    assert keeping_out(argv) == options


PROCESS = np.dtype([("host", object), ("pid", np.int64), ("created_ns", np.int64)])
PYTHON = "/usr/bin/python3.11"


def run_of(sampled, journaled):
    return SimpleNamespace(sampled=[{"host": "h", **r} for r in sampled],
                           processes=np.array([("h", pid, created) for pid, created in journaled], dtype=PROCESS))


def seen(pid, ppid, created_ns, cmdline, exe=PYTHON, has_probe=True):
    record = {"kind": "seen", "t_ns": created_ns, "pid": pid, "ppid": ppid, "created_ns": created_ns,
              "cmdline": cmdline, "exe": exe}
    if pythons.is_python(exe):
        record["pythonpath_has_probe"] = has_probe
    return record


def test_a_probed_pythons_fork_on_its_way_to_exec_does_not_count():
    run = run_of([seen(10, 1, 1_000_000_000, ["python3", "b.py"]),
                  seen(11, 10, 2_000_000_000, ["python3", "b.py"])],  # seen before its exec, gone before the next tick
                 journaled=[(10, 1_010_000_000)])
    assert not_probed(run) == []


def test_a_fork_that_execs_an_isolated_python_counts_with_its_option():
    run = run_of([seen(10, 1, 1_000_000_000, ["python3", "b.py"]),
                  seen(11, 10, 2_000_000_000, ["python3", "b.py"]),
                  {"kind": "exec", "t_ns": 2_100_000_000, "pid": 11, "cmdline": ["python3", "-I", "c.py"],
                   "exe": PYTHON, "pythonpath_has_probe": True}],
                 journaled=[(10, 1_010_000_000)])
    assert not_probed(run) == [{"why": "options", "options": "-I", "processes": 1, "host": "h", "pid": 11,
                                "cmdline": ["python3", "-I", "c.py"]}]


def test_a_shell_that_execs_python_without_the_probe_counts_and_one_that_execs_another_program_not():
    run = run_of([seen(20, 1, 1_000_000_000, ["sh", "-c", "..."], exe="/bin/dash"),
                  {"kind": "exec", "t_ns": 1_100_000_000, "pid": 20, "cmdline": ["python3", "t.py"], "exe": PYTHON,
                   "pythonpath_has_probe": False},
                  seen(21, 1, 1_000_000_000, ["python3", "u.py"], has_probe=None),
                  {"kind": "exec", "t_ns": 1_100_000_000, "pid": 21, "cmdline": ["ls"], "exe": "/bin/ls"}],
                 journaled=[])
    assert not_probed(run) == [{"why": "pythonpath", "processes": 1, "host": "h", "pid": 20, "cmdline": ["python3", "t.py"]}]


def test_a_reused_pid_is_told_apart_by_its_start():
    run = run_of([seen(30, 1, 1_000_000_000, ["python3", "a.py"]),
                  seen(30, 1, 5_000_000_000, ["python3", "b.py"], has_probe=None)],
                 journaled=[(30, 1_010_000_000)])  # the first one's journal, not the second's
    assert not_probed(run) == [{"why": "unknown", "processes": 1, "host": "h", "pid": 30, "cmdline": ["python3", "b.py"]}]


def test_the_sampler_records_a_python_exec_and_whether_the_probe_is_on_its_pythonpath(tmp_path):
    run_dir = directory.create(tmp_path / "run", [sys.executable], interval_ns=20_000_000, sampler=True, probes=[],
                               env={})
    host_dir = layout.host_dir(run_dir, journal.host_name())
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(["/elsewhere", pythons.PROBE_DIR]))
    # A shell that waits, then becomes Python: seen as the shell, then its exec.
    child = subprocess.Popen(["sh", "-c", f'sleep 0.3; exec {sys.executable} -I -c "import time; time.sleep(0.3)"'],
                             env=env)
    sampler = Sampler(child.pid, host_dir, 0.02)
    try:
        sampler.start()
        child.wait(timeout=60)
    finally:
        sampler.stop()
    records = [json.loads(line) for line in (host_dir / layout.SAMPLED_FILE).read_text().splitlines()]
    (first,) = [r for r in records if r["kind"] == "seen" and r["pid"] == child.pid]
    assert "pythonpath_has_probe" not in first  # a shell
    (became,) = [r for r in records if r["kind"] == "exec" and r["pid"] == child.pid]
    assert became["cmdline"][1:3] == ["-I", "-c"] and pythons.is_python(became["exe"])
    assert became["pythonpath_has_probe"] is True


def test_only_pythonpath_of_the_environment_is_looked_at():
    for pythonpath, has in (("/x", False), (f"/x{os.pathsep}{pythons.PROBE_DIR}", True), (None, False)):
        env = {"SECRET": pythons.PROBE_DIR, **({"PYTHONPATH": pythonpath} if pythonpath else {})}
        child = subprocess.Popen([sys.executable, "-c", "import sys; print(flush=True); sys.stdin.read()"], env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            child.stdout.readline()  # exec'd: /proc/PID/environ is the new program's
            assert pythons.probe_on_pythonpath(HOST, child.pid) is has
        finally:
            child.communicate()
