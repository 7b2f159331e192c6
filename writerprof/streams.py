"""writerprof's standard streams, however it was started.

A standard fd that was closed (`2>&-`) is held by /dev/null, close-on-exec:
no file writerprof opens can take its number (and be written to as if it
were the terminal), and every program writerprof starts — record's CMD
first — still finds it closed, as it would without writerprof.

What writerprof writes to a closed stream, or to a pipe whose reader has
gone (`| head -1`), is dropped: the command does the rest of its job (its
files, CMD's run) and exits with the status it would have, no traceback."""

from __future__ import annotations

import errno
import io
import os
import sys

STD_FDS = (0, 1, 2)


def hold_closed() -> None:
    """/dev/null, close-on-exec, at each closed standard fd; sys.stdin,
    stdout and stderr streams that never fail for want of a reader."""
    closed = [fd for fd in STD_FDS if not _is_open(fd)]
    if closed:
        null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)  # the lowest free fd: closed[0]
        for fd in closed:
            if fd != null:
                os.dup2(null, fd, inheritable=False)
        if null not in closed:
            os.close(null)
    if sys.stdin is None:  # (Python found fd 0 closed at its start)
        sys.stdin = open(os.devnull, encoding="utf-8")
    sys.stdout = _forgiving(sys.stdout, 1)
    sys.stderr = _forgiving(sys.stderr, 2)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError as exc:
        return exc.errno != errno.EBADF
    return True


def _forgiving(stream, fd: int):
    """A text stream like `stream` (None: one that was closed at start) on
    fd, whose writes are dropped once its reader has gone."""
    if stream is not None:
        stream.flush()
    sink = _Sink(fd, dropping=stream is None)
    unbuffered = isinstance(getattr(stream, "buffer", None), io.RawIOBase)  # (python -u, PYTHONUNBUFFERED)
    return io.TextIOWrapper(
        sink if unbuffered else io.BufferedWriter(sink),
        encoding=getattr(stream, "encoding", None) or "utf-8",
        errors=getattr(stream, "errors", None) or "backslashreplace", newline="\n",
        line_buffering=bool(getattr(stream, "line_buffering", False)),
        write_through=bool(getattr(stream, "write_through", False)))


class _Sink(io.RawIOBase):
    """fd's writes, until one finds the reader gone (EPIPE; writerprof ignores
    SIGPIPE, as Python does): from then on, and for a stream closed at start,
    each write is dropped as if it were written."""

    def __init__(self, fd: int, dropping: bool):
        super().__init__()
        self._fd, self.dropping = fd, dropping

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return not self.dropping and os.isatty(self._fd)

    def write(self, data) -> int | None:
        if not self.dropping:
            try:
                return os.write(self._fd, data)
            except BlockingIOError:  # a non-blocking fd that is full: the buffer keeps it, as FileIO's does
                return None
            except BrokenPipeError:
                self.dropping = True
        return len(data)
