"""SIGINT and SIGTERM end a job cleanly: cleanup runs, the exit status is 128+N.

The handler raises Interrupted and also remembers the signal, because an
exception raised while a destructor runs is swallowed by CPython: long loops
call check() so that such a signal still ends the job.
"""

from __future__ import annotations

import signal

from writerprof.errors import Interrupted

_received: list[int] = []


def _handler(signum, frame):
    _received.append(signum)
    raise Interrupted(signum)


def install() -> None:
    """From the main thread, before the job starts."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _handler)


def check() -> None:
    if _received:
        raise Interrupted(_received[0])
