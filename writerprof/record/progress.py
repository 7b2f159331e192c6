"""Whether a host's saves make progress, as its journals show it while CMD
runs: a probed process's hooked calls (a put, a get, a write: its
.chunks.bin grows) and the I/O interposer's file writes and syncs (its
io/PID-INIT_NS.io gets a write or sync record). What a process prints, the
probe's own events and stacks, and file reads are no save's progress.

A look reads the files of the processes alive (and of those alive at the
previous look, for what they did before they ended) and of the journals
made since: a stat of each .chunks.bin, and of each interposer journal its
header's record count and the records added since (at most SCAN_RECORDS of
them: a process that made more file calls than that since the last look is
busy with files, which counts as progress)."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe import iofile

SCAN_RECORDS = 4096
# A directory is listed again where its mtime changed, and at least this
# often: a file made within its mtime's granule after a listing is then
# seen late, not never.
LIST_EVERY_NS = 5_000_000_000
_PROGRESS_OPS = frozenset(iofile.OPS[op] for op in iofile.WRITES + iofile.SYNCS)
_FAILED = 1  # a record's flags: the call failed


def _offset(name: str) -> int:
    """Where a field of the interposer journal's header begins (iofile.HEADER_FIELDS, packed)."""
    codes = {"u": "IQ", "i": "iq"}
    form = "<" + "".join(f"{code[1:]}s" if code[0] == "S" else codes[code[0]][code[1] == "8"]
                         for _, code in iofile.HEADER_FIELDS[:[f for f, _ in iofile.HEADER_FIELDS].index(name)])
    return struct.calcsize(form)


_NEXT_AT, _FLAGS_AT = _offset("next"), _offset("flags")  # a u8 and a u4


class Progress:
    """The journals of one host (HOST_DIR), looked at from look to look."""

    def __init__(self, host_dir: Path):
        self._dirs = {Path(host_dir) / journal.PROCS_DIR: journal.CHUNKS_SUFFIX,
                      Path(host_dir) / iofile.IO_DIR: iofile.IO_SUFFIX}
        self._listed: dict[Path, tuple[int, int]] = {}  # directory -> (its mtime, when listed)
        self._counts: dict[Path, int] = {}  # a journal -> its records at the last look
        self._pids: dict[Path, int] = {}  # a journal -> its process's pid
        self._new: set[Path] = set()  # journals listed since the last look
        self._looked: set[int] = set()  # the pids alive at the last look

    def look(self, alive: set[int]) -> tuple[bool, bool]:
        """Whether a process alive now has a journal here, and whether any
        process made progress since the last look."""
        self._list()
        watched, self._looked = alive | self._looked, set(alive)
        journaling = advanced = False
        for path, pid in self._pids.items():
            if pid in alive:
                journaling = True
            if pid in watched or path in self._new:
                count, grew = self._read(path)
                advanced |= grew
                self._counts[path] = count
        self._new.clear()
        return journaling, advanced

    def _list(self) -> None:
        now = time.monotonic_ns()
        for directory, suffix in self._dirs.items():
            try:
                mtime = os.stat(directory).st_mtime_ns
            except OSError:
                continue
            last = self._listed.get(directory)
            if last is not None and last[0] == mtime and now - last[1] < LIST_EVERY_NS:
                continue
            self._listed[directory] = (mtime, now)
            try:
                names = os.listdir(directory)
            except OSError:
                continue
            for name in names:
                pid = name.partition("-")[0]
                path = directory / name
                if name.endswith(suffix) and pid.isdigit() and path not in self._pids:
                    self._pids[path] = int(pid)
                    self._counts[path] = 0
                    self._new.add(path)

    def _read(self, path: Path) -> tuple[int, bool]:
        """The journal's records now, and whether those added since the last look hold progress."""
        before = self._counts[path]
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return before, False
        try:
            if path.name.endswith(journal.CHUNKS_SUFFIX):
                count = os.fstat(fd).st_size // journal.CHUNK.size
                return count, count > before
            return _io_records(fd, before)
        except OSError:
            return before, False
        finally:
            os.close(fd)


def _io_records(fd: int, before: int) -> tuple[int, bool]:
    """An interposer journal's records handed out, and whether those since
    `before` hold a finished write or sync (the count stops at the first one
    still being written, op 0, for the next look to read again)."""
    header = os.pread(fd, _NEXT_AT + 8, 0)
    if len(header) < _NEXT_AT + 8:
        return before, False  # its header not written yet
    if int.from_bytes(header[_FLAGS_AT:_FLAGS_AT + 4], "little") & iofile.WRITTEN_THROUGH:
        count = max(0, os.fstat(fd).st_size - iofile.HEADER_BYTES) // iofile.RECORD_BYTES
    else:
        count = int.from_bytes(header[_NEXT_AT:_NEXT_AT + 8], "little")
    if count <= before:
        return before, False
    if count - before > SCAN_RECORDS:
        return count, True
    data = os.pread(fd, (count - before) * iofile.RECORD_BYTES, iofile.HEADER_BYTES + before * iofile.RECORD_BYTES)
    ops, flags = data[0::iofile.RECORD_BYTES], data[1::iofile.RECORD_BYTES]
    unfinished = ops.find(0)
    if unfinished >= 0:
        ops, flags, count = ops[:unfinished], flags[:unfinished], before + unfinished
    else:
        count = before + len(ops)  # (a read cut short by the file's end: the rest at the next look)
    return count, any(op in _PROGRESS_OPS and not flag & _FAILED for op, flag in zip(ops, flags))
