"""The Python interpreters among CMD's processes, and whether the probe's
bootstrap could reach each: record puts PROBE_DIR (its sitecustomize) first
on CMD's PYTHONPATH, and a CMD that sets its own PYTHONPATH drops it.

Of a process's environment only that is looked at, never kept: whether the
PYTHONPATH it started with names PROBE_DIR (the secrets rule: no environment
value is recorded but the allow-listed ones)."""

from __future__ import annotations

import os

import writerprof.probes
from writerprof.record.system import System

PROBE_DIR = os.path.dirname(os.path.abspath(writerprof.probes.__file__))
_PYTHONPATH = "PYTHONPATH="


def is_python(exe: str | None) -> bool:
    """Whether a process's executable (/proc/PID/exe) is a Python interpreter's."""
    return exe is not None and os.path.basename(exe).startswith(("python", "pypy"))


def probe_on_pythonpath(system: System, pid: int) -> bool | None:
    """Whether the PYTHONPATH process pid started with holds PROBE_DIR; None
    where its environment cannot be read (another user's process, or gone)."""
    environ = system.read(f"/proc/{pid}/environ")
    if environ is None:
        return None
    for entry in environ.split("\0"):
        if entry.startswith(_PYTHONPATH):
            return PROBE_DIR in entry[len(_PYTHONPATH):].split(os.pathsep)
    return False
