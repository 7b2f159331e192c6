"""Python stacks of CMD's Python processes, sampled by py-spy while
`writerprof record` runs it, each process by a py-spy of its own, at a rate
that depends on what the process is (issue 16; the policy is
writerprof.record.stackrate):

- record's watch of CMD's tree (every 50 ms, the kernel's children files;
  the forkserver daemon's children are its descendants and are seen there)
  starts a `py-spy record --pid PID --idle --format raw` for each Python
  process it finds (an executable named python*, or a journal in the run
  directory): no `--subprocesses`, whose look for new processes alone cost
  py-spy ~11 ms a second here, whatever the rate.
- The first stackrate.FULL_RATE_STARTS (2) processes that each Python
  process of the tree started (writers, workers: `stackrate.full_rate`) are
  sampled at the full rate (StackOptions.rate_hz,
  100 Hz; StackOptions.busy_rate_hz, if given, for those that start while
  the CPUs have under a quarter of their time free) for its start-up
  (stackrate.StartupEnd: to half a second into its target, per its
  journal); then that py-spy is stopped (it writes its file) and a second
  one samples it at the sparse rate (StackOptions.sparse_rate_hz, 10 Hz) to
  its end.
- The rest, CMD, MPI ranks and a parent's later writers (which re-run the
  same start-up), at the sparse rate for their whole life;
  multiprocessing's daemons (forkserver, resource tracker), which only
  wait, at DAEMON_RATE_HZ.

Every file gets the process chain py-spy --subprocesses would have written
(`process PID:"CMDLINE"` from CMD down) put at the root of every line, so
the loader (writerprof.run.stacks) ties each stack to its process and
weights each segment by its rate.

Why: py-spy's reads cost CPU in proportion to the samples and to the depth
of the stacks (on this project's 2-CPU machine about 0.1 ms a sample of 5
frames, 0.5 ms of 80, the depth of a writer's imports; ~13 ms to start a
py-spy, which reads the interpreter's symbols), and the run loses that CPU
where its CPUs are busy. One py-spy at 100 Hz for the whole tree took 3818
samples of a 4-save forkserver reproducer with a CPU-bound generator (0.55
CPU s, 10% of the run's); at two rates, 781 (525 of them the writers'); with
two writers' start-ups at the full rate, not four, 464-1005 (0.23-0.43 CPU
s, against 0.42-0.54 with four; 410-499 samples and 0.28-0.33 CPU s on disk,
against 0.43-0.64). The first writers' start-up and saves, which the stacks
are for, keep the full rate; the producer's threads, the idle daemons and
the later writers' repeats of the same start-up do not take it. What each
py-spy cost is in its segment (cpu_s, from wait4). With
StackOptions.sparse_rate_hz at or above rate_hz (record --sparse-stack-rate
100), or py-spy pausing the processes, every process is sampled at rate_hz
for its whole life, by one py-spy of its own.

The options, for all of them:

- raw (collapsed) output: one line per distinct stack with its count (record
  roots each in the process chain, so every stack is tied to its pid and its
  parent's), and the file stays small however long the run: py-spy
  aggregates as it goes.
- --idle: a thread blocked in a system call (a writer waiting on its queue, in
  fsync, or reading a module file at start-up; the producer on a full queue)
  is sampled too. The stacks are then wall-clock time per process, so a
  writer's start-up tower is in proportion to its write and fsync towers, as
  the save's time is.
- --nonblocking: py-spy reads each stack without pausing the process. Measured
  on the reproducer (forkserver, 4 saves of 512 MiB, numpy and matplotlib
  re-imported by every writer, 8 interleaved runs each, files on tmpfs without
  fsync, this project's 2-CPU machine): mean throughput 0.516 GiB/s without
  py-spy, 0.419 (-19%) with py-spy pausing the processes, 0.454 (-12%)
  non-blocking; the writer's start-up 0.69 s, 0.86 s and 0.79 s. On disk with
  fsync the same order (0.326, 0.274, 0.279 GiB/s; 5 runs each). The price:
  about 1% of non-blocking reads fail (py-spy counts them as errors and drops
  them: 30-49 of 4000-5000 samples, none when paused), and a read now and
  then is torn (one frame in about 20000 samples here, named "(torn frame)"
  by the loader). A few samples in a thousand against a fifth of the
  throughput and of the writer's start-up: the less intrusive mode is the
  default (StackOptions.nonblocking).
- a writer's py-spy starts once the watch has seen it (within 50 ms) and
  needs a moment to attach (10-20 ms on an idle machine): the first moments
  of a writer's life are missing from its stacks (forkserver, 4 writers, a
  CPU-bound producer: 0.40-0.62 s of start-up each in the journal, 0.31-0.60 s
  in the stacks; one py-spy for the tree missed 0.1-0.3 s). The journal's
  start-up phases measure how long the start-up takes; the stacks say where
  that time goes.
- --idle everywhere, at start-up and after: py-spy reads every thread's stack
  whether or not it then drops the idle ones (80 frames at 100 Hz: 0.19 CPU s
  per 4 s with --idle and without), so leaving it out saves nothing, and the
  daemons, which only wait, would have no stacks at all.
- --threads: each stack's root is its thread, "thread (TID): NAME", as the
  probe writes it too; the loader names a thread by its name (ids differ
  from run to run, names compare), and a graph that adds threads up says so.

py-spy runs in a session of its own, so that a Ctrl-C at the terminal reaches
CMD and not py-spy. Each stops by itself when its process is gone and writes
its file; `StackRecorder.stop` waits a moment for that, then asks with
SIGINT (py-spy writes what it has on SIGINT), and kills it only if it still
hangs: a process that outlives CMD (a daemon, a grandchild left running)
does not keep record waiting. py-spy never fails the run: if it is missing or
cannot attach (ptrace), record says so in one line, with the fix, and carries
on without stacks; if the run directory is full, what py-spy could not write
is left out and said (StackRecorder.write_error).

A CMD that never runs Python costs no py-spy at all (`record -- sh -c 'sleep
1'` took 1.63-1.69 s with py-spy retrying, 1.16-1.28 s with --no-stacks;
1.20-1.22 s either way once py-spy waited for a Python process, 5 runs
each). If py-spy finds no Python in a process (the interpreter not yet
started up), it is started again, every half second while the process
lives, into the same segment file name. A segment is one run of py-spy that
sampled (PID-NNN.raw, with its pid, rate and stage in stacks.json); the
files are described in writerprof.run.layout.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe import quiet
from writerprof.record import procfs, pythons
from writerprof.record.ptrace import FIX, PY_SPY_ENV, find_py_spy, ptrace_problem, py_spy_version, read_problem
from writerprof.record.rawstacks import compress, keep_whole_lines, process_chain
from writerprof.record.stackoptions import DAEMON_RATE_HZ, StackOptions
from writerprof.record.stackrate import FULL_RATE_STARTS, FreeCpu, StartupEnd, adapted_rate, full_rate, is_daemon
from writerprof.record.system import HOST
from writerprof.run import ownfile

_RETRY_S = 0.5  # between py-spy's attempts to find a Python process in CMD's tree
_CHILDREN_S = 0.05  # between looks at CMD's tree for new processes and ended py-spys
_FLUSH_WAIT_S = 1.0  # for py-spy to notice CMD's end and write its file, before SIGINT
_KILL_WAIT_S = 10.0  # after SIGINT, before SIGKILL
# How long after its py-spy started a process is watched for an exec: one seen
# between its fork and its exec (a daemon, a spawn child) execs within moments.
_EXEC_WATCH_NS = 2 * 10**9
_NO_PYTHON = "No python processes found"
_PERMISSION = ("Permission Denied", "Operation not permitted", "permission denied", "EPERM")


@dataclass
class _Spy:
    """One py-spy of one process (a segment, once it has ended)."""

    pid: int
    chain: list[tuple[int, str]]  # (pid, command line) from CMD down to pid
    rate_hz: int
    stage: str  # STARTUP, AFTER_STARTUP or WHOLE
    name: str  # its file in the stacks directory
    argv: list[str]
    process: subprocess.Popen
    started_ns: int
    startup: StartupEnd | None = None  # for STARTUP: when to give way to the sparse rate
    ended: str | None = None  # why record stopped it (stackrate.StartupEnd.ended, EXEC, DAEMON), if it did
    cpu_s: float = 0.0  # its user + system time, once reaped


STARTUP, AFTER_STARTUP, WHOLE = "startup", "after_startup", "whole"
EXEC, DAEMON = "exec", "daemon"  # a process that exec'd while its py-spy sampled: into a program, a daemon


class StackRecorder:
    """py-spys of CMD's Python processes into stacks_dir, until stop(): one
    thread watches CMD's tree and starts, switches and collects them (see
    the module's docstring). journals: the directory the probe journals
    CMD's processes into (a journal there is a Python process to sample).
    tree: pid's procfs.ProcessTree, if the caller shares one (and closes it)."""

    def __init__(self, pid: int, stacks_dir: Path, options: StackOptions, executable: str, warn,
                 journals: Path | None = None, tree: procfs.ProcessTree | None = None):
        self.pid, self.dir, self.options, self.executable = pid, Path(stacks_dir), options, executable
        self._tree, self._own_tree = tree, tree is None
        self._warn = warn
        self._journals = journals
        self._done = threading.Event()  # stop(), or a failure that ends them all: start no more py-spys
        self._grace_s = _FLUSH_WAIT_S  # for the py-spys to end by themselves once done (stop's grace_s)
        self._lock = threading.Lock()  # segments and the index, read by outcome() from other threads
        self._spies: dict[int, _Spy] = {}  # pid -> its py-spy running now
        self._retry: dict[int, tuple[int, _Spy]] = {}  # pid -> (when, the py-spy that found no Python yet)
        self._full_starts: dict[int, set[int]] = {}  # parent pid -> its children given the full rate
        self._names = 0  # the segments' files are numbered in one sequence
        self._ran = False  # whether any py-spy was started
        self._no_python = False  # whether py-spy said "No python processes found"
        self.thread_cpu_s = 0.0  # the watch thread's CPU time, once it has ended (run.json's record_cpu)
        self.segments: list[dict] = []
        self.reason: str | None = None  # why there are no stacks, once known
        self.write_error: str | None = None  # what could not be written (a full run directory)
        self.version: str | None = None  # asked once CMD has ended, not while it starts
        self._thread = threading.Thread(target=self._watch, name="writerprof-py-spy", daemon=True)
        # The mask its py-spys get: record's (the watch thread blocks every signal,
        # and a py-spy must take the SIGINT that has it write what it has).
        self._spawn_mask = signal.pthread_sigmask(signal.SIG_BLOCK, ())

    def command(self, output: Path, pid: int | str, rate_hz: int) -> list[str]:
        """py-spy's argv for process pid alone at rate_hz."""
        o = self.options
        argv = [self.executable, "record", "--pid", str(pid), "--format", "raw", "--output", str(output),
                "--rate", str(rate_hz)]
        argv += ["--threads"] + ["--idle"] * o.idle + ["--native"] * o.native + ["--nonblocking"] * o.nonblocking
        return argv

    def start(self) -> None:
        ownfile.make_dirs(self.dir)
        self._write_index()
        if self._own_tree:
            self._tree = procfs.ProcessTree(HOST, self.pid)
        # /proc/stat read every 200 ms only where a busy rate is asked for: it decides nothing else.
        self._free = FreeCpu(HOST) if self.options.busy_rate_hz is not None else None
        self._seen: dict[int, tuple[int, str]] = {}  # Python pid -> (parent pid, command line)
        # The first look now, not in the thread: a Python CMD is one at once (it
        # has been exec'd), and its py-spy starts before CMD can have ended.
        try:
            self._look()
        except OSError as exc:
            self._cannot_write(exc)
        quiet.blocking_all(self._thread.start)

    def _watch(self) -> None:
        """Every _CHILDREN_S until stop() (CMD's end is not enough: what
        outlived it is followed until then), a look (_look); then the
        py-spys still running ended."""
        try:
            while not self._done.wait(_CHILDREN_S):
                self._look()
        except OSError as exc:  # the run directory full or gone: the stacks end here
            self._cannot_write(exc)
        except Exception:  # a fault of ours ends the stacks, not the recording
            self._broke()
        finally:
            try:
                self._end_all()
            except Exception:
                self._broke()
            if self._own_tree:
                self._tree.close()
            self.thread_cpu_s = time.thread_time()

    def _look(self) -> None:
        """A py-spy for each Python process new in CMD's tree; the start-ups
        that ended given way to the sparse rate; the py-spys that ended
        collected, and retried where they found no Python yet."""
        now, seen = time.monotonic_ns(), self._seen
        free_share = self._free.look(now) if self._free is not None else 1.0
        for spy in self._spies.values():  # first: a new process's chain names its parent's program now
            if spy.ended is None and now - spy.started_ns < _EXEC_WATCH_NS:
                spy.ended = self._exec(spy)
        for pid in self._tree.pids():
            if pid in seen or pid in self._spies or pid in self._retry:
                continue
            stat = procfs.read_stat(HOST, pid)
            if stat is None or not self._is_python(pid):
                continue  # (looked at again next time: it may exec Python)
            cmdline = " ".join(procfs.read_cmdline(HOST, pid))
            if not cmdline:  # exec'ing (its new arguments not yet in place), or exiting: next time
                continue
            seen[pid] = (stat.ppid, cmdline)
            parent = seen.get(stat.ppid)
            writer = full_rate(pid, self.pid, cmdline, parent and (True, parent[1]))
            self._begin(pid, self._chain(pid, seen), stat.ppid if writer else None, free_share)
        for pid, spy in list(self._spies.items()):
            if spy.startup is not None and spy.ended is None:
                spy.ended = spy.startup.ended(now)
            if spy.ended and spy.process.returncode is None:  # py-spy writes what it has on SIGINT
                _signal(spy.process, signal.SIGINT)
            if self._reaped(spy):
                self._collect(spy)
                if not _alive(pid):
                    seen.pop(pid, None)  # its pid may come back as another process
                    self._full_starts.pop(pid, None)
        for pid, (when, spy) in list(self._retry.items()):
            if now >= when:
                del self._retry[pid]
                if _alive(pid):
                    self._restart(spy)

    def _exec(self, spy: _Spy) -> str | None:
        """DAEMON or EXEC if spy's process has exec'd since the watch saw it
        (its command line changed; a forkserver's writers keep the daemon's):
        a py-spy attached before an exec reads nothing after it. The watch's
        own record of it is made the new program's, for its children's
        chains and rates."""
        now = " ".join(procfs.read_cmdline(HOST, spy.pid))
        if not now or now == spy.chain[-1][1]:
            return None
        spy.chain[-1] = (spy.pid, now)
        if spy.pid in self._seen:
            self._seen[spy.pid] = (self._seen[spy.pid][0], now)
        if not is_daemon(now):
            return EXEC
        if len(spy.chain) > 1:  # no writer: its parent's next child may have the full rate
            self._full_starts.get(spy.chain[-2][0], set()).discard(spy.pid)
        return DAEMON

    def _is_python(self, pid: int) -> bool:
        if _is_python(pid):
            return True
        try:  # a Python not named python* (an embedded interpreter) has a journal
            return self._journals is not None and any(
                n.startswith(f"{pid}-") and n.endswith(journal.EVENTS_SUFFIX) for n in os.listdir(self._journals))
        except OSError:
            return False

    def _chain(self, pid: int, seen: dict[int, tuple[int, str]]) -> list[tuple[int, str]]:
        """The processes from CMD down to pid, as py-spy --subprocesses would
        root its stacks (the Python ones the watch has seen)."""
        chain, at = [], pid
        while at in seen:
            chain.insert(0, (at, seen[at][1]))
            at = seen[at][0] if at != self.pid else -1
        return chain

    def _begin(self, pid: int, chain: list[tuple[int, str]], writer_of: int | None, free_share: float) -> None:
        """A new Python process's first py-spy: a writer's (writer_of: its
        parent's pid) at the full rate for its start-up (then AFTER_STARTUP at
        the sparse rate) if its parent has had fewer than FULL_RATE_STARTS,
        the rest's at the sparse rate for their whole life (multiprocessing's
        daemons at DAEMON_RATE_HZ); every one at the full rate for its whole
        life if the rates are not split."""
        o = self.options
        full = self._full_starts.setdefault(writer_of, set()) if writer_of else None
        if not o.split:
            self._launch(pid, chain, o.rate_hz, WHOLE)
        elif full is not None and len(full) < FULL_RATE_STARTS:
            full.add(pid)
            rate = adapted_rate(o.rate_hz, free_share, o.busy_rate_hz)
            self._launch(pid, chain, rate, STARTUP, StartupEnd(self._journals, pid, time.monotonic_ns())
                         if o.sparse_rate_hz < rate else None)
        else:  # (a forkserver's later writers have its command line: daemons by theirs, not writers)
            daemon = full is None and is_daemon(chain[-1][1])
            self._launch(pid, chain, min(o.sparse_rate_hz, DAEMON_RATE_HZ) if daemon else o.sparse_rate_hz, WHOLE)

    def _restart(self, spy: _Spy) -> None:
        self._launch(spy.pid, spy.chain, spy.rate_hz, spy.stage, spy.startup, name=spy.name)

    def _launch(self, pid: int, chain: list[tuple[int, str]], rate_hz: int, stage: str,
                startup: StartupEnd | None = None, name: str | None = None) -> None:
        if name is None:
            name = f"{pid}-{self._names:03d}.raw"
            self._names += 1
        # Named from the stacks directory, py-spy's working directory: a run
        # directory whose path is not UTF-8 is no argument py-spy takes.
        argv = self.command(Path(name), pid, rate_hz)
        try:
            # Its words through a pipe, not into a file: on a full disk they still
            # arrive (a few lines: the pipe holds them until py-spy ends).
            process = quiet.masked(self._spawn_mask, lambda: subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True, cwd=self.dir))
        except OSError as exc:
            self._fail(f"cannot run py-spy ({self.executable}): {exc.strerror}")
            self._done.set()
            return
        self._ran = True
        self._spies[pid] = _Spy(pid, chain, rate_hz, stage, name, argv, process, time.monotonic_ns(), startup)

    def _collect(self, spy: _Spy) -> None:
        """An ended py-spy: its file compressed and indexed, or its failure
        handled; and the next py-spy of its process, if it has one."""
        del self._spies[spy.pid]
        ended_ns = time.monotonic_ns()
        with spy.process.stdout:
            said = spy.process.stdout.read().decode("utf-8", "replace")
        self._log(spy.argv, said)
        file, status = self.dir / spy.name, spy.process.returncode
        if status != 0 and file.exists():  # cut off writing (a full disk)?
            keep_whole_lines(file)  # whole lines only, and none is no segment
        full = self._note_write_failure(said)
        # Its next py-spy: the new program's after an exec (none for a program that is not
        # Python: _look's rule), else the sparse rate after its start-up.
        if spy.ended and not full and not self._done.is_set() and _alive(spy.pid):
            if spy.ended == EXEC:
                if self._is_python(spy.pid):
                    self._launch(spy.pid, spy.chain, spy.rate_hz, spy.stage, spy.startup)
            elif spy.ended == DAEMON:
                self._launch(spy.pid, spy.chain, min(self.options.sparse_rate_hz, DAEMON_RATE_HZ), WHOLE)
            else:
                self._launch(spy.pid, spy.chain, self.options.sparse_rate_hz, AFTER_STARTUP)
        if file.exists():
            self._add_segment(said, {
                "file": compress(file, process_chain(spy.chain)), "root_pid": self.pid, "pid": spy.pid,
                "rate_hz": spy.rate_hz, "stage": spy.stage, "started_ns": spy.started_ns,
                "ended_ns": ended_ns,
                "ended": spy.ended or ("exit" if not _alive(spy.pid) else "record_stop"), "exit_status": status,
                "cpu_s": round(spy.cpu_s, 4)})
            if full:
                self._done.set()  # a full disk has no room for the next segments either
        elif full:
            self._done.set()
        elif any(p in said for p in _PERMISSION):
            self._fail(f"py-spy cannot attach to pid {spy.pid}: no ptrace permission")
            self._done.set()  # the others would be refused alike
        elif _NO_PYTHON in said:  # not yet (the interpreter starting), or not at all: try again
            self._no_python = True
            if not self._done.is_set() and _alive(spy.pid):
                self._retry[spy.pid] = (time.monotonic_ns() + int(_RETRY_S * 1e9), spy)
        elif spy.pid == self.pid and _alive(spy.pid) and not self._done.is_set():
            # (The others' failures are quiet, in py-spy.log: a process that ended while
            # py-spy attached, or that was not Python after all.)
            last = [line for line in said.splitlines() if line.strip() and not line.startswith(" ")]
            self._fail(f"py-spy failed (exit status {status}): {last[0] if last else 'no message'}")

    def _end_all(self) -> None:
        """Once CMD has ended (or record stops): the py-spys still running end
        by themselves once their processes are gone, within a grace; the rest
        are asked with SIGINT (they write what they have), then killed."""
        self._retry.clear()
        deadline = time.monotonic() + self._grace_s
        while self._spies:
            for spy in list(self._spies.values()):
                if self._reaped(spy):
                    self._collect(spy)
            if self._spies and time.monotonic() >= deadline:
                for spy in list(self._spies.values()):
                    _signal(spy.process, signal.SIGINT)
                    if not self._reaped(spy, _KILL_WAIT_S):
                        _signal(spy.process, signal.SIGKILL)
                        self._reaped(spy, None)
                    self._collect(spy)
            elif self._spies:
                time.sleep(_CHILDREN_S / 5)

    @staticmethod
    def _reaped(spy: _Spy, wait_s: float | None = 0.0) -> bool:
        """Whether spy's py-spy has ended, waiting up to wait_s (None: until
        it does); reaped here with wait4, for its CPU time (spy.cpu_s)."""
        end = None if wait_s is None else time.monotonic() + wait_s
        while True:
            pid, status, usage = os.wait4(spy.process.pid, 0 if end is None else os.WNOHANG)
            if pid:
                spy.process.returncode = os.waitstatus_to_exitcode(status)
                spy.cpu_s = usage.ru_utime + usage.ru_stime
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.01)

    def _add_segment(self, said: str, segment: dict) -> None:
        counts = re.search(r"Samples: (\d+) Errors: (\d+)", said)
        segment["samples"] = int(counts.group(1)) if counts else None
        segment["errors"] = int(counts.group(2)) if counts else None
        with self._lock:
            self.segments.append(segment)
            self._write_index()

    def _log(self, argv: list[str], said: str) -> None:
        """py-spy's command and words, kept in py-spy.log while there is room."""
        try:
            with open(ownfile.create(self.dir / "py-spy.log"), "ab") as log:
                log.write(f"$ {' '.join(argv)}\n{said}".encode("utf-8", "surrogateescape"))
        except OSError:
            pass

    def _note_write_failure(self, said: str) -> bool:
        """Whether py-spy said it could not write its file (and say so once)."""
        found = re.search(r"No space left on device|Disk quota exceeded|Read-only file system", said)
        if found and self.write_error is None:
            self.write_error = f"py-spy could not write its stacks: {found.group(0)}"
            if not self.segments:
                self.reason = self.write_error
        return bool(found)

    def _cannot_write(self, exc: OSError) -> None:
        if self.write_error is None:
            self.write_error = f"cannot write the stacks into {self.dir}: {exc.strerror or exc}"
        if not self.segments:
            self.reason = self.write_error

    def _broke(self) -> None:
        """An unexpected error in the watch: said in one line, its traceback in py-spy.log."""
        import traceback  # (only here: record's process goes without it)

        self._log(["(writerprof record's py-spy watch)"], traceback.format_exc())
        error = sys.exc_info()[1]
        self._fail(f"record's py-spy watch failed: {type(error).__name__}: {error}")
        self._done.set()

    def _fail(self, reason: str) -> None:
        """Say why once: the first failure is the one to fix."""
        if self.reason is None:
            self.reason = reason
            self._warn(reason)

    def stop(self, grace_s: float | None = None) -> dict:
        """After CMD ended: let the py-spys write their files (or make them),
        and say what was taken. Each is given a moment (grace_s, default
        _FLUSH_WAIT_S) to see its process gone, then SIGINT: a process left
        running after CMD does not keep record waiting."""
        if grace_s is not None:
            self._grace_s = grace_s
        self._done.set()
        self._thread.join()
        if self._ran:  # a py-spy that never ran has no version worth a process
            self.version = py_spy_version(self.executable)
        with self._lock:
            if not self.segments and self.reason is None:
                self.reason = ("no Python process was found in CMD's process tree" if not self._ran or
                               self._no_python else "CMD ended before py-spy attached")
            self._write_index()
        return self.outcome()

    def outcome(self) -> dict:
        with self._lock:
            segments = list(self.segments)
        taken = bool(segments)
        startup = [s for s in segments if s.get("stage") == STARTUP]
        return {**self.options.settings(), "taken": taken,
                "reason": None if taken else (self.reason or "py-spy wrote no stacks"),
                "py_spy": self.version, "segments": len(segments),
                "samples": sum(s["samples"] or 0 for s in segments),
                "tree_rate_hz": self.options.tree_rate_hz,
                "full_rate_processes": len({s["pid"] for s in startup}),
                "full_rate_samples": sum(s["samples"] or 0 for s in startup),
                "busy_cpu_processes": len({s["pid"] for s in startup if s["rate_hz"] != self.options.rate_hz}),
                "after_startup_processes": len({s["pid"] for s in segments if s.get("stage") == AFTER_STARTUP})}

    def _write_index(self) -> None:
        o = self.options
        index = {"py_spy": self.version, "executable": self.executable,
                 "command": self.command(self.dir / "PID-NNN.raw", "PID", o.tree_rate_hz), **o.settings(),
                 "tree_rate_hz": o.tree_rate_hz,
                 "full_rate_command": self.command(self.dir / "PID-NNN.raw", "PID", o.rate_hz) if o.split else None,
                 "segments": self.segments}
        try:
            ownfile.replace(self.dir / "stacks.json", (json.dumps(index, indent=2) + "\n").encode())
        except OSError as exc:
            self._cannot_write(exc)


def _is_python(pid: int) -> bool:
    return pythons.is_python(procfs.read_exe(HOST, pid))


def _alive(pid: int) -> bool:
    """Whether pid runs (not gone, not a zombie waiting to be reaped)."""
    stat = procfs.read_stat(HOST, pid)
    return stat is not None and stat.state not in "ZX"


def _signal(process: subprocess.Popen, signum: int) -> None:
    """Signal a py-spy that _reaped has not reaped (a zombie keeps its pid:
    no other process has it). Not Popen.send_signal, whose poll() would reap
    a py-spy that just ended: its wait4 then fails, its CPU time lost."""
    if process.returncode is None:
        try:
            os.kill(process.pid, signum)
        except ProcessLookupError:
            pass


def start(pid: int, stacks_dir: Path, options: StackOptions, warn, journals: Path | None = None,
          tree: procfs.ProcessTree | None = None) -> tuple[StackRecorder | None, dict]:
    """py-spy following pid's process tree once a Python process is there
    (journals: where the probe journals them; tree: pid's, shared); or None
    and the outcome saying why not (warn has then been called with the one
    line to show)."""
    if not options.enabled:
        return None, {**options.settings(), "taken": False, "reason": "not requested (--no-stacks)"}
    executable = find_py_spy()
    if executable is None:
        where = os.environ.get(PY_SPY_ENV) or f"next to {sys.executable} or on PATH"
        reason = f"py-spy not found ({where}); fix: pip install py-spy, or record with --no-stacks"
        warn(reason)
        return None, {**options.settings(), "taken": False, "reason": reason}
    problem = ptrace_problem() or read_problem(pid)
    if problem is not None:
        reason = f"py-spy cannot attach: {problem}"
        warn(f"{reason}; {FIX}")
        return None, {**options.settings(), "taken": False, "reason": reason}
    recorder = StackRecorder(pid, stacks_dir, options, executable, warn=lambda r: warn(
        f"{r}; {FIX}" if "ptrace" in r else r), journals=journals, tree=tree)
    try:
        recorder.start()
    except OSError as exc:  # no room for the stacks directory: no stacks, not a failed recording
        reason = f"cannot make {stacks_dir}: {exc.strerror or exc}"
        return None, {**options.settings(), "taken": False, "reason": reason}
    return recorder, recorder.outcome()
