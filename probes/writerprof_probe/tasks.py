"""This process's threads as the kernel lists them (/proc/self/task), not
only Python's: a C library's pool (OpenBLAS, a Tokio runtime) runs threads
that threading.enumerate() never lists, and a lock one of them holds at a
fork stays locked in the child. Taken at each fork (lifecycle) and at each
Process.start() that does not fork here (mp): the threads a fork would carry.

Each thread's name is its comm; a thread no one named carries its process's
(the census says which that is). The probe's own sampling thread is left
out: it is stopped at a fork, and is no thread of the target's."""

import os
import sys

from . import format
# os's own (the target's calls to them may be hooked); the fds are closed at once
from .journal import _close, _open

_read = os.read
_listdir = os.listdir
LISTED = 32  # names journaled at most, of each list
_COMM_BYTES = 64  # a comm is at most 15 bytes and a newline


def census():
    """The fork event's fields: native_threads (the kernel's count of the
    process's threads), python_threads and threads (Python's, by name),
    forking_thread, native_only (the names of the threads no Python Thread
    runs on), comm (the process's own name). Never raises: what it could not
    read is left out."""
    fields = {}
    try:
        threading = sys.modules.get("threading")  # only a process that imported it has Python threads
        python = threading.enumerate() if threading else []
        names = [t.name for t in python] if threading else ["MainThread"]
        fields.update(python_threads=len(names), threads=names[:LISTED],
                      forking_thread=threading.current_thread().name if threading else "MainThread")
        ours = {t.native_id for t in python} if threading else {os.getpid()}
        comm = _comm("/proc/self/comm")
        native, count = [], 0
        for tid in _listdir("/proc/self/task"):
            if int(tid) in ours:
                count += 1
                continue
            name = _comm("/proc/self/task/%s/comm" % tid)
            if name is None or name == format.STACKS_THREAD:  # gone meanwhile, or the probe's
                continue
            count += 1
            native.append(name)
        fields.update(native_threads=count, native_only=native[:LISTED])
        if comm is not None:
            fields["comm"] = comm
    except Exception:
        pass
    return fields


def _comm(path):
    """A comm file's name; None if it could not be read (its thread ended)."""
    try:
        fd = _open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return _read(fd, _COMM_BYTES).decode("utf-8", "replace").rstrip("\n")
    except OSError:
        return None
    finally:
        _close(fd)
