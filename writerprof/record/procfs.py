"""Another process's counters, placement and children from /proc, read
through writerprof.record.system (so a fixture tree stands in for /proc in tests).
Parsers take the file's text; readers return None for a process that is gone."""

from __future__ import annotations

import os
import threading
import time
from collections import defaultdict, namedtuple

from writerprof.probes.writerprof_probe.numa import PAGE_SIZE, parse_numa_maps_line
from writerprof.record.system import System

TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")  # /proc times count in clock ticks
SHM_DIR = "/dev/shm/"
CHILDREN_FILES_OPEN = 256  # threads' children files a ProcessTree keeps open, in all


# Named tuples of collections, not typing's: typing is ~2 ms of record's CPU
# before CMD starts (the summary's numpy imports it once CMD has ended).
Stat = namedtuple("Stat", (
    "state",  # R, S, D, Z (exited, not yet reaped), ...
    "ppid", "minflt", "majflt", "utime_ns", "stime_ns", "threads", "rss_bytes",
    "cpu",  # the CPU it last ran on
    "start_ticks",  # since boot: with the pid, tells a reused pid apart
    # (arg_start, arg_end): where its arguments are, on a new stack after an exec;
    # (0, 0) where it has no memory (exiting) or the kernel does not say (before 3.5).
    "args",
))
ThreadStat = namedtuple("ThreadStat", (
    "tid",
    "name",  # comm: the kernel's name of the thread (15 bytes at most)
    "cpu",  # the CPU it last ran on
    "utime_ns", "stime_ns",
    "start_ticks",  # since boot
))
Status = namedtuple("Status", (
    "voluntary_ctxt", "nonvoluntary_ctxt",
    "cpus",  # Cpus_allowed_list, in the kernel's list format ("0-3,8"), or None
))
Io = namedtuple("Io", (
    "write_bytes",  # bytes sent to the block layer (page cache writeback counts)
    "wchar",  # bytes passed to write calls
))


UNREADABLE_IO = Io(-1, -1)  # another user's process: /proc/PID/io needs ptrace rights


def parse_stat(text: str) -> Stat:
    # comm (field 2) may hold spaces and parentheses: the fields start after the last ')'.
    f = text[text.rindex(")") + 2:].split()
    return Stat(state=f[0], ppid=int(f[1]), minflt=int(f[7]), majflt=int(f[9]),
                utime_ns=int(f[11]) * TICK_NS, stime_ns=int(f[12]) * TICK_NS, threads=int(f[17]),
                rss_bytes=int(f[21]) * PAGE_SIZE, cpu=int(f[36]), start_ticks=int(f[19]),
                args=(int(f[45]), int(f[46])) if len(f) > 46 else (0, 0))


def parse_thread_stat(data: bytes) -> ThreadStat:
    """/proc/PID/task/TID/stat: the same format as a process's, for one thread."""
    close = data.rindex(b")")
    f = data[close + 2:].split(None, 37)  # up to processor (field 39), no further
    return ThreadStat(tid=int(data[:data.index(b" ")]), name=data[data.index(b"(") + 1:close].decode("utf-8", "replace"),
                      cpu=int(f[36]), utime_ns=int(f[11]) * TICK_NS, stime_ns=int(f[12]) * TICK_NS,
                      start_ticks=int(f[19]))


def parse_schedstat(data: bytes) -> tuple[int, int]:
    """/proc/PID/task/TID/schedstat ("RUN_NS DELAY_NS TIMESLICES"): the
    nanoseconds the thread ran, and waited on a run queue for a CPU."""
    run, delay, _ = data.split(None, 2)
    return int(run), int(delay)


def parse_involuntary(data: bytes) -> int:
    """A status file's nonvoluntary_ctxt_switches (-1 if it has none), from
    its bytes: the one field the sampler reads of a thread's."""
    at = data.find(b"\nnonvoluntary_ctxt_switches:")
    if at < 0:
        return -1
    end = data.find(b"\n", at + 29)
    return int(data[at + 29:end if end >= 0 else None])


CpuTimes = namedtuple("CpuTimes", ("cpu", "busy_ns", "idle_ns", "steal_ns"))


def parse_cpu_times(data: bytes) -> list[CpuTimes]:
    """/proc/stat's cpuN lines (clock ticks): busy is user, nice, system,
    irq and softirq (guest time is in user already); idle, idle and iowait."""
    found = []
    # Whole lines only (a read cut short ends in part of one); the first sums every CPU.
    for line in data[:data.rfind(b"\n")].split(b"\n")[1:]:
        if not line.startswith(b"cpu"):
            break
        f = line.split()
        user, nice, system, idle, iowait, irq, softirq, steal = map(int, f[1:9])
        found.append(CpuTimes(int(f[0][3:]), (user + nice + system + irq + softirq) * TICK_NS,
                              (idle + iowait) * TICK_NS, steal * TICK_NS))
    return found


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
    return parse_stat(text) if text else None  # (empty: read as the process was reaped)


def read_threads(system: System, pid: int | str) -> list[ThreadStat]:
    """Every live thread of pid ([] once it is gone), each stat file opened and closed."""
    return [parse_thread_stat(data) for _, data in TaskFiles(system, pid, "stat", keep_open=0).read() if data]


class _KeptFiles:
    """/proc files read tick after tick through descriptors kept open and
    re-read from offset 0 (procfs regenerates such a file on each read):
    half the cost of opening each every time; bare os calls, no Python file
    objects. A descriptor outlives its process: once that is gone (its pid
    perhaps reused), the read fails and the file is opened afresh."""

    _READ_BYTES = 16384

    def __init__(self):
        self.fds: dict[str, int] = {}  # key -> its open file

    def _read_kept(self, key: str, keep: bool) -> bytes | None:
        """The file's contents (None if it cannot be read), through the
        descriptor kept for key, or one opened now (and kept, if keep)."""
        fd = self.fds.get(key)
        if fd is not None:
            try:
                return os.pread(fd, self._READ_BYTES, 0)
            except OSError:
                os.close(self.fds.pop(key))
        try:
            fd = os.open(self._path(key), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None  # gone, or a file this kernel lacks
        try:
            data = os.pread(fd, self._READ_BYTES, 0)
        except OSError:
            data = None
        if data is not None and keep:
            self.fds[key] = fd
        else:
            os.close(fd)
        return data

    def _path(self, key: str) -> str:
        """The file kept for key (each kind of files names its own)."""
        raise NotImplementedError

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()


class TaskFiles(_KeptFiles):
    """One file of every thread of a process (/proc/PID/task/TID/NAME), read
    tick after tick, and others of some threads (read_one). The sampler reads
    them for each thread of each sampled process, and a native pool has
    hundreds: up to keep_open of them stay open (keyed by tid, and TID/OTHER)."""

    def __init__(self, system: System, pid: int | str, name: str, keep_open: int):
        super().__init__()
        self.base, self.name = system.path(f"/proc/{pid}/task/"), "/" + name
        self.keep_open = keep_open
        self._tids: list[str] = []  # the last listing of the task directory
        self._given: bytes | None = None  # the last pid given out before it (last_pid)
        self._stood = False  # whether that last pid was the same at the listing before

    def read(self, given: bytes | None = None, threads: int = -1) -> list[tuple[str, bytes]]:
        """(tid, contents) of each thread whose file could be read; [] once
        the process is gone. given: /proc/loadavg's last pid, read before the
        process's stat that counted its `threads`. A thread joins only by a
        clone, which gives out a pid: where none was since the last listing
        (nor just before it: see ProcessTree) and the count is as listed,
        the threads are the ones listed, and the directory is not listed again."""
        if given is not None and given == self._given and self._stood and threads == len(self._tids):
            tids = self._tids
        else:
            try:
                tids = os.listdir(self.base)
            except OSError:
                self.close()
                return []
            self._stood = given is not None and given == self._given
            if self.fds and tids != self._tids:  # the files of threads that ended
                alive = set(tids)
                for key in [k for k in self.fds if k.partition("/")[0] not in alive]:
                    os.close(self.fds.pop(key))
            self._tids, self._given = tids, given
        found = []
        for tid in tids:
            data = self._read_kept(tid, len(self.fds) < self.keep_open)
            if data is not None:
                found.append((tid, data))
        return found

    def read_one(self, tid: str, name: str) -> bytes | None:
        """Another file of one of the threads read() listed (None: gone)."""
        return self._read_kept(tid + "/" + name, len(self.fds) < self.keep_open)

    def _path(self, key: str) -> str:
        return self.base + key if "/" in key else self.base + key + self.name


class ProcessFiles(_KeptFiles):
    """A process's own files (/proc/PID/stat, status, io) read tick after
    tick, kept open (keep_open; keyed by name): 5 us against 19 for stat here."""

    def __init__(self, system: System, pid: int | str, keep_open: bool):
        super().__init__()
        self.system, self.pid, self.keep_open = system, pid, keep_open
        self.base = system.path(f"/proc/{pid}/")

    def read(self, name: str) -> str | None:
        if not self.keep_open:  # (a fixture tree's files: through its System)
            return self.system.read(f"/proc/{self.pid}/{name}")
        data = self._read_kept(name, True)
        return None if data is None else data.decode("utf-8", "replace")

    def _path(self, name: str) -> str:
        return self.base + name


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


def children(system: System, pid: int, files: TaskFiles | None = None) -> list[int] | None:
    """pid's children from its threads' children files (a child forked by a
    thread is listed under that thread only); [] once pid is gone, None where
    the kernel has no children files (CONFIG_PROC_CHILDREN off). files: pid's
    children files, kept open between calls."""
    files = files if files is not None else TaskFiles(system, pid, "children", 0)
    found = files.read()
    if not found and system.listdir(f"/proc/{pid}/task"):
        return None
    return [int(child) for _, data in found for child in data.split()]


class HostFiles(_KeptFiles):
    """Host-wide /proc files (keyed by path) read tick after tick, kept open
    on the host's own /proc (a fixture tree's are read through its System)."""

    _READ_BYTES = 65536  # /proc/stat's CPU lines, ~70 bytes each, come first: ~900 CPUs'

    def __init__(self, system: System):
        super().__init__()
        self.system = system

    def read(self, path: str) -> bytes | None:
        if not self.system.real:
            text = self.system.read(path)
            return None if text is None else text.encode()
        return self._read_kept(path, True)

    def _path(self, path: str) -> str:
        return path


def last_pid(text: bytes) -> bytes:
    """/proc/loadavg's last field: the pid the kernel gave out last (to a process or a thread)."""
    return text.rsplit(None, 1)[-1]


class ProcessTree:
    """A root process and its live descendants; record's py-spy watch and its
    sampler share one (each look costs a listdir and a read per thread of
    each process: ~0.02 CPU s a run of the reproducer, for each of them).

    A process joins the tree only by being forked or cloned in it (an
    orphan is adopted by init or by a subreaper, whose orphans were in the
    tree already), and that gives out a pid: where /proc/loadavg's last pid
    has not moved since a look, no process can have joined, and the look is
    not made again. Not at once, though: a pid is given out a moment before
    its process is linked to its parent (the kernel's copy_process), so the
    look is made once more after the last pid has stood for one call (a
    pid asked for by clone3's set_tid, as CRIU restores, does not move it).
    Recording the 4-save reproducer on this 2-CPU machine, with another
    helper's benchmarks running, the sampler made 31-38 looks in 154-165 ticks."""

    def __init__(self, system: System, root: int):
        self.system, self.root = system, root
        # Without children files every process's ppid is read; a pid once found
        # outside the tree stays outside while it lives (only init or a
        # subreaper adopts), so it is not read again.
        self._outside: set[int] = set()
        self._files: dict[int, TaskFiles] = {}  # pid -> its children files, some kept open
        self._lock = threading.Lock()  # one look at a time, from either thread
        self._last: tuple[int, list[int]] = (-1, [])  # (when, pids) of the last look
        self._host = HostFiles(system)
        self._last_pid: bytes | None = None  # /proc/loadavg's last pid before the last look
        self._settled = False  # whether a look was made once that last pid had stood for a call

    def pids(self, fresh_ns: int = 0) -> list[int]:
        """Root first (even once it is gone), then its descendants breadth
        first; one that exited since the last pid was given out may be among
        them. The last look's, if it is at most fresh_ns old, or if no pid
        was given out since (see the class's docstring)."""
        with self._lock:
            now = time.monotonic_ns()
            if self._last[0] >= 0 and now - self._last[0] <= fresh_ns:
                return self._last[1]
            loadavg = self._host.read("/proc/loadavg")  # before the look: what it may miss moves it
            given = None if not loadavg else last_pid(loadavg)
            if given is None or given != self._last_pid:
                self._last_pid, self._settled = given, False
            elif self._settled:
                self._last = (now, self._last[1])
                return self._last[1]
            else:
                self._settled = True
            found = self._look()
            self._last = (now, found)
            return found

    @property
    def last_pid(self) -> bytes | None:
        """/proc/loadavg's last pid as the last look (or its skip) read it; None where unreadable."""
        return self._last_pid

    def _look(self) -> list[int]:
        first = self._children(self.root)
        if first is None:
            return self._scan()
        found, i = [self.root, *first], 1
        while i < len(found):
            found += self._children(found[i]) or ()
            i += 1
        if len(self._files) > len(found):  # (every pid found has its files)
            for pid in self._files.keys() - set(found):  # gone: a pid reused later starts afresh
                self._files.pop(pid).close()
        return found

    def _children(self, pid: int) -> list[int] | None:
        files = self._files.get(pid)
        if files is None:
            open_now = sum(len(f.fds) for f in self._files.values())
            files = self._files[pid] = TaskFiles(self.system, pid, "children", CHILDREN_FILES_OPEN - open_now)
        return children(self.system, pid, files)

    def close(self) -> None:
        with self._lock:
            for files in self._files.values():
                files.close()
            self._files.clear()
            self._host.close()

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
