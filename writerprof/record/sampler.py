"""The out-of-process sampler of `writerprof record`: a thread of the launcher
that reads /proc for the recorded command's processes every interval and
appends to HOST_DIR/samples.bin, threads.bin, cpus.bin and sampled.jsonl
(formats: run.layout), every FLUSH_EVERY_NS and at stop(). Each process's
threads are read only in ticks where its CPU time grew: an idle process
costs one stat read, however many threads it has. Of a thread, its
schedstat first (its CPU time in ns and its run-queue delay): where that
did not change it has not run, and its stat is not read.

What a tick costs is mostly its code being cold: after 50 ms of the
recorded processes on the CPU, each builtin and each kind of system call a
tick makes costs ~10-40 us the first time (a VM's page walks), however
little it does; the tick makes as few as it can.

At first sight of a process, and again when its name changes (an exec, as
a rule: a shell that runs Python), it records what the process runs; for
a Python interpreter, also whether the probe's directory is on the
PYTHONPATH it started with (writerprof.record.pythons): the report counts
the Python processes the probe could not reach, and why.

With a stall time (record --stall), each tick ends with
writerprof.record.stall's watch for saves that stopped making progress (a
look at the journals at most once a second; a snapshot, in a thread of its
own, where they did).

If a write fails (a full or vanished run directory) the sampler stops: it
keeps what it wrote, says why once (write_error), and never raises into the
recording. It also counts the ticks that took longer than the interval
(timing()): on a loaded host, or at a very short interval, the samples are
then further apart than asked."""

from __future__ import annotations

import errno
import json
import os
import select
import threading
import time
from collections import namedtuple
from pathlib import Path

from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe import quiet
from writerprof.probes.writerprof_probe.identity import redact_argv
from writerprof.record import procfs, pythons, vmstat
from writerprof.record.stall import StallWatch
from writerprof.record.system import HOST, System
from writerprof.run import layout, ownfile
from writerprof.units import parse_cpu_list

WRITER_ROLES = frozenset({"fork_child", "forkserver_child", "spawn_child"})
# numa_maps costs a walk of the process's page tables (~2 ms for a producer
# holding 128 MiB of buffers): read it at first sight, then at most this often,
# and only of processes the probe does not run in (no journal of theirs
# found yet): the probe measures its own buffers' placement exactly, and this
# walk of a producer's and each writer's mappings was a quarter of the
# sampler's CPU time on 16 saves (benchmarks/record_attribution.py). On a
# host of one NUMA node pages do not move between nodes: there it is read
# again only where the process faulted pages in since (its rss or fault
# counts changed), which a producer filling
# buffers it touched already does not (a read was ~4 ms of a 0.75 ms tick's
# average for such a producer here).
NUMA_MAPS_EVERY_NS = 2_000_000_000
# Thread files (schedstat, stat, status) the sampler keeps open, in all
# (procfs.TaskFiles): far below the usual limit of 1024 descriptors, as record
# has files of its own.
THREAD_FILES_OPEN = 384
# A thread's run-queue delay is written once it grew this much since its
# last record (or with its CPU time, a clock tick's growth): a wake-up waits
# microseconds on the queue, a contended thread milliseconds a tick, and a
# record (and a read of its status) for every thread that ran cost 2-4x the
# tick. Less than this is counted at the thread's next record, late.
RUN_DELAY_NS = 1_000_000
# The host's CPU times (/proc/stat) are read every tick and written for the
# ticks in which a thread's delay was written (and the tick before, to count
# from): who else held the CPUs then. A record a CPU every tick would be
# ~250 MB an hour on 192 CPUs.
SAMPLER_NICE = 10  # added to the sampler thread's niceness: a tenth of the recorded processes' share
# Processes whose stat, status and io files the sampler keeps open (ProcessFiles):
# a run's writers and producer; with THREAD_FILES_OPEN and the two trees'
# children files (procfs.CHILDREN_FILES_OPEN each) under the usual limit of 1024.
PROCESS_FILES_OPEN = 32
# A process whose stat is as it was (it has not run a clock tick since, nor
# faulted a page or moved CPU) keeps its io and status of the previous tick,
# read again at least this often: its written bytes and context switches lag
# by that much at most where it ran for less than a tick; an affinity set by
# another process is seen then, or once it runs. (Two reads fewer a tick for
# each idle daemon: a forkserver, a resource tracker.)
STATUS_EVERY_NS = 1_000_000_000
# The thread's records are written at most this often (and at stop): a write
# of each of the three files every tick was ~5% of a tick's CPU time. What a
# killed record loses is at most this much of the end of its samples.
FLUSH_EVERY_NS = 500_000_000
# procs/ is listed again only where its mtime changed, and once more when
# that mtime has stood for this long: a journal created since cannot then
# have the same mtime, on any file system whose times step by less (ext4,
# xfs, NFS: a clock tick) ...
PROCS_SETTLE_NS = 100_000_000
# ... or this, where the times are whole milliseconds (FAT, some Lustre: seconds).
PROCS_SETTLE_COARSE_NS = 2_000_000_000


# Named tuples and a plain class, not dataclasses: dataclasses imports inspect,
# ~6 ms of record's CPU before CMD starts (the summary's numpy imports it once CMD has ended).
SamplerStatus = namedtuple("SamplerStatus", (
    "processes_seen",
    "alive",  # frozenset of pids
    "writers_alive",  # alive processes whose journal names a multiprocessing child role
    "written_bytes",  # bytes passed to write calls (wchar: to tmpfs and the page cache too), gone ones included
    "errors",  # ticks that failed
))


class _Process:
    """What the sampler keeps of a process it follows, from tick to tick."""

    __slots__ = ("pid", "start_ticks", "comm", "args", "cpus", "wchar", "ppid", "role", "numa_read_ns", "numa_faults",
                 "numa", "read_ns", "cpu_ns", "thread_count", "threads", "thread_reader", "files", "stat_text",
                 "stat", "io_text", "io", "status", "status_ns")

    def __init__(self, pid: int, start_ticks: int, files: procfs.ProcessFiles | None = None, comm: str = "",
                 args: tuple[int, int] = (0, 0)):
        self.pid, self.start_ticks = pid, start_ticks
        self.comm = comm  # its name in its stat: another after an exec
        self.args = args  # where its arguments are (procfs.Stat.args): elsewhere after an exec
        self.cpus: str | None = None  # the last affinity recorded
        self.wchar = -1
        self.ppid = 0
        self.role: str | None = None  # from its journal; None until read
        self.numa_read_ns: int | None = None
        self.numa_faults = (0, 0, 0)  # (minflt, majflt, rss) at numa_read_ns
        self.numa: dict[int, tuple] = {}  # address -> last numa_maps recorded
        self.read_ns = 0  # the previous tick's read of it
        self.cpu_ns = -1  # its utime + stime then
        self.thread_count = 0
        # tid -> _Thread as last read
        self.threads: dict[str, _Thread] = {}
        self.thread_reader: procfs.TaskFiles | None = None  # its threads' schedstat (or stat) files, and others
        self.files = files
        self.stat_text = ""  # its stat as last read
        self.stat: procfs.Stat | None = None  # stat_text parsed
        self.io_text: str | None = None  # its io as last read
        self.io: procfs.Io | None = None  # io_text parsed
        self.status: procfs.Status | None = None  # its status as last read (at status_ns): STATUS_EVERY_NS
        self.status_ns = 0


# A thread as last read: the file that tells whether it ran (its schedstat,
# or its stat where the kernel has none), its stat (procfs.ThreadStat: its
# CPU time and start, for a tid reused), its schedstat's CPU time (ns), and
# the run-queue delay and involuntary switches of its last record.
_Thread = namedtuple("_Thread", ("seen", "stat", "run_ns", "delay_ns", "involuntary"))


class Sampler:
    """Samples `root_pid` and its descendants, and every process that journals
    into HOST_DIR/procs/ (so that one reparented away, a daemon, is still
    followed), each interval until stop()."""

    def __init__(self, root_pid: int, host_dir: Path, interval_s: float, system: System = HOST,
                 tree: procfs.ProcessTree | None = None, stall_ns: int = 0):
        """tree: root_pid's procfs.ProcessTree, if the caller shares one with
        record's py-spy watch (which looks every 50 ms), and closes it: a tick
        takes a look of the last half interval, if there is one, rather than
        look again. stall_ns: record --stall's time, 0 for none
        (writerprof.record.stall watches for it on the ticks)."""
        self.root_pid, self.interval_s, self.system = root_pid, interval_s, system
        self._own_tree = tree is None
        self._tree = procfs.ProcessTree(system, root_pid) if tree is None else tree
        self._tree_fresh_ns = 0 if tree is None else int(interval_s * 1e9 / 2)
        self._procs_dir = Path(host_dir) / layout.PROCS_DIR
        ownfile.make_dirs(host_dir)
        self._samples_fd = ownfile.create(Path(host_dir) / layout.SAMPLES_FILE)
        self._sampled_fd = ownfile.create(Path(host_dir) / layout.SAMPLED_FILE)
        self._threads_fd = _create(Path(host_dir) / layout.THREADS_FILE,
                                   layout.header(layout.THREADS_MAGIC, layout.THREADS_VERSION, layout.THREAD_SAMPLE))
        # Where the kernel has no schedstat (no CONFIG_SCHED_INFO), a thread's stat tells
        # whether it ran, and no delay is read: no CPU times are needed either.
        self._thread_file = "schedstat" if system.read("/proc/self/schedstat") is not None else "stat"
        self._cpus_fd = _create(Path(host_dir) / layout.CPUS_FILE,
                                layout.header(layout.CPUS_MAGIC, layout.CPUS_VERSION, layout.CPU_SAMPLE))
        self._host = procfs.HostFiles(system)
        self._waited = False  # whether a thread's delay was written this tick
        self._unwritten_cpu_times: tuple[int, bytes] | None = None  # the last tick's /proc/stat, if not written
        self._lock = threading.Lock()  # one tick at a time; status() between ticks
        self._stopping = threading.Event()
        # stop() wakes the thread through this pipe: a poll of it costs the thread less than an Event's wait.
        self._wake_r, self._wake_w = os.pipe()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._live: dict[int, _Process] = {}
        self._ended: set[tuple[int, int]] = set()  # (pid, start_ticks): a zombie is not seen again
        self._ended_wchar = 0
        self._journal_names: set[str] = set()
        # procs/, once it exists: its mtime read through a descriptor kept open
        # (fstat), not its path (stat), each tick: ~20 us less of a cold tick here.
        self._procs_fd = -1
        self._procs_mtime = -1  # procs/'s mtime at its last listing
        self._procs_mtime_ns = 0  # when that mtime was first seen (monotonic)
        self._procs_settled = False  # whether a listing started once it had stood PROCS_SETTLE_NS
        self._journals: dict[int, tuple[int, Path]] = {}  # pid -> (created_ns, events file), the latest
        self._journal_pids: dict[int, int] = {}  # pid -> created_ns, named since the last tick
        self._errors = 0
        self.write_error: str | None = None  # why the sampler stopped writing, if it did
        self._ticks = self._late = self._longest_ns = 0
        self._cpu_ns: int | None = None  # the thread's CPU time, once it has ended
        self._samples: list[bytes] = []  # this tick's records, written at its end
        self._thread_samples: list[bytes] = []
        self._cpu_samples: list[bytes] = []
        self._thread_files = 0  # thread stat files held open, in all (THREAD_FILES_OPEN)
        self._records: list[dict] = []
        self._numa_counters = vmstat.Readings(system)
        online = system.read("/sys/devices/system/node/online")  # (None in a fixture tree without it)
        self._one_node = online is not None and len(parse_cpu_list(online)) == 1
        self.stalls = StallWatch(host_dir, stall_ns, WRITER_ROLES, system) if stall_ns > 0 else None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="writerprof-sampler", daemon=True)
        quiet.blocking_all(self._thread.start)

    def stop(self) -> None:
        """One last tick (it sees what ended since the previous one), then close."""
        if self._closed:
            return
        self._stopping.set()
        os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join()
        self._tree_fresh_ns = 0  # the last tick looks for itself: one from before CMD ended may miss its last processes
        self._tick_counting_errors()
        if self.stalls is not None:
            self.stalls.stop()
        with self._lock:
            self._flush()
            self._closed = True
            os.close(self._wake_r)
            os.close(self._wake_w)
            for proc in self._live.values():
                self._close_threads(proc)
            if self._own_tree:
                self._tree.close()
            self._host.close()
            for fd in (self._samples_fd, self._sampled_fd, self._threads_fd, self._cpus_fd):
                os.close(fd)
            if self._procs_fd >= 0:
                os.close(self._procs_fd)
            self._samples_fd = self._sampled_fd = self._threads_fd = self._cpus_fd = -1

    def flush(self) -> None:
        """Write what the thread holds now, if it can within 50 ms (this
        may run in a signal handler, in the middle of the thread's own code)."""
        if not self._lock.acquire(timeout=0.05):
            return
        try:
            if not self._closed:
                self._flush()
        finally:
            self._lock.release()

    def status(self) -> SamplerStatus:
        with self._lock:
            live = self._live.values()
            return SamplerStatus(
                processes_seen=len(self._live) + len(self._ended),
                alive=frozenset(self._live),
                writers_alive=sum(p.role in WRITER_ROLES for p in live),
                written_bytes=self._ended_wchar + sum(max(p.wchar, 0) for p in live),
                errors=self._errors)

    def timing(self) -> dict:
        """The thread's ticks: how many, how many overran the interval (the
        next one then started late), and the longest, in ns; and, once
        stopped, the thread's CPU time (ns)."""
        with self._lock:
            return {"interval_ns": int(self.interval_s * 1e9), "ticks": self._ticks, "late": self._late,
                    "longest_ns": self._longest_ns, "cpu_ns": self._cpu_ns}

    def tick(self) -> None:
        """Sample once now (the thread does this every interval)."""
        with self._lock:
            if self._closed:  # rather than write to a descriptor since reused
                raise OSError(errno.EBADF, "the sampler is stopped")
            try:
                self._tick()
            finally:
                self._flush()

    def _run(self) -> None:
        # Below the recorded processes: where they keep every CPU busy, the
        # sampler waits its turn rather than take time from them.
        tid = threading.get_native_id()
        try:
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + SAMPLER_NICE))
        except OSError:
            pass
        wake = select.poll()
        wake.register(self._wake_r, select.POLLIN)
        interval_ns = int(self.interval_s * 1e9)
        deadline = flushed = time.monotonic_ns()
        while not self._stopping.is_set():
            began = time.monotonic_ns()
            self._tick_counting_errors()
            ended = time.monotonic_ns()
            took = ended - began
            # (No max(): each builtin a tick calls costs it ~10-40 us of CPU, its code cold after the interval.)
            with self._lock:
                self._ticks += 1
                self._late += took > interval_ns
                if took > self._longest_ns:
                    self._longest_ns = took
                if ended - flushed >= FLUSH_EVERY_NS:
                    self._flush()
                    flushed = ended
            # A tick that overran is not caught up on: the next one starts now.
            deadline += interval_ns
            if deadline > ended:
                wake.poll((deadline - ended) / 1e6)  # (ms, rounded up)
            else:
                deadline = ended
        self._cpu_ns = time.thread_time_ns()

    def _tick_counting_errors(self) -> None:
        with self._lock:
            try:
                self._tick()
            except Exception as exc:
                self._errors += 1
                if self._errors == 1:  # the first says what; later ones are counted in status()
                    import traceback  # (a recording without errors goes without it)

                    self._records.append({"kind": "error", "t_ns": time.monotonic_ns(), "pid": self.root_pid,
                                          "error": f"{type(exc).__name__}: {exc}",
                                          "traceback": traceback.format_exc()})
                    self._flush()

    def _tick(self) -> None:
        """One tick's records, into the lists _flush writes."""
        self._read_journal_names()
        tree = self._tree.pids(self._tree_fresh_ns)
        in_tree = set(tree)
        self._waited = False
        for pid in dict.fromkeys([*tree, *self._journal_pids, *self._live]):
            self._sample(pid, pid in in_tree)
        if self._thread_file == "schedstat":
            self._read_cpu_times()
        self._records += self._numa_counters.tick(time.monotonic_ns(), self._live)
        if self.stalls is not None and not self._stopping.is_set():  # (not once CMD has ended)
            self.stalls.tick(time.monotonic_ns(), self._live)

    def _read_cpu_times(self) -> None:
        """The host's CPU times, written where the threads waited (RUN_DELAY_NS)."""
        data = self._host.read("/proc/stat")
        if data is None:
            return
        # Kept as read, parsed only where written: most ticks no thread waited, and
        # the text has a line per CPU (a big client's hundreds, each tick).
        reading = (time.monotonic_ns(), data)
        before, self._unwritten_cpu_times = self._unwritten_cpu_times, reading
        if not self._waited:
            return
        for t_ns, text in [before, reading] if before else [reading]:
            self._cpu_samples += [layout.CPU_SAMPLE.pack(t_ns, *c) for c in procfs.parse_cpu_times(text)]
        self._unwritten_cpu_times = None

    def _sample(self, pid: int, in_tree: bool) -> None:
        t_ns = time.monotonic_ns()
        proc = self._live.get(pid)
        stat_text = proc.files.read("stat") if proc is not None else None
        if stat_text is None:  # not followed yet, or gone (or its pid reused): by its path
            stat_text = self.system.read(f"/proc/{pid}/stat")
        if proc is not None and stat_text == proc.stat_text:
            stat = proc.stat  # it has not run since (a daemon, a blocked writer): parsed already
        else:
            stat = procfs.parse_stat(stat_text) if stat_text else None
        if proc is not None and (stat is None or stat.start_ticks != proc.start_ticks):
            self._end(proc, t_ns)  # gone, or its pid already reused
            proc = None
        if proc is not None and stat_text != proc.stat_text:
            # An exec: another name, or the arguments on another stack (a Python's
            # fork that execs a Python keeps its name). Where it has no memory to
            # tell (exiting), the next reading with some does.
            comm = _comm(stat_text)
            if comm != proc.comm or (stat.args != proc.args and proc.args[0] and stat.args[0]):
                self._exec(proc, comm, stat, t_ns)
            elif stat.args[0]:
                proc.args = stat.args
        created_ns = self._journal_pids.pop(pid, None) if self._journal_pids else None
        if stat is None or (proc is None and (pid, stat.start_ticks) in self._ended):
            return
        if proc is None and not in_tree and not (
                created_ns is not None and journaled_by(stat.start_ticks, created_ns)):
            return  # a pid that journaled, or one we followed, now belongs to another process
        files = proc.files if proc is not None else procfs.ProcessFiles(
            self.system, pid, keep_open=self.system.real and len(self._live) < PROCESS_FILES_OPEN)
        fresh = proc is None or stat_text != proc.stat_text or t_ns - proc.status_ns >= STATUS_EVERY_NS
        io_text = files.read("io") if fresh else proc.io_text
        if fresh:
            status_text = files.read("status")
            if status_text is None:  # exited since its stat was read: the next tick says so
                if proc is None:
                    files.close()
                return
            if proc is None:
                proc = self._first_sight(pid, stat, stat_text, t_ns, files)
                if proc is None:  # exec'ing: the next tick sees it as the program it becomes
                    files.close()
                    if created_ns is not None:
                        self._journal_pids[pid] = created_ns
                    return
            proc.status, proc.status_ns = procfs.parse_status(status_text), t_ns
        if io_text != proc.io_text or proc.io is None:
            proc.io = procfs.UNREADABLE_IO if io_text is None else procfs.parse_io(io_text)
        proc.stat_text, proc.stat, proc.io_text, io, status = stat_text, stat, io_text, proc.io, proc.status
        proc.ppid = stat.ppid
        if io.wchar >= 0:  # after an exec of a setuid program it is unreadable: keep the last
            proc.wchar = io.wchar
        self._samples.append(layout.SAMPLE.pack(
            t_ns, pid, stat.cpu, stat.threads, stat.utime_ns, stat.stime_ns, status.voluntary_ctxt,
            status.nonvoluntary_ctxt, stat.minflt, stat.majflt, stat.rss_bytes, io.write_bytes, io.wchar))
        if status.cpus is not None and status.cpus != proc.cpus:
            proc.cpus = status.cpus
            self._records.append({"kind": "affinity", "t_ns": t_ns, "pid": pid, "cpus": status.cpus})
        if proc.role is None:
            self._read_role(proc)
        if proc.role is None and (proc.numa_read_ns is None or t_ns - proc.numa_read_ns >= NUMA_MAPS_EVERY_NS):
            faults = (stat.minflt, stat.majflt, stat.rss_bytes)
            if proc.numa_read_ns is None or not self._one_node or faults != proc.numa_faults:
                proc.numa_faults = faults
                self._read_numa_maps(proc, t_ns)
        self._sample_threads(proc, stat, t_ns)
        if stat.state in "ZX":  # exited, not yet reaped: its counters are final
            self._end(proc, t_ns)

    def _sample_threads(self, proc: _Process, stat: procfs.Stat, t_ns: int) -> None:
        """A THREAD_SAMPLE for each thread whose CPU time grew since the last
        tick, or its run-queue delay by RUN_DELAY_NS. The process's stat sums
        its threads' times: unchanged, and with as many threads, none of them ran."""
        cpu_ns = stat.utime_ns + stat.stime_ns
        since, proc.read_ns = proc.read_ns, t_ns
        if cpu_ns == proc.cpu_ns and stat.threads == proc.thread_count:
            return
        proc.cpu_ns, proc.thread_count = cpu_ns, stat.threads
        if proc.thread_reader is None:
            proc.thread_reader = procfs.TaskFiles(self.system, proc.pid, self._thread_file, 0)
        reader = proc.thread_reader
        had = len(reader.fds)
        reader.keep_open = had + max(0, THREAD_FILES_OPEN - self._thread_files)  # what is left of the budget
        read = reader.read(self._tree.last_pid, stat.threads)  # (the tree read its last pid before the stat)
        by_schedstat = self._thread_file == "schedstat"
        known, now = proc.threads, {}
        for tid, seen in read:
            last = known.get(tid)
            if last is not None and last.seen == seen:  # as it was: it has not run (most threads)
                now[tid] = last
                continue
            if not seen:  # being reaped
                continue
            run_ns, delay = procfs.parse_schedstat(seen) if by_schedstat else (0, -1)
            if last is None or not by_schedstat or run_ns < last.run_ns or delay < last.delay_ns or (
                    run_ns // procfs.TICK_NS != last.run_ns // procfs.TICK_NS):
                # Its stat's CPU time counts clock ticks: read where it may have moved (or a tid was reused).
                data = reader.read_one(tid, "stat") if by_schedstat else seen
                if not data:
                    continue
                thread = procfs.parse_thread_stat(data)
            else:
                thread = last.stat
            first = last is None or last.stat.start_ticks != thread.start_ticks  # new, or its tid reused
            if first:
                last = _Thread(b"", thread._replace(utime_ns=0, stime_ns=0), 0, 0, 0 if by_schedstat else -1)
                began = max(since, procfs.start_ns(thread.start_ticks))
            else:
                began = since
            waited = delay - last.delay_ns >= RUN_DELAY_NS
            self._waited |= waited
            involuntary = last.involuntary
            if waited or (first and delay > 0):  # (a thread's count from its start: read once, whatever it is)
                status = reader.read_one(tid, "status")
                if status:
                    involuntary = procfs.parse_involuntary(status)
            if waited or thread.utime_ns + thread.stime_ns > last.stat.utime_ns + last.stat.stime_ns:
                self._thread_samples.append(layout.THREAD_SAMPLE.pack(
                    t_ns, began, proc.pid, thread.tid, thread.cpu, thread.utime_ns, thread.stime_ns,
                    thread.name.encode()[:15], delay, involuntary))
                now[tid] = _Thread(seen, thread, run_ns, delay, involuntary)
            else:  # its delay and CPU time as last written: what grew since is counted at its next record
                now[tid] = _Thread(seen, thread, run_ns, last.delay_ns, involuntary)
        self._thread_files += len(reader.fds) - had
        proc.threads = now

    def _close_threads(self, proc: _Process) -> None:
        if proc.files is not None:
            proc.files.close()
        if proc.thread_reader is not None:
            self._thread_files -= len(proc.thread_reader.fds)
            proc.thread_reader.close()

    def _first_sight(self, pid: int, stat: procfs.Stat, stat_text: str, t_ns: int,
                     files: procfs.ProcessFiles) -> _Process | None:
        """Its "seen" record, and it followed; None while an exec is under way."""
        program = self._program(pid)
        if _exec_under_way(program, stat):
            return None
        self._records.append({"kind": "seen", "t_ns": t_ns, "pid": pid, "ppid": stat.ppid,
                              "created_ns": procfs.start_ns(stat.start_ticks), **program})
        proc = self._live[pid] = _Process(pid, stat.start_ticks, files=files, comm=_comm(stat_text),
                                          args=_args_after(files, stat))
        return proc

    def _exec(self, proc: _Process, comm: str, stat: procfs.Stat, t_ns: int) -> None:
        """It exec'd another program since it was seen (a shell or `env` its
        Python, a Python's fork its command, or another Python); an exec
        still under way is looked at again next tick."""
        program = self._program(proc.pid)
        if _exec_under_way(program, stat):
            return
        proc.comm, proc.args = comm, _args_after(proc.files, stat)
        self._records.append({"kind": "exec", "t_ns": t_ns, "pid": proc.pid, **program})

    def _program(self, pid: int) -> dict:
        """What a process runs: its command line, its executable, and for a
        Python interpreter whether the probe is on its PYTHONPATH (None: not known)."""
        exe = procfs.read_exe(self.system, pid)
        program = {"cmdline": redact_argv(procfs.read_cmdline(self.system, pid)), "exe": exe}
        if pythons.is_python(exe):
            program["pythonpath_has_probe"] = pythons.probe_on_pythonpath(self.system, pid)
        return program

    def _end(self, proc: _Process, t_ns: int) -> None:
        self._records.append({"kind": "gone", "t_ns": t_ns, "pid": proc.pid})
        self._close_threads(proc)
        del self._live[proc.pid]
        self._ended.add((proc.pid, proc.start_ticks))
        # The kernel adds a reaped child's I/O counters to its parent's: count
        # a gone process's own only where no parent we follow took them in.
        if proc.ppid not in self._live:
            self._ended_wchar += max(proc.wchar, 0)

    def _read_numa_maps(self, proc: _Process, t_ns: int) -> None:
        """A numa_maps record for each /dev/shm mapping whose placement changed."""
        proc.numa_read_ns = t_ns
        for entry in procfs.read_shm_numa_maps(self.system, proc.pid):
            placed = (entry["file"], entry["pages"], entry["huge"])
            if proc.numa.get(entry["address"]) != placed:
                proc.numa[entry["address"]] = placed
                self._records.append({"kind": "numa_maps", "t_ns": t_ns, "pid": proc.pid,
                                      "address": entry["address"], "file": entry["file"],
                                      "pages": entry["pages"], "huge": entry["huge"]})

    def _read_journal_names(self) -> None:
        """Note the journals started since the last tick (PID-CREATED_NS.events.jsonl)."""
        try:
            if self._procs_fd < 0:
                self._procs_fd = os.open(self._procs_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            mtime = os.fstat(self._procs_fd).st_mtime_ns
            now = time.monotonic_ns()
            if mtime != self._procs_mtime:
                self._procs_mtime, self._procs_mtime_ns, self._procs_settled = mtime, now, False
            elif self._procs_settled:
                return  # nothing created since it was listed
            else:
                settle = PROCS_SETTLE_COARSE_NS if mtime % 1_000_000 == 0 else PROCS_SETTLE_NS
                self._procs_settled = now - self._procs_mtime_ns >= settle
            names = os.listdir(self._procs_fd)
        except FileNotFoundError:
            return
        for name in names:
            if name in self._journal_names:
                continue
            self._journal_names.add(name)
            if not name.endswith(journal.EVENTS_SUFFIX):
                continue
            pid, _, created = name[:-len(journal.EVENTS_SUFFIX)].partition("-")
            if not (pid.isdigit() and created.isdigit()):
                continue
            pid, created_ns = int(pid), int(created)
            if pid not in self._journals or self._journals[pid][0] < created_ns:
                self._journals[pid] = (created_ns, self._procs_dir / name)
            self._journal_pids[pid] = created_ns

    def _read_role(self, proc: _Process) -> None:
        found = self._journals.get(proc.pid)
        if found is not None and journaled_by(proc.start_ticks, found[0]):
            proc.role = _journal_role(found[1])

    def _flush(self) -> None:
        samples, threads, cpus, records = self._samples, self._thread_samples, self._cpu_samples, self._records
        self._samples, self._thread_samples, self._cpu_samples, self._records = [], [], [], []
        if self.write_error is not None:
            return
        try:
            if samples:
                _write_whole(self._samples_fd, b"".join(samples))
            if threads:
                _write_whole(self._threads_fd, b"".join(threads))
            if cpus:
                _write_whole(self._cpus_fd, b"".join(cpus))
            if records:
                _write_whole(self._sampled_fd, "".join(json.dumps(r) + "\n" for r in records).encode())
        except OSError as exc:
            # A full or vanished run directory: stop here rather than fail every tick.
            self.write_error = f"cannot write to {self._procs_dir.parent}: {exc.strerror or exc}"
            self._stopping.set()


def journaled_by(start_ticks: int, created_ns: int) -> bool:
    """Whether a journal created at created_ns can be the process started at
    start_ticks: a journal is opened after its process started (start_ticks
    is rounded down to a clock tick), and a reused pid starts later."""
    return procfs.start_ns(start_ticks) <= created_ns + procfs.TICK_NS


def _exec_under_way(program: dict, stat: procfs.Stat) -> bool:
    """Whether a process is in the middle of an exec: no command line yet and
    not a zombie. Its executable may already be the new program's, its name
    and arguments not; seen so, it would read as a Python without an
    environment, or be seen to exec twice."""
    return not program["cmdline"] and stat.state != "Z"


def _args_after(files: procfs.ProcessFiles, stat: procfs.Stat) -> tuple[int, int]:
    """Where the process's arguments lie: the stat's, where they were whole;
    else (read inside the exec, their end not yet past their start) from
    its stat read again, after its command line, which was whole: the next
    tick's would otherwise look like another exec. (Whole ones are kept as
    read: one read again could be of a later exec's, which would then go unseen.)"""
    if stat.args[1] > stat.args[0]:
        return stat.args
    text = files.read("stat")
    again = procfs.parse_stat(text) if text else None
    return again.args if again is not None and again.start_ticks == stat.start_ticks else stat.args


def _comm(stat_text: str) -> str:
    """A stat's comm (field 2, in parentheses, which it may hold itself)."""
    return stat_text[stat_text.index("(") + 1:stat_text.rindex(")")]


def _journal_role(path: Path) -> str | None:
    """The role on a journal's first line ("" if it has none); None while that
    line is still being written."""
    try:
        with open(path, "rb") as f:
            line = f.readline()
    except OSError:
        return None
    if not line.endswith(b"\n"):
        return None
    try:
        identity = json.loads(line)
    except ValueError:
        return ""
    return str(identity.get("role") or "") if isinstance(identity, dict) else ""


def _create(path: Path, header: bytes) -> int:
    """A record file of the run, its header written first (layout.HEADER)."""
    fd = ownfile.create(path)
    if os.fstat(fd).st_size == 0:
        _write_whole(fd, header)
    return fd


def _write_whole(fd: int, data: bytes) -> None:
    """All of data, or none of it: a write cut short (a full disk) is taken
    back, so that the file ends on a whole record."""
    end = os.lseek(fd, 0, os.SEEK_END)
    try:
        _write_all(fd, data)
    except OSError:
        try:
            os.ftruncate(fd, end)
        except OSError:
            pass
        raise


def _write_all(fd: int, data: bytes) -> None:
    # O_APPEND: each write lands at the end, so a short write just continues there.
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
