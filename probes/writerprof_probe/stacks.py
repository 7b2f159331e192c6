"""The probe's own stack sampler (issue 16): a thread in each probed process
that reads every thread's Python stack (sys._current_frames) at a rate,
instead of a py-spy process per process. Started when record asks for it
(STACKS_ENV: "FULL,SPARSE,DAEMON" in Hz).

Why in the process: a py-spy costs ~13 ms to start (it reads the
interpreter's symbols) and ~0.5 ms a sample of 80 frames (a writer's
imports), read through another process's memory; here a sample of 80
frames costs 20-45 us (Python 3.9-3.13 on this project's machine), and
nothing is started per process. What it cannot do: native frames (record
--stacks-by py-spy --native), and a process the probe is not in (an
interpreter started with -I or -S).

Rates, as record's py-spys had them (writerprof.record.stackrate): the
first FULL_RATE_STARTS multiprocessing children (writers, forked or
exec'd) of each parent at FULL for their start-up, until their target has
run FULL_RATE_HEAD_NS (its first save's calls) or, without a target,
FULL_RATE_CAP_NS (format.py); then
SPARSE. Later writers re-run the same start-up, at SPARSE from their start
(weighted, in tenths of the detail). multiprocessing's daemons, which only
wait, at DAEMON; every other process (CMD, MPI ranks) at SPARSE. Outside
FULL, an idle process is sampled ever more sparsely (IDLE_SHARE).

Each sample is weighted by the time since the one before, in periods of
the FULL rate: a count is the same wall-clock time in every process and at
every rate, and a sample the GIL kept waiting (a long C call of the target)
counts the time it waited. It lands where that call returned: the line
that made it. Counts are summed per thread and stack in memory and written
as "thread;frame;...;frame COUNT" lines (root first, py-spy's raw format with
--threads: the thread "thread (TID): NAME", format.THREAD_FRAME; frames
"name (file:line)", the name qualified on 3.11+ and the file from its
outermost package, as py-spy names them) to PID-CREATED.stacks.txt in
its host's stacks/ (not procs/, whose listing record's sampler watches),
rewritten whole (a temporary renamed over it) a quarter of a second after
the process starts, then twice as late each time up to every 8 s, and at
exit: the file is as small as the process's distinct stacks
however long it runs, and a SIGKILL or a crash loses what came after the
last rewrite. At exit, a "stacks" event says how many samples the process
took, its thread's CPU time (what the sampling cost it), and whether it
was one of its parent's first writers (first_start).

The thread is a bare _thread (not in threading.enumerate(), not joined at
exit; named format.STACKS_THREAD in /proc, so that the analysis does not
count its CPU time as the process's work), stopped and joined before every fork and started again after, in the
parent and in the child: a fork with it running would make Python 3.12+
warn that the process is multi-threaded, and its lock could be held in the
child. Python 3.13 counts the threads after the fork's after_in_parent
hooks: there the parent's thread starts again at its next journal event
(a multiprocessing parent journals the child it started at once; a
forkserver daemon, which only waits, goes unsampled until then)."""

import _thread
import os
import sys
import time

from . import format, quiet
# os's own (the target's calls to them may be hooked), and how the run's files are made
from .journal import APPEND, PRIVATE_FILE, _close, _open, _write, make_dirs, std_fds_open

_now = time.monotonic_ns
FLUSH_NS = 250_000_000  # the first rewrite of the file; then twice as late each time, up to
FLUSH_MAX_NS = 8_000_000_000
STOP_WAIT_S = 2.0
# Outside the full rate, a process whose own threads used less CPU than
# IDLE_SHARE of the time since the last sample is idle (a daemon, a parent
# waiting for its writers): its period doubles at each such sample, up to
# IDLE_MAX times, and is its rate's again at its first busy one. An idle
# thread's stack is where it waits; a wake-up costs ~60-140 us of CPU on
# this project's VM, whatever the sample.
IDLE_SHARE = 0.01
IDLE_MAX = 8
_DAEMONS = ("forkserver", "resource_tracker")
_PR_SET_NAME = 15  # prctl's option (linux/prctl.h): the calling thread's comm
_CHILDREN = ("spawn_child", "forkserver_child", "fork_child")


class _Sampler:
    def __init__(self, journal, rates, process):
        self.journal, self.process = journal, process  # process: the probe's "process" event (its role)
        self.full, self.sparse, self.daemon = rates
        self.counts = {}  # stack key (leaf first, then its thread) -> weight in full-rate periods, since the start
        self.changed = False  # whether counts changed since the file was written
        self.names = {}  # id of a code object -> (its "name (file" prefix, the code object)
        self.lines = {}  # stack key -> its frames as the file has them
        self.lock = _thread.allocate_lock()  # held while counts change or are written
        self.thread = None  # (wake, done) locks of the running thread, or None
        self.flush_every = self.flush_due = 0  # (set by restart)
        self.ident = self.native_id = 0  # the running thread's ids: Python's (pthread_t) and the kernel's
        self.samples = self.cpu_ns = 0  # taken in this process, and the thread's CPU time (the "stacks" event)
        self.error = None  # why the thread stopped sampling before the process ended (the "stacks" event)
        self.restart()

    def restart(self):
        """The rates of this process from now, its first flush FLUSH_NS away
        (at start, and in a forked child: its role changed)."""
        self.flush_every = FLUSH_NS
        self.flush_due = _now() + FLUSH_NS
        # This process's main thread (the one that starts the probe, or forked it):
        # its kernel id is the pid, and it has a name before the target imports threading.
        self.main = (_thread.get_ident(), os.getpid())
        role = self.process["role"]
        self.first = role in _CHILDREN and _first_start(self.process["ppid"], self.journal)
        self.full_until = _now() + format.FULL_RATE_CAP_NS if self.first else 0
        self.rate = self.daemon if role in _DAEMONS else self.sparse
        self.idle = 1  # the multiple of the rate's period while idle (IDLE_MAX)
        self.target_cpu_ns = 0  # the CPU time of the process's other threads at the last sample

    def period_ns(self, now):
        if now < self.full_until:
            return 1_000_000_000 // self.full
        return 1_000_000_000 // self.rate * self.idle

    def pace(self, elapsed_ns):
        """After a sample: idle or not, from the CPU time of the process's
        other threads (the process's, less this thread's and its
        predecessors') over the elapsed_ns since the sample before."""
        target = time.process_time_ns() - self.cpu_ns - time.thread_time_ns()
        busy, self.target_cpu_ns = target - self.target_cpu_ns, target
        # (Not where every process is to be sampled at the full rate: record --sparse-stack-rate.)
        idle = busy < IDLE_SHARE * elapsed_ns and self.rate < self.full
        self.idle = min(2 * self.idle, IDLE_MAX) if idle else 1

    def start(self):
        wake, done = _thread.allocate_lock(), _thread.allocate_lock()
        wake.acquire()
        done.acquire()
        self.ident = quiet.start_thread(self._run, (wake, done))  # (RuntimeError if none can start)
        self.thread = (wake, done)

    def stop(self):
        """End the thread (before a fork), and wait for it to be done (it is
        in Python code for a sample at most) and gone from the kernel too:
        Python 3.13 counts the process's threads there when it forks, and the
        thread's last steps come after it said it was done."""
        if self.thread is not None:
            wake, done = self.thread
            self.thread = None
            wake.release()
            done.acquire(True, STOP_WAIT_S)  # (a file write hung on a dead disk does not hang the target)
            task = "/proc/self/task/%d" % self.native_id
            deadline = _now() + 100_000_000
            while os.path.exists(task) and _now() < deadline:
                time.sleep(0.0001)

    def thread_cpu_ns(self):
        """The running thread's CPU time so far, read from this one (0 if none runs)."""
        try:
            return time.clock_gettime_ns(time.pthread_getcpuclockid(self.ident)) if self.thread else 0
        except (OSError, AttributeError):
            return 0

    def _run(self, wake, done):
        try:
            me, self.native_id = _thread.get_ident(), _thread.get_native_id()
            named = False
            last = _now()
            full_ns = 1_000_000_000 // self.full
            while not wake.acquire(True, self.period_ns(last) / 1e9):
                # Not at birth: a process that ends before its first sample is spared it.
                if not named:
                    named = self._name()
                now = _now()
                self.sample(me, (now - last) / full_ns)
                self.samples += 1
                self.pace(now - last)
                last = now
                if now >= self.flush_due and std_fds_open():  # (else at a later sample, or at exit)
                    self.flush()
        except Exception as exc:  # never the target's problem: its stacks end here, and the "stacks" event says why
            self.error = "%s: %s" % (type(exc).__name__, exc)
        finally:
            self.cpu_ns += time.thread_time_ns()
            done.release()

    def _name(self):
        """This thread named, to be told apart from the target's threads in
        /proc (by bare os calls: io's open and write cost it ~100 us more);
        unnamed if /proc will not have it, and sampling all the same. Each
        call gives up the GIL, and taking it back from a busy main thread
        costs that thread a switch: ~0.5 ms of a start-up's imports.

        While a standard fd is closed, the open of comm would take its
        number: named by prctl(PR_SET_NAME) instead, which opens nothing,
        where the target has imported ctypes (numpy does; its import here
        would open files, and cost ~5 ms); else not yet. Whether it is done."""
        if not std_fds_open():
            ctypes = sys.modules.get("ctypes")
            if ctypes is None:
                return False
            try:
                ctypes.CDLL(None).prctl(_PR_SET_NAME, format.STACKS_THREAD.encode(), 0, 0, 0)
            except Exception:  # (a ctypes half imported by another thread: at a later sample)
                return False
            return True
        try:
            comm = _open("/proc/self/task/%d/comm" % self.native_id, os.O_WRONLY | os.O_CLOEXEC)
            try:
                _write(comm, format.STACKS_THREAD.encode())
            finally:
                _close(comm)
        except OSError:
            pass
        return True

    def sample(self, me, weight):
        counts, names = self.counts, self.names
        # Python's threads by ident (none until the target imports threading)
        named = getattr(sys.modules.get("threading"), "_active", None) or {}
        main, pid = self.main
        with self.lock:
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                thread = named.get(ident)
                try:  # its kernel id and name, as py-spy --threads tells threads apart
                    if ident == main:  # (threading's native_id is the parent's in a fork child before 3.12)
                        who = (pid, thread.name if thread is not None else "MainThread")
                    else:
                        who = (thread.native_id, thread.name) if thread is not None else (ident, None)
                except Exception:  # (a Thread whose __init__ its subclass skipped)
                    who = (ident, None)
                key = []
                while frame is not None:
                    # By id: a code object's own hash hashes its constants, nested
                    # functions' code included (a module's body: all of its code).
                    code = frame.f_code
                    ident = id(code)
                    if ident not in names:
                        names[ident] = ("%s (%s" % (getattr(code, "co_qualname", code.co_name),
                                                    short_file(code.co_filename)), code)  # (kept: ids stay its)
                    key.append((ident, frame.f_lineno))  # (None in some frames of 3.11+: written as 0)
                    frame = frame.f_back
                key.append(who)
                key = tuple(key)
                counts[key] = counts.get(key, 0.0) + weight
            self.changed = True

    def flush(self):
        """The file rewritten whole with the counts so far (if they changed),
        each rounded to whole periods, under the lock (the thread's rewrite
        and the exit's never write the temporary file at once); the next
        flush twice as late, up to FLUSH_MAX_NS."""
        self.flush_due = _now() + self.flush_every
        self.flush_every = min(2 * self.flush_every, FLUSH_MAX_NS)
        if not self.changed or not self.lock.acquire(True, 0.5):  # (a sample in progress ends in microseconds)
            return
        try:
            names, lines, out = self.names, self.lines, []
            for key, weight in self.counts.items():
                whole = int(weight + 0.5)
                if whole:
                    line = lines.get(key)
                    if line is None:
                        line = lines[key] = ";".join([_thread_frame(*key[-1])] + [
                            "%s:%d)" % (names[ident][0], number or 0) for ident, number in reversed(key[:-1])])
                    out.append("%s %d\n" % (line, whole))
            self.changed = False
            self.journal.replace(format.stacks_dir(self.journal.run, self.journal.host), format.STACKS_SUFFIX,
                                 "".join(out).encode("utf-8", "surrogateescape"))
        finally:
            self.lock.release()


# What a thread's name may not hold in a line: a ';' would end the frame, a
# newline the line.
_NAME_SAFE = {ord(";"): ",", ord("\n"): " ", ord("\r"): " "}


def _thread_frame(tid, name):
    """The root frame of a thread's stacks: "thread (TID): NAME" (format.THREAD_FRAME),
    or "thread (0xIDENT)" for one Python has no name and the kernel no id of."""
    if name is None:
        return "thread (0x%x)" % tid
    # (backslashreplace: a name with a lone surrogate would fail the file's encoding)
    return format.THREAD_FRAME % (tid, name.translate(_NAME_SAFE).encode("utf-8", "backslashreplace").decode())


_short = {}  # a file -> its name as py-spy gives it
_tops = {}  # a directory -> the directory its files are named from (_top)


def short_file(path):
    """A frame's file as py-spy names it: from its outermost package (the
    directories above it that hold an __init__.py), so "multiprocessing/
    spawn.py", "numpy/core/numeric.py", a script as "t.py"; a name that is
    not a path ("<frozen importlib._bootstrap>", "<string>") as it is."""
    short = _short.get(path)
    if short is None:
        short = path[len(_top(os.path.dirname(path))):].lstrip("/") if path.startswith("/") else path
        _short[path] = short
    return short


def _top(directory):
    """The directory above the outermost package that holds `directory`
    (itself if it is no package). One stat a directory, not one per file
    and level: a stat gives up the GIL, and taking it back from a busy main
    thread costs both a switch (a writer's sampled start-up meets ~80 files
    in ~20 directories)."""
    top = _tops.get(directory)
    if top is None:
        top = directory
        if directory != "/" and os.path.exists("%s/__init__.py" % directory):  # (not join: a --probe may time it)
            top = _top(os.path.dirname(directory))
        _tops[directory] = top
    return top


def _first_start(ppid, journal):
    """Whether this writer is among the first FULL_RATE_STARTS its parent
    started: each appends a byte to the parent's PPID.starts in stacks/ and
    reads where its byte landed (O_APPEND: the offset is the write's own).
    One of the first if that fails: its start-up is what stacks are for."""
    try:
        fd = _open("%s/%d%s" % (format.stacks_dir(journal.run, journal.host), ppid, format.STARTS_SUFFIX),
                   APPEND, PRIVATE_FILE)
        try:
            _write(fd, b".")
            return os.lseek(fd, 0, os.SEEK_CUR) <= format.FULL_RATE_STARTS
        finally:
            _close(fd)
    except OSError:
        return True


_sampler = [None]
_THREADS_COUNTED_AFTER_HOOKS = sys.version_info >= (3, 13)  # os.fork's multi-threaded warning


def parse_rates(text):
    """(full, sparse, daemon) Hz from STACKS_ENV's value; None if it is not three positive integers."""
    try:
        rates = tuple(int(r) for r in text.split(","))
    except ValueError:
        return None
    return rates if len(rates) == 3 and min(rates) > 0 else None


def install(journal, process, on_fork, on_exit):
    """Start sampling if STACKS_ENV asks for it, stopped and started again
    around forks (on_fork: lifecycle's hooks run in the forked child) and
    flushed at exit."""
    rates = parse_rates(os.environ.get(format.STACKS_ENV, ""))
    if rates is None:
        return
    try:
        # Made now, not at a rewrite: a run directory removed under the run stays removed.
        make_dirs(format.stacks_dir(journal.run, journal.host))
        sampler = _Sampler(journal, rates, process)
        sampler.start()
    except Exception as exc:  # the rest of the probe goes on
        journal.event("hook", spec="stacks", status="failed", reason="%s: %s" % (type(exc).__name__, exc))
        return
    _sampler[0] = sampler
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent)
    on_fork(_after_fork_in_child)
    on_exit(_at_exit)


def target_started():
    """The target's first line (a multiprocessing child's run()): the full rate for FULL_RATE_HEAD_NS more."""
    sampler = _sampler[0]
    if sampler is not None and sampler.full_until:
        sampler.full_until = _now() + format.FULL_RATE_HEAD_NS


def _before_fork():
    sampler = _sampler[0]
    try:
        sampler.journal.on_next_event = None  # (the fork's own event is journaled next: not yet)
        sampler.stop()
    except Exception:
        pass


def _after_fork_in_parent():
    try:
        if _THREADS_COUNTED_AFTER_HOOKS:
            _sampler[0].journal.on_next_event = _sampler[0].start
        else:
            _sampler[0].start()
    except Exception:
        pass


def _after_fork_in_child():
    sampler = _sampler[0]
    sampler.lock = _thread.allocate_lock()
    sampler.counts, sampler.changed, sampler.samples, sampler.cpu_ns, sampler.error = {}, False, 0, 0, None
    sampler.restart()
    sampler.start()


def _at_exit():
    """The thread ended, then the last rewrite. Not left to end with the
    process: a thread that wakes while the interpreter finalizes is ended
    from under it (pthread_exit, its thread state freed), a known hazard;
    a recorded `python3.10 -X dev` whose thread was due to wake 24 ms after
    this hook was killed by SIGSEGV once its exit status was decided."""
    sampler = _sampler[0]
    sampler.journal.on_next_event = None  # (a thread to start again after a fork: not now)
    try:
        sampler.stop()
        sampler.flush()
    except Exception as exc:  # the event still comes, and says why the file lacks the last samples
        sampler.error = sampler.error or "%s: %s" % (type(exc).__name__, exc)
    fields = {"error": sampler.error} if sampler.error else {}
    sampler.journal.event("stacks", samples=sampler.samples, cpu_ns=sampler.cpu_ns + sampler.thread_cpu_ns(),
                          first_start=sampler.first, **fields)
