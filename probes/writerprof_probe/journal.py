"""This process's journal: rare events written as they happen, chunk records
buffered and appended in batches, so that nothing blocks on I/O per chunk
and a SIGKILL loses at most one batch; and before each queue get the
target waits in (queues.waiting_from_target: one small write a get, where
records are queued), since a pool terminates its workers while they wait.

A journal write that fails (a full, read-only or vanished run directory)
never reaches the target: the journal stops in this process, says so in one
line on stderr, and counts what it drops from then on."""

import _thread
import os
import sys
import time

from . import format, part
from .jsonline import dumps

# The target's own calls to these may be hooked; the journal uses the originals.
_open, _write, _close, _fstat = os.open, os.write, os.close, os.fstat
_FLUSH_RECORDS, _FLUSH_NS = format.FLUSH_RECORDS, format.FLUSH_NS  # bound: read per record


# The journal's fds live at the top of the target's range, not at the low
# numbers it hands out and may close and expect closed (a write to a closed
# fd 1 must fail, not land in a journal). Found free from here downwards.
_TOP_FD = min(os.sysconf("SC_OPEN_MAX"), 1024) - 1
_HIGH_TRIES = 64
_NAME_TRIES = 64  # names PID-CREATED_NS tried, a ns apart, by a process's later images


def _high(fd):
    """fd moved to a free number near the top of the range (fd itself if none is)."""
    for number in range(_TOP_FD, max(_TOP_FD - _HIGH_TRIES, fd), -1):
        try:
            _fstat(number)
            continue  # taken
        except OSError:
            pass
        try:
            os.dup2(fd, number, inheritable=False)
        except OSError:
            return fd
        _close(fd)
        return number
    return fd


def std_fds_open():
    """Whether fds 0, 1 and 2 are all open. A file opened while one of them
    is closed takes its number for a moment: opened by a thread of the
    probe's, the target's own open in another thread then gets another
    number (a daemon's reopen of stderr expects 2). Such a thread opens
    nothing meanwhile (a close just after this check can still meet it)."""
    for fd in (0, 1, 2):
        try:
            _fstat(fd)
        except OSError:
            return False
    return True


# The run's files: its owner's alone, never written through a link planted at their names
# (writerprof.run.ownfile and directory use these too).
PRIVATE_FILE, PRIVATE_DIR = 0o600, 0o700
APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def make_dirs(directory):
    """directory and the missing ones above it, each PRIVATE_DIR (os.makedirs
    gives those above it the umask's mode): on a host whose part of the run
    the probe starts, the run directory itself."""
    missing = []
    directory = os.fspath(directory)
    while directory and not os.path.isdir(directory):  # "": a relative path's top, the working directory
        missing.append(directory)
        directory = os.path.dirname(directory)
    for level in reversed(missing):
        try:
            os.mkdir(level, PRIVATE_DIR)
        except FileExistsError:  # another process of the run made it meanwhile
            pass


def _write_fd(fd, data):
    view = memoryview(data)
    while view:
        view = view[_write(fd, view):]


class Journal:
    def __init__(self, run, host):
        self.run, self.host = run, host
        self.fds = {}  # suffix -> (fd, inode), reopened if the target closed ours
        self.records = []
        self.flush_due = time.monotonic_ns() + _FLUSH_NS
        self._flushing = _thread.allocate_lock()
        self.base = None
        self.stopped = None  # why journaling stopped in this process, or None
        self.dropped = {"events": 0, "records": 0}
        self.on_next_event = None  # called once at the next event (stacks.py: after a fork, on 3.13)
        self.held = None  # event lines kept for one write (hold), or None

    def open(self, pid, created_ns):
        """Start this process's files (at start, and in a child after fork);
        returns the created_ns its files are named by: created_ns, or a few
        ns later where an earlier image of this process (it exec'd) has the
        name. Its clock-tick start read twice can give the same ns."""
        for fd, _ in self.fds.values():  # inherited from the parent across fork
            try:
                _close(fd)
            except OSError:
                pass
        self.fds = {}
        self.records = []
        self._flushing = _thread.allocate_lock()
        # A forked child starts its own journal, and gets its own chance at the disk.
        self.stopped = None
        self.dropped = {"events": 0, "records": 0}
        directory = format.procs_dir(self.run, self.host)
        self.base = os.path.join(directory, "%d-%d" % (pid, created_ns))
        try:
            part.claim(self.run, self.host, os.environ.get(format.RUN_ID_ENV))  # never into another recording's part
            make_dirs(directory)
            # The chunks file at its first batch: most processes have none, and a file costs ~0.1 ms.
            for _ in range(_NAME_TRIES):
                try:
                    fd = _high(_open(self.base + format.EVENTS_SUFFIX, NEW | os.O_APPEND, PRIVATE_FILE))
                    break
                except FileExistsError:
                    created_ns += 1
                    self.base = os.path.join(directory, "%d-%d" % (pid, created_ns))
            else:
                raise FileExistsError("%s%s: taken %d times" % (self.base, format.EVENTS_SUFFIX, _NAME_TRIES))
            self.fds[format.EVENTS_SUFFIX] = (fd, _fstat(fd).st_ino)
        except OSError as exc:
            self._stop(exc)
        return created_ns

    def _fd(self, suffix):
        entry = self.fds.get(suffix)
        if entry is not None:
            try:
                if _fstat(entry[0]).st_ino == entry[1]:
                    return entry[0]
            except OSError:
                pass
        # Ours was closed (or its number now belongs to someone else): reopen.
        fd = _high(_open(self.base + suffix, APPEND, PRIVATE_FILE))
        self.fds[suffix] = (fd, _fstat(fd).st_ino)
        return fd

    def event(self, kind, **fields):
        if self.on_next_event is not None:
            call, self.on_next_event = self.on_next_event, None
            try:
                call()
            except Exception:
                pass
        if self.stopped is not None:
            self.dropped["events"] += 1
            return
        fields["kind"] = kind
        fields.setdefault("t_ns", time.monotonic_ns())
        line = (dumps(fields) + "\n").encode()
        if self.held is not None:
            self.held.append(line)
        elif not self.append(format.EVENTS_SUFFIX, line):
            self.dropped["events"] += 1

    def hold(self):
        """Keep the events from now for one write at release(): activation's
        ~10 (its hooks' outcomes) in one system call, not one each."""
        self.held = []

    def release(self):
        held, self.held = self.held, None
        if held and not self.append(format.EVENTS_SUFFIX, b"".join(held)):
            self.dropped["events"] += len(held)

    def buffer_event(self, kind, **fields):
        """A "shm" or "placement" event: its SHM or PLACEMENT record, appended
        now (one write, like an event's line, and counted as an event if
        dropped), or the JSON event where its fields do not fit one."""
        if self.stopped is not None:
            self.dropped["events"] += 1
            return
        t_ns = time.monotonic_ns()
        data = format.record(kind, t_ns, fields)
        if data is None:
            self.event(kind, t_ns=t_ns, **fields)
        elif not self.append(format.RECORD_SUFFIXES[kind], data):
            self.dropped["events"] += 1

    def record(self, fields):
        """Queue one CHUNK record (a tuple in CHUNK_FIELDS order). The hot
        path (calls.timed) appends to `records` itself, packed, and asks
        flush_if_due at its threads' CPU readings."""
        self.records.append(format.CHUNK.pack(*fields))
        self.flush_if_due(fields[7])

    def flush_if_due(self, end_ns):
        """A batch once FLUSH_RECORDS are queued, or at a record that ends
        FLUSH_NS after the last batch. A stopped journal drops its records
        at the next batch (flush)."""
        if len(self.records) >= _FLUSH_RECORDS or end_ns > self.flush_due:
            self.flush()

    def flush(self):
        if not self._flushing.acquire(False):
            return  # another thread is at it
        try:
            records = self.records
            count = len(records)  # appends from other threads go after count: kept
            if count:
                if self.stopped is not None:
                    self.dropped["records"] += count
                else:
                    data = b"".join(records[:count])
                    if not self.append(format.CHUNKS_SUFFIX, data):
                        self.dropped["records"] += count
                del records[:count]
            self.flush_due = time.monotonic_ns() + _FLUSH_NS
        finally:
            self._flushing.release()

    def append(self, suffix, data):
        """Write data whole; False (and the journal stopped) if the disk would not take it."""
        if self.stopped is not None:
            return False
        try:
            self._write_all(suffix, data)
        except OSError as exc:
            self._stop(exc)
            return False
        return True

    def replace(self, directory, suffix, data):
        """Write one of this process's files (PID-CREATED + suffix, in
        directory) whole, in place of its last version (a
        temporary file renamed over it: a reader, or a kill, finds the one
        or the other). False (and the journal stopped) if the disk would not
        take it."""
        if self.stopped is not None or self.base is None:
            return False
        file = os.path.join(directory, os.path.basename(self.base) + suffix)
        temporary = "%s.%s.tmp" % (file, os.urandom(8).hex())  # a name no link can wait at
        try:
            fd = _open(temporary, NEW, PRIVATE_FILE)
            try:
                _write_fd(fd, data)
            finally:
                _close(fd)
            os.replace(temporary, file)
        except OSError as exc:
            self._stop(exc)
            return False
        return True

    def _write_all(self, suffix, data):
        _write_fd(self._fd(suffix), data)

    def _stop(self, exc):
        self.stopped = "%s: %s" % (type(exc).__name__, exc)
        try:
            sys.stderr.write("writerprof: probe off in pid %d: journal: %s\n" % (os.getpid(), self.stopped))
            sys.stderr.flush()
        except Exception:
            pass

    def note_stopped(self):
        """At exit, if journaling stopped: one last try to say why and what was
        dropped (the disk may have room again); silent if it still has none."""
        if self.stopped is None or self.base is None:
            return
        line = dumps({"kind": "journal_stopped", "t_ns": time.monotonic_ns(), "reason": self.stopped,
                           "events_dropped": self.dropped["events"],
                           "records_dropped": self.dropped["records"] + len(self.records)})
        try:
            self._write_all(format.EVENTS_SUFFIX, (line + "\n").encode())
        except OSError:
            pass
