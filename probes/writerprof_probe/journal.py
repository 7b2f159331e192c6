"""This process's journal: rare events written as they happen, chunk records
buffered and appended in batches, so that nothing blocks on I/O per chunk
and a SIGKILL loses at most one batch."""

import _thread
import json
import os
import time

from . import format

# The target's own calls to these may be hooked; the journal uses the originals.
_open, _write, _close, _fstat = os.open, os.write, os.close, os.fstat


class Journal:
    def __init__(self, run, host):
        self.run, self.host = run, host
        self.fds = {}  # suffix -> (fd, inode), reopened if the target closed ours
        self.records = []
        self.last_flush = time.monotonic_ns()
        self._flushing = _thread.allocate_lock()
        self.base = None

    def open(self, pid, created_ns):
        """Start this process's files (at start, and in a child after fork)."""
        directory = format.procs_dir(self.run, self.host)
        os.makedirs(directory, exist_ok=True)
        self.base = os.path.join(directory, "%d-%d" % (pid, created_ns))
        for fd, _ in self.fds.values():  # inherited from the parent across fork
            try:
                _close(fd)
            except OSError:
                pass
        self.fds = {}
        self.records = []
        self._flushing = _thread.allocate_lock()
        for suffix in (format.EVENTS_SUFFIX, format.CHUNKS_SUFFIX):
            self._fd(suffix)

    def _fd(self, suffix):
        entry = self.fds.get(suffix)
        if entry is not None:
            try:
                if _fstat(entry[0]).st_ino == entry[1]:
                    return entry[0]
            except OSError:
                pass
        # Ours was closed (or its number now belongs to someone else): reopen.
        fd = _open(self.base + suffix, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)
        self.fds[suffix] = (fd, _fstat(fd).st_ino)
        return fd

    def event(self, kind, **fields):
        fields["kind"] = kind
        fields.setdefault("t_ns", time.monotonic_ns())
        self._append(format.EVENTS_SUFFIX, (json.dumps(fields, default=str) + "\n").encode())

    def record(self, fields):
        """Queue one CHUNK record (a tuple in CHUNK_FIELDS order)."""
        records = self.records
        records.append(fields)
        if len(records) >= format.FLUSH_RECORDS or fields[7] - self.last_flush > format.FLUSH_NS:
            self.flush()

    def flush(self):
        if not self._flushing.acquire(False):
            return  # another thread is at it
        try:
            records = self.records
            count = len(records)  # appends from other threads go after count: kept
            if count:
                data = b"".join([format.CHUNK.pack(*r) for r in records[:count]])
                del records[:count]
                self._append(format.CHUNKS_SUFFIX, data)
            self.last_flush = time.monotonic_ns()
        finally:
            self._flushing.release()

    def _append(self, suffix, data):
        view = memoryview(data)
        fd = self._fd(suffix)
        while view:
            view = view[_write(fd, view):]
