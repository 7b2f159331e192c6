"""numpy's BLAS (the wheels' OpenBLAS) at one thread for writerprof's own
use: its pool, a thread a CPU, spins as it starts (0.05 CPU s of numpy's
0.13 s import on a 2-CPU machine), for commands that multiply no matrices."""

from __future__ import annotations

import contextlib
import os

THREADS_ENV = "OPENBLAS_NUM_THREADS"


@contextlib.contextmanager
def one_thread():
    """numpy, if first imported inside the block, gets one BLAS thread (read
    when the library loads). Set for the block only, and only where the user
    has not set it: what starts later (record's CMD, contrast's runs) gets
    the environment as it was."""
    ours = THREADS_ENV not in os.environ
    if ours:
        os.environ[THREADS_ENV] = "1"
    try:
        yield
    finally:
        if ours:
            os.environ.pop(THREADS_ENV, None)
