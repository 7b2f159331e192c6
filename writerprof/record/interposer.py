"""The I/O interposer (probes/interposer/), built with the package
beside the probe: where it is, and CMD's LD_PRELOAD with it."""

from __future__ import annotations

import os

from writerprof.probes.writerprof_probe import iofile

LIBRARY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(iofile.__file__))), iofile.LIBRARY)


def available() -> bool:
    return os.path.isfile(LIBRARY)


def preload(environ: dict) -> str | None:
    """CMD's LD_PRELOAD: the interposer first, then what the user preloads;
    None where the interposer was not built (file I/O is then timed by the
    probe's os hooks, in Python processes only)."""
    if not available():
        return None
    theirs = [p for p in environ.get("LD_PRELOAD", "").replace(":", " ").split() if p != LIBRARY]
    return " ".join([LIBRARY] + theirs)
