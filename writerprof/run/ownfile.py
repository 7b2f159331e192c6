"""A run directory's own files, opened as a reader must whoever made the
directory: each is a regular file that writerprof wrote, so a symbolic link,
FIFO, device or socket in the place of one is refused (a FIFO would hang the
reader, /dev/zero never ends, a link reads what it points to, anywhere), and
a file that has no business being large is read only below a cap. Errors are
OSErrors whose strerror says what was found, for the callers' own lines.

And written as only its owner may read it: a new file 0600, never through a
link planted at its name (create, replace)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

# How the probe makes the run's files, and so how writerprof does: private, never through a link.
from writerprof.probes.writerprof_probe.journal import APPEND, NEW, PRIVATE_DIR, PRIVATE_FILE, make_dirs  # noqa: F401

# run.json, topology.json, stacks.json, agent.error, a part's run id: a few
# KiB to a few MiB (a stacks index of 10^5 segments). A larger one is no file
# writerprof wrote, and would be read whole into memory.
SMALL_LIMIT = 64 << 20


# NONBLOCK: the open of a FIFO waits for a writer, forever.
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket", stat.S_IFLNK: "a symbolic link"}


def not_regular(mode: int) -> str | None:
    """Why a file of that st_mode is not one a run holds, or None if it is."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return os.strerror(errno.EISDIR)
    return f"{_KINDS.get(stat.S_IFMT(mode), 'not a file')}, not a regular file"


def open_fd(path: str | Path) -> int:
    """A read-only fd of the regular file at path (FileNotFoundError if there is none)."""
    return _open_regular(path)[0]


def _open_regular(path: str | Path) -> tuple[int, os.stat_result]:
    """open_fd's fd and its fstat."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW's answer to a link
            raise OSError(errno.ELOOP, not_regular(stat.S_IFLNK), str(path)) from None
        raise
    status = os.fstat(fd)
    problem = not_regular(status.st_mode)
    if problem:
        os.close(fd)
        raise OSError(errno.EISDIR if problem == os.strerror(errno.EISDIR) else errno.EINVAL, problem, str(path))
    return fd, status


def open_file(path: str | Path):
    """open_fd's file as an unbuffered binary file object."""
    return open(open_fd(path), "rb", buffering=0)


def read(path: str | Path, limit: int | None = None) -> bytes:
    """The whole file; refused if it is larger than limit bytes. By os's own
    calls, sized by the fstat: a run's 12k-47k small files read in a third
    less time than through a file object (whose open costs), or than reads
    of a fixed large size (each a large allocation)."""
    fd, status = _open_regular(path)
    try:
        size = status.st_size
        if limit is not None and size > limit:
            raise OSError(errno.EFBIG, f"{size} bytes, more than the {limit >> 20} MiB such a file can have",
                          str(path))
        parts = [os.read(fd, size + 1)]  # a byte more: a file still being written may have grown
        while parts[-1]:
            parts.append(os.read(fd, 1 << 16))
        return parts[0] if len(parts) == 2 else b"".join(parts)
    finally:
        os.close(fd)


def create(path: str | Path, flags: int = APPEND) -> int:
    """An fd to write the run's file at path (APPEND: made if missing, appended
    to; NEW: made, a FileExistsError if something is there)."""
    return os.open(path, flags, PRIVATE_FILE)


def temporary_beside(path: str | Path) -> tuple[Path, int]:
    """A new file beside path, under a name no one can have planted a link
    at beforehand (made new all the same), and its fd: to be renamed over path."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{os.urandom(8).hex()}.tmp")
    return temporary, create(temporary, NEW)


def replace(path: str | Path, data: bytes) -> None:
    """path's content made data, whole: written to temporary_beside and renamed over it."""
    temporary, fd = temporary_beside(path)
    try:
        with open(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise
