"""Running the installed `writerprof` as a user would, in real subprocesses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys


def writerprof_command() -> list[str]:
    """The console script of the interpreter running the tests."""
    script = os.path.join(os.path.dirname(sys.executable), "writerprof")
    return [script] if os.path.exists(script) else [shutil.which("writerprof") or "writerprof"]


def run_writerprof(*args, timeout=240, check=True, cwd=None, env=None) -> subprocess.CompletedProcess:
    done = subprocess.run(
        writerprof_command() + [str(a) for a in args],
        capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"writerprof {' '.join(map(str, args))} exited {done.returncode}:\n"
                             f"{done.stderr}")
    return done


def repro_records(*args, **kwargs) -> tuple[list[dict], dict]:
    """Run `writerprof repro --json ARGS`; return the per-save records and the summary."""
    done = run_writerprof("repro", "--json", *args, **kwargs)
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    saves = [r for r in records if r["record"] == "save"]
    (summary,) = [r for r in records if r["record"] == "summary"]
    return saves, summary


def attached_placements(run, pid: int, when: str) -> tuple[set, list[dict]]:
    """The indices of the buffers process `pid` attached by name, and their
    placement records taken `when` ("attach" or "end"). A fork child also
    holds its parent's mappings, journaled as inherited: those are left out."""
    attached = {e["data"]["index"] for e in run.buffer_events("shm")
                if e["pid"] == pid and e["data"]["op"] == "attach"}
    placements = [e["data"] for e in run.buffer_events("placement") if e["pid"] == pid
                  and e["data"]["when"] == when and e["data"]["index"] in attached]
    return attached, placements


TARGETS = os.path.join(os.path.dirname(__file__), "targets")


def filled_up_env(directory, leave=256 << 10) -> dict:
    """The environment of a repro run with `--main-imports fill_up`: a save that
    fits at repro's free-space check, then runs out of room (targets/fill_up.py)."""
    return dict(os.environ, FILL_UP_DIR=str(directory), FILL_UP_LEAVE=str(leave),
                PYTHONPATH=os.pathsep.join(filter(None, [TARGETS, os.environ.get("PYTHONPATH")])))


def mount_tmpfs(place, options: str):
    """A tmpfs mounted at place (made here) with mount's -o options; the test
    skips, saying why, where mounting is not allowed."""
    import pytest

    place.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(place)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    return place


def two_cpus() -> str:
    """The first two CPUs this process may run on, as a CPU list (the test skips without two)."""
    import pytest

    from writerprof.units import format_cpu_list

    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two allowed CPUs")
    return format_cpu_list(allowed[:2])
