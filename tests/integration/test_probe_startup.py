"""What the probe does at an interpreter's start-up: only what every process
needs. A process that never imports multiprocessing loads none of the
multiprocessing, shared-memory or agent hooks, and no standard-library module
beyond atexit; the hooks come up when multiprocessing is first imported. The
probe's modules load straight from their bytecode where it is current, and
through the import system where it is not. Under every CPython that pyenv
has, from 3.9 up."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from test_probe_journal import INTERPRETERS, PROBE_DIR, journals, kinds

SHOW_MODULES = "import sys; print(' '.join(sorted(sys.modules)))"
LAZY = {"writerprof_probe.mp", "writerprof_probe.mitigate", "writerprof_probe.shm",
        "writerprof_probe.numa", "writerprof_probe.agent"}


def _warm_up(python, tmp_path):
    """One probed process first: under PYTHONDONTWRITEBYTECODE the first one
    also writes the probe's bytecode (bytecode.py), and imports what that needs."""
    run = tmp_path / "warm-up"
    run.mkdir()
    subprocess.run([python, "-c", "import multiprocessing"], env=_env(run), check=True, timeout=60)


def _modules(python, script, env):
    done = subprocess.run([python, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "writerprof" not in done.stderr, done.stderr
    return set(done.stdout.split())


def _env(run=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRITERPROF_") and k != "PYTHONPATH"}
    if run is not None:
        env.update(PYTHONPATH=PROBE_DIR, **({"WRITERPROF_RUN": str(run)} if run else {}))
    return env


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_start_up_loads_only_what_every_process_needs(tmp_path, python):
    python = INTERPRETERS[python]
    run = tmp_path / "run"
    run.mkdir()
    _warm_up(python, tmp_path)
    bare = _modules(python, SHOW_MODULES, _env())
    probed = _modules(python, SHOW_MODULES, _env(run))
    added = probed - bare
    assert "writerprof_probe" in added and not added & LAZY
    # (json's C escaper only for a string that needs it: none in this environment's allowed variables)
    assert {m for m in added if not m.startswith("writerprof_probe")} <= {"sitecustomize", "atexit"}
    (events, _), = journals(run).values()
    assert events[0]["kind"] == "process" and kinds(events, "activated") and kinds(events, "exit")
    assert {e["spec"] for e in kinds(events, "hook")} >= {"os:write=write", "os:fsync=fsync"}
    assert not [e for e in kinds(events, "hook") if e["spec"].startswith("multiprocessing")]


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_multiprocessing_hooks_come_up_with_multiprocessing(tmp_path, python):
    run = tmp_path / "run"
    run.mkdir()
    script = "import multiprocessing.shared_memory; " + SHOW_MODULES
    loaded = _modules(INTERPRETERS[python], script, _env(run))
    assert {"writerprof_probe.mp", "writerprof_probe.shm"} <= loaded
    (events, _), = journals(run).values()
    applied = {e["spec"] for e in kinds(events, "hook") if e["status"] == "applied"}
    assert {"multiprocessing.process", "multiprocessing.shared_memory"} <= applied
    assert not [e for e in kinds(events, "hook") if e["status"] == "failed"]


def test_the_shared_memory_and_what_if_hooks_wait_for_their_use(tmp_path):
    python = INTERPRETERS["current"]
    run = tmp_path / "run"
    run.mkdir()
    loaded = _modules(python, "import multiprocessing; " + SHOW_MODULES, _env(run))
    assert "writerprof_probe.mp" in loaded
    assert not loaded & {"writerprof_probe.shm", "writerprof_probe.numa", "writerprof_probe.mitigate"}
    asked = dict(_env(run), WRITERPROF_MITIGATE="pin")
    assert "writerprof_probe.mitigate" in _modules(python, "import multiprocessing; " + SHOW_MODULES, asked)


def test_inert_probe_loads_nothing_of_its_own(tmp_path):
    python = INTERPRETERS["current"]
    added = _modules(python, SHOW_MODULES, _env("")) - _modules(python, SHOW_MODULES, _env())
    assert added <= {"sitecustomize"}


CHILD_FROM_SYS_PATH = """
import os, subprocess, sys
print(sys.path[-1])
env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
"""


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_the_probe_is_last_on_sys_path_and_still_reaches_a_child(tmp_path, python):
    # Last: the target's imports look in their own places first, not in the probe's directory.
    run = tmp_path / "run"
    run.mkdir()
    done = subprocess.run([INTERPRETERS[python], "-c", CHILD_FROM_SYS_PATH], env=_env(run),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert os.path.samefile(done.stdout.strip(), PROBE_DIR)
    # A child given a PYTHONPATH made of the parent's sys.path (as some launchers make it) is probed too.
    assert len(journals(run)) == 2


def test_identity_line_is_json_the_loader_reads(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    env = dict(_env(run), SLURM_JOB_NAME="caf\udce9 \"job\"")
    subprocess.run([INTERPRETERS["current"], "-c", "pass", "arg\nwith newline"], env=env, check=True,
                   timeout=60)
    (events_file,) = run.glob("hosts/*/procs/*.events.jsonl")
    first = json.loads(events_file.read_text().splitlines()[0])
    assert first["argv"][-1] == "arg\nwith newline"
    assert first["env"]["SLURM_JOB_NAME"] == "caf\udce9 \"job\""


def _probe_copy(tmp_path, **env):
    """A copy of the probe with no bytecode, and the environment of a process it probes."""
    probes = tmp_path / "probes"
    shutil.copytree(PROBE_DIR, probes, ignore=shutil.ignore_patterns("__pycache__"))
    run = tmp_path / "run"
    run.mkdir()
    env = {**_env(run), "PYTHONPATH": str(probes), **env}
    return probes, {k: v for k, v in env.items() if v is not None}


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_bytecode_is_written_once_under_dont_write_bytecode(tmp_path, python):
    # The first probed process writes the probe's bytecode for its
    # interpreter; a second one finds it fresh and writes nothing.
    probes, env = _probe_copy(tmp_path, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run([INTERPRETERS[python], "-c", "pass"], env=env, check=True, timeout=60)
    written = {p: p.stat().st_mtime_ns for p in probes.rglob("*.pyc")}
    sources = list(probes.glob("*.py")) + list(probes.glob("writerprof_probe/*.py"))
    assert len(written) == len(sources) - 1  # every source but probes/__init__.py, not the probe's
    subprocess.run([INTERPRETERS[python], "-c", "pass"], env=env, check=True, timeout=60)
    assert {p: p.stat().st_mtime_ns for p in probes.rglob("*.pyc")} == written
    # Inert, the probe writes nothing.
    shutil.rmtree(probes / "__pycache__")
    subprocess.run([INTERPRETERS[python], "-c", "pass"], env=dict(env, WRITERPROF_RUN=""), check=True,
                   timeout=60)
    assert not (probes / "__pycache__").exists()


LOADERS = ("import sys; print(' '.join('%s=%s' % (n, type(m.__loader__).__name__) for n, m in sorted(sys.modules.items())"
           " if n.startswith('writerprof_probe')))")


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_the_probe_loads_from_its_bytecode_only_where_it_is_current(tmp_path, python):
    probes, env = _probe_copy(tmp_path, PYTHONDONTWRITEBYTECODE=None)

    def loaders():
        return dict(pair.split("=") for pair in _modules(INTERPRETERS[python], LOADERS, env))

    first = loaders()  # no bytecode yet: the import system loads and writes it
    assert first and set(first.values()) == {"SourceFileLoader"}
    assert set(loaders().values()) == {"Loader"}  # the probe's own, from what the first wrote
    # A source changed after its bytecode (a later mtime, another size): never its old code.
    identity = probes / "writerprof_probe" / "identity.py"
    identity.write_text(identity.read_text() + "\nCHANGED = True\n")
    os.utime(identity, (identity.stat().st_atime + 5, identity.stat().st_mtime + 5))
    script = "import writerprof_probe.identity as i; print(i.CHANGED, type(i.__loader__).__name__)"
    assert _modules(INTERPRETERS[python], script, env) == {"True", "SourceFileLoader"}
    assert _modules(INTERPRETERS[python], script, env) == {"True", "Loader"}  # rewritten by the one before
