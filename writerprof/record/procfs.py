"""Another process's counters, placement and children from /proc, read
through writerprof.record.system (so a fixture tree stands in for /proc in tests).
Parsers take the file's text; readers return None for a process that is gone."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from typing import NamedTuple

from writerprof.probes.writerprof_probe.numa import PAGE_SIZE, parse_numa_maps_line
from writerprof.record.system import System

TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")  # /proc times count in clock ticks
SHM_DIR = "/dev/shm/"


class Stat(NamedTuple):
    state: str  # R, S, D, Z (exited, not yet reaped), ...
    ppid: int
    minflt: int
    majflt: int
    utime_ns: int
    stime_ns: int
    threads: int
    rss_bytes: int
    cpu: int  # the CPU it last ran on
    start_ticks: int  # since boot: with the pid, tells a reused pid apart


class ThreadStat(NamedTuple):
    tid: int
    name: str  # comm: the kernel's name of the thread (15 bytes at most)
    cpu: int  # the CPU it last ran on
    utime_ns: int
    stime_ns: int
    start_ticks: int  # since boot


class Status(NamedTuple):
    voluntary_ctxt: int
    nonvoluntary_ctxt: int
    cpus: str | None  # Cpus_allowed_list, in the kernel's list format ("0-3,8")


class Io(NamedTuple):
    write_bytes: int  # bytes sent to the block layer (page cache writeback counts)
    wchar: int  # bytes passed to write calls


UNREADABLE_IO = Io(-1, -1)  # another user's process: /proc/PID/io needs ptrace rights


def parse_stat(text: str) -> Stat:
    # comm (field 2) may hold spaces and parentheses: the fields start after the last ')'.
    f = text[text.rindex(")") + 2:].split()
    return Stat(state=f[0], ppid=int(f[1]), minflt=int(f[7]), majflt=int(f[9]),
                utime_ns=int(f[11]) * TICK_NS, stime_ns=int(f[12]) * TICK_NS, threads=int(f[17]),
                rss_bytes=int(f[21]) * PAGE_SIZE, cpu=int(f[36]), start_ticks=int(f[19]))


def parse_thread_stat(text: str) -> ThreadStat:
    """/proc/PID/task/TID/stat: the same format as a process's, for one thread."""
    close = text.rindex(")")
    f = text[close + 2:].split(None, 37)  # up to processor (field 39), no further
    return ThreadStat(tid=int(text[:text.index(" ")]), name=text[text.index("(") + 1:close], cpu=int(f[36]),
                      utime_ns=int(f[11]) * TICK_NS, stime_ns=int(f[12]) * TICK_NS, start_ticks=int(f[19]))


def _field(text: str, key: str) -> str | None:
    """The value of a "key: value" line ("\\n" before the key: exact names only)."""
    at = text.find("\n" + key + ":")
    if at < 0:
        return None
    start = at + len(key) + 2
    end = text.find("\n", start)
    return text[start:end if end >= 0 else None].strip()


def _int(value: str | None) -> int:
    return -1 if value is None else int(value)


def parse_status(text: str) -> Status:
    text = "\n" + text
    return Status(_int(_field(text, "voluntary_ctxt_switches")),
                  _int(_field(text, "nonvoluntary_ctxt_switches")),
                  _field(text, "Cpus_allowed_list"))


def parse_io(text: str) -> Io:
    text = "\n" + text
    return Io(_int(_field(text, "write_bytes")), _int(_field(text, "wchar")))


def parse_cmdline(text: str) -> list[str]:
    parts = text.split("\0")
    if parts[-1] == "":  # the usual trailing NUL; a rewritten title may lack it
        parts.pop()
    return parts


def shm_mappings(maps_text: str) -> dict[int, str]:
    """Start address -> file of each mapping of a file under /dev/shm/ (its
    maps path, unescaped, " (deleted)" once unlinked)."""
    found = {}
    for line in maps_text.splitlines():
        if SHM_DIR in line:
            fields = line.split(None, 5)
            if len(fields) == 6 and fields[5].startswith(SHM_DIR):
                found[int(fields[0].partition("-")[0], 16)] = fields[5]
    return found


def shm_numa_maps(maps_text: str, numa_maps_text: str) -> list[dict]:
    """numa.parse_numa_maps_line of each /dev/shm/ mapping, its file as maps says."""
    mappings = shm_mappings(maps_text)
    found = []
    for line in numa_maps_text.splitlines():
        if "file=" + SHM_DIR in line:
            entry = parse_numa_maps_line(line)
            if entry["address"] in mappings:
                entry["file"] = mappings[entry["address"]]
                found.append(entry)
    return found


def read_stat(system: System, pid: int | str) -> Stat | None:
    text = system.read(f"/proc/{pid}/stat")
    return None if text is None else parse_stat(text)


def read_threads(system: System, pid: int | str) -> list[ThreadStat]:
    """Every live thread of pid ([] once it is gone). Read with bare
    os.open/os.read: this runs for each thread of each sampled process every
    tick, and a native pool has hundreds."""
    base = system.path(f"/proc/{pid}/task/")
    try:
        tids = os.listdir(base)
    except OSError:
        return []
    found = []
    for tid in tids:
        try:
            fd = os.open(base + tid + "/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue  # exited since the listing
        try:
            data = os.read(fd, 4096)
        except OSError:
            continue
        finally:
            os.close(fd)
        if data:
            found.append(parse_thread_stat(data.decode("utf-8", "replace")))
    return found


def read_status(system: System, pid: int | str) -> Status | None:
    text = system.read(f"/proc/{pid}/status")
    return None if text is None else parse_status(text)


def read_io(system: System, pid: int | str) -> Io:
    text = system.read(f"/proc/{pid}/io")
    return UNREADABLE_IO if text is None else parse_io(text)


def read_cmdline(system: System, pid: int | str) -> list[str]:
    text = system.read(f"/proc/{pid}/cmdline")
    return [] if not text else parse_cmdline(text)


def read_exe(system: System, pid: int | str) -> str | None:
    try:
        return os.readlink(system.path(f"/proc/{pid}/exe"))
    except OSError:  # gone, a kernel thread, or another user's process
        return None


def read_shm_numa_maps(system: System, pid: int | str) -> list[dict]:
    # maps first: numa_maps walks the page tables of every mapping, so it is
    # read only from processes that map shared memory at all.
    maps = system.read(f"/proc/{pid}/maps")
    if not maps or SHM_DIR not in maps:
        return []
    numa_maps = system.read(f"/proc/{pid}/numa_maps")  # absent on kernels without NUMA
    return [] if numa_maps is None else shm_numa_maps(maps, numa_maps)


def start_ns(start_ticks: int) -> int:
    """A process's start time on CLOCK_MONOTONIC (as the probe's created_ns), clock-tick precision."""
    # starttime counts on the boot-time clock, which also runs while suspended.
    return start_ticks * TICK_NS - (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - time.monotonic_ns())


def children(system: System, pid: int) -> list[int] | None:
    """pid's children from its threads' children files (a child forked by a
    thread is listed under that thread only); [] once pid is gone, None where
    the kernel has no children files (CONFIG_PROC_CHILDREN off)."""
    tasks = system.listdir(f"/proc/{pid}/task")
    found, listed = [], False
    for tid in tasks:
        text = system.read(f"/proc/{pid}/task/{tid}/children")
        if text is not None:
            listed = True
            found += map(int, text.split())
    return found if listed or not tasks else None


class ProcessTree:
    """A root process and its live descendants."""

    def __init__(self, system: System, root: int):
        self.system, self.root = system, root
        # Without children files every process's ppid is read; a pid once found
        # outside the tree stays outside while it lives (only init or a
        # subreaper adopts), so it is not read again.
        self._outside: set[int] = set()

    def pids(self) -> list[int]:
        """Root first (even once it is gone), then its descendants breadth
        first; one that exited a moment ago may be among them."""
        first = children(self.system, self.root)
        if first is None:
            return self._scan()
        found, i = [self.root, *first], 1
        while i < len(found):
            found += children(self.system, found[i]) or ()
            i += 1
        return found

    def _scan(self) -> list[int]:
        listed = {int(name) for name in self.system.listdir("/proc") if name.isdigit()}
        self._outside &= listed
        kids = defaultdict(list)
        for pid in listed - self._outside:
            stat = read_stat(self.system, pid)
            if stat is not None:
                kids[stat.ppid].append(pid)
        found, i = [self.root], 0
        while i < len(found):
            found += sorted(kids.get(found[i], ()))
            i += 1
        self._outside |= listed - set(found)
        return found
