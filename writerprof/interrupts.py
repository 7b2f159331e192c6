"""SIGINT and SIGTERM end a job cleanly: cleanup runs, the exit status is 128+N.

The handler raises Interrupted and also remembers the signal, because an
exception raised while a destructor or an at-fork callback runs (logging's,
as a writer is forked) is swallowed by CPython: long loops call check() so
that such a signal still ends the job, and the swallowed Interrupted is not
printed (CPython's "Exception ignored in" and its traceback, for a job that
then ends as it should).
"""

from __future__ import annotations

import signal
import sys
from contextlib import contextmanager

from writerprof.errors import Interrupted

_received: list[int] = []
_deferring = [0]  # how many deferred() blocks are open


def _handler(signum, frame):
    _received.append(signum)
    if not _deferring[0]:
        raise Interrupted(signum)


@contextmanager
def deferred():
    """A signal received in the block raises when the block ends: for a step
    that makes something and hands it to the cleanup (a shared-memory
    segment, then its place in the save's list), which a signal between the
    two would leak."""
    _deferring[0] += 1
    try:
        yield
    finally:
        _deferring[0] -= 1
    check()


def install() -> None:
    """From the main thread, before the job starts. Not for a signal the
    command came with ignored (nohup): it stays ignored, for the command
    and for what it starts."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, _handler)
    if not isinstance(sys.unraisablehook, _Quiet):
        sys.unraisablehook = _Quiet(sys.unraisablehook)


class _Quiet:
    """sys.unraisablehook: a swallowed Interrupted is remembered already
    (check() raises it again); anything else goes to the hook before."""

    def __init__(self, before):
        self.before = before

    def __call__(self, unraisable) -> None:
        if not isinstance(unraisable.exc_value, Interrupted):
            self.before(unraisable)


def check() -> None:
    if _received:
        raise Interrupted(_received[0])
