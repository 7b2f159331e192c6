"""Python stacks of CMD's whole process tree, sampled by py-spy while
`writerprof record` runs it, at two rates (issue 16; the policy is
writerprof.record.stackrate):

- One `py-spy record --pid CMD --subprocesses --idle --format raw` follows CMD
  and every Python process below it, at any depth (the forkserver daemon's
  children are its descendants, and are followed there), at the sparse rate
  (StackOptions.sparse_rate_hz, 10 Hz): CMD, MPI ranks, multiprocessing's
  forkserver and resource tracker.
- Each process that a Python process of the tree started (writers, workers:
  `stackrate.full_rate`) gets a `py-spy record --pid PID` of its own at the
  full rate (StackOptions.rate_hz, 100 Hz; StackOptions.busy_rate_hz, if
  given, for those that start while the CPUs have under a quarter of their
  time free), from the moment record's watch of the tree
  (every 50 ms, the kernel's children files) sees it, for its start-up
  (stackrate.StartupEnd: to half a second into its target, per its
  journal); then that py-spy is stopped (it writes its file) and a second
  one of its own samples it at the sparse rate to its end. Its files get the
  process chain py-spy --subprocesses would have written put at the root of
  every line, and its stacks replace the tree py-spy's sparse ones of that
  process (writerprof.run.stacks).

Why: py-spy's reads cost CPU in proportion to the samples and to the depth
of the stacks (on this project's 2-CPU machine about 0.1 ms a sample of 5
frames, 0.5 ms of 80, the depth of a writer's imports), and the run loses
that CPU where its CPUs are busy. One py-spy at 100 Hz for the whole tree
took 3818 samples of a 4-save forkserver reproducer with a CPU-bound
generator (0.55 CPU s, 10% of the run's); at two rates, 781 (525 of them
the writers'). The writers' start-up and saves, which the stacks are for,
keep the full rate; the producer's threads, the idle daemons and py-spy's
look for new children do not take it. With StackOptions.sparse_rate_hz at
or above rate_hz (record --sparse-stack-rate 100), or py-spy pausing the
processes (two py-spys pausing one process would stand in each other's
way), it is one py-spy for the whole tree at rate_hz, as before.

The options, for both:

- raw (collapsed) output: one line per distinct stack with its count, each
  stack rooted in the chain of `process PID:"CMDLINE"` frames from CMD down to
  the sampled process, so every stack is tied to its pid (and its parent's),
  and the file stays small however long the run: py-spy aggregates as it goes.
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
- threads are not told apart (no --threads): a process's threads add up in
  its profile, and stacks of runs compare (thread ids differ from run to run).

py-spy runs in a session of its own, so that a Ctrl-C at the terminal reaches
CMD and not py-spy. It stops by itself when CMD's process tree is gone and
writes its file; `StackRecorder.stop` waits a moment for that, then asks with
SIGINT (py-spy writes what it has on SIGINT), and kills it only if it still
hangs: a process that outlives CMD (a daemon, a grandchild left running)
does not keep record waiting. py-spy never fails the run: if it is missing or
cannot attach (ptrace), record says so in one line, with the fix, and carries
on without stacks; if the run directory is full, what py-spy could not write
is left out and said (StackRecorder.write_error).

py-spy is started once a Python process is in CMD's tree (a journal in the
run directory, or a process whose executable is named python*): a CMD that
never runs Python costs no py-spy at all (`record -- sh -c 'sleep 1'` took
1.63-1.69 s with py-spy retrying, 1.16-1.28 s with --no-stacks; now 1.20-1.22
s either way, 5 runs each). If py-spy still finds no
Python process (the interpreter not yet started up), it is started again,
every half second while CMD runs, into the same segment file name. A segment
is one run of py-spy that sampled (the tree's, NNN.raw, or a process's own,
PID-NNN.raw, with its pid and rate in stacks.json); the files are described
in writerprof.run.layout.
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
from dataclasses import asdict, dataclass
from pathlib import Path

from writerprof.probes.writerprof_probe import format as journal
from writerprof.record import procfs
from writerprof.record.ptrace import FIX, PY_SPY_ENV, find_py_spy, ptrace_problem, py_spy_version, read_problem
from writerprof.record.rawstacks import compress, keep_whole_lines, process_chain
from writerprof.record.stackrate import FreeCpu, StartupEnd, adapted_rate, full_rate, is_daemon
from writerprof.record.system import HOST

RATE_HZ = 100  # the writers' (processes started by a Python process of the tree)
SPARSE_RATE_HZ = 10  # the rest: CMD, MPI ranks, multiprocessing's daemons
_RETRY_S = 0.5  # between py-spy's attempts to find a Python process in CMD's tree
_WATCH_S = 0.05  # between looks for CMD's first Python process, before py-spy starts
_CHILDREN_S = 0.05  # between looks for new processes to sample at the full rate (~50 us a look)
_FLUSH_WAIT_S = 1.0  # for py-spy to notice CMD's end and write its file, before SIGINT
_KILL_WAIT_S = 10.0  # after SIGINT, before SIGKILL
_NO_PYTHON = "No python processes found"
_PERMISSION = ("Permission Denied", "Operation not permitted", "permission denied", "EPERM")


@dataclass(frozen=True)
class StackOptions:
    """How record samples stacks (see the module's docstring for why idle and
    nonblocking are on)."""

    enabled: bool = True
    rate_hz: int = RATE_HZ
    native: bool = False
    idle: bool = True
    nonblocking: bool = True
    sparse_rate_hz: int = SPARSE_RATE_HZ
    busy_rate_hz: int | None = None  # the full rate while the CPUs are busy (None: rate_hz always)

    def settings(self) -> dict:
        return asdict(self)

    @property
    def split(self) -> bool:
        """Whether the writers have py-spys of their own at rate_hz, the tree's
        at sparse_rate_hz (see the module's docstring). Only non-blocking: two
        py-spys that pause a process would stand in each other's way."""
        return self.nonblocking and self.sparse_rate_hz < self.rate_hz

    @property
    def tree_rate_hz(self) -> int:
        return self.sparse_rate_hz if self.split else self.rate_hz


class StackRecorder:
    """py-spy following CMD's process tree into stacks_dir, until stop().
    journals: the directory the probe journals CMD's processes into (a
    journal there is a Python process to sample)."""

    def __init__(self, pid: int, stacks_dir: Path, options: StackOptions, executable: str, warn,
                 journals: Path | None = None):
        self.pid, self.dir, self.options, self.executable = pid, Path(stacks_dir), options, executable
        self._warn = warn
        self._journals = journals
        self._done = threading.Event()  # CMD ended: stop restarting py-spy
        self._lock = threading.Lock()
        self._spy: subprocess.Popen | None = None
        self._own: dict[int, subprocess.Popen] = {}  # pid -> the py-spy of its own (full rate)
        self._own_threads: list[threading.Thread] = []
        self._watch: threading.Thread | None = None
        self._tree_segments = 0
        self._own_segments = 0  # the own segments' files are numbered in one sequence
        self.segments: list[dict] = []
        self.reason: str | None = None  # why there are no stacks, once known
        self.write_error: str | None = None  # what could not be written (a full run directory)
        self.version: str | None = None  # asked once CMD has ended, not while it starts
        self._thread = threading.Thread(target=self._follow, name="writerprof-py-spy", daemon=True)

    def command(self, output: Path, pid: int | str | None = None, rate_hz: int | None = None) -> list[str]:
        """py-spy's argv: for CMD's whole tree (at the tree's rate), or for
        process pid alone (at rate_hz, default the full rate)."""
        o = self.options
        follow = ["--pid", str(self.pid), "--subprocesses"] if pid is None else ["--pid", str(pid)]
        rate = o.tree_rate_hz if pid is None else rate_hz or o.rate_hz
        argv = [self.executable, "record", *follow, "--format", "raw", "--output", str(output), "--rate", str(rate)]
        argv += ["--idle"] * o.idle + ["--native"] * o.native + ["--nonblocking"] * o.nonblocking
        return argv

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._write_index()
        self._tree = procfs.ProcessTree(HOST, self.pid)
        # The first look now, not in the thread: a Python CMD is one at once (it has been exec'd).
        self._python = self._python_there()
        self._thread.start()

    def _follow(self) -> None:
        try:
            if self._python_seen():
                self._follow_py_spy()
        except OSError as exc:  # the run directory full or gone: the stacks end here
            self._cannot_write(exc)

    def _watch_children(self) -> None:
        """Give each process that full_rate picks a py-spy of its own, from
        the moment it is seen in CMD's tree, until CMD ends."""
        tree, free = procfs.ProcessTree(HOST, self.pid), FreeCpu(HOST)
        seen: dict[int, tuple[int, bool, str]] = {}  # pid -> (start ticks, is Python, command line)
        parents: dict[int, int] = {}
        while True:
            free.look(time.monotonic_ns())
            for pid in tree.pids():
                stat = procfs.read_stat(HOST, pid)
                if stat is None or (pid in seen and seen[pid][0] == stat.start_ticks):
                    continue
                cmdline = " ".join(procfs.read_cmdline(HOST, pid))
                seen[pid], parents[pid] = (stat.start_ticks, _is_python(pid), cmdline), stat.ppid
                parent = seen.get(stat.ppid)
                if seen[pid][1] and full_rate(pid, self.pid, cmdline, parent and parent[1:]):
                    chain, at = [], pid
                    while at in seen:  # up to CMD: the chain py-spy --subprocesses would write
                        chain.insert(0, (at, seen[at][2]))
                        at = parents[at] if at != self.pid else -1
                    self._start_own(pid, chain, adapted_rate(self.options.rate_hz, free.share,
                                                             self.options.busy_rate_hz))
            if self._done.wait(_CHILDREN_S) or not _alive(self.pid):
                return

    def _start_own(self, pid: int, chain: list[tuple[int, str]], rate_hz: int) -> None:
        with self._lock:
            if self._done.is_set():
                return
            thread = threading.Thread(target=self._follow_own, args=(pid, chain, rate_hz),
                                      name=f"writerprof-py-spy-{pid}", daemon=True)
            self._own_threads.append(thread)
        thread.start()

    def _own_name(self, pid: int) -> str:
        with self._lock:
            self._own_segments += 1
            return f"{pid}-{self._own_segments - 1:03d}.raw"

    def _follow_own(self, pid: int, chain: list[tuple[int, str]], rate_hz: int) -> None:
        """One process's py-spys, until it ends (or stop()): at rate_hz for
        its start-up (stackrate.StartupEnd), then, stopped (it writes its
        file), a second one at the sparse rate. Their failures are quiet (the
        process gone before py-spy attached, or not Python after all): the
        tree's py-spy says what matters."""
        startup = StartupEnd(self._journals, pid, time.monotonic_ns())
        sparse = self.options.sparse_rate_hz < rate_hz
        if self._own_segment(pid, chain, rate_hz, "startup", startup if sparse else None) and sparse:
            self._own_segment(pid, chain, self.options.sparse_rate_hz, "after_startup", None)

    def _own_segment(self, pid: int, chain: list[tuple[int, str]], rate_hz: int, stage: str,
                     startup: StartupEnd | None) -> bool:
        """One py-spy of process pid at rate_hz, until the process ends, stop(),
        or (startup given) its start-up ends; whether it ended for that last."""
        name = self._own_name(pid)
        argv = self.command(Path(name), pid=pid, rate_hz=rate_hz)
        started = time.monotonic_ns()
        try:
            with self._lock:
                if self._done.is_set():
                    return False
                spy = self._own[pid] = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                        stderr=subprocess.STDOUT, start_new_session=True,
                                                        cwd=self.dir)
            ended = None
            while True:
                try:  # (its words read as they come: a full pipe would stop py-spy)
                    said = spy.communicate(timeout=_CHILDREN_S if startup and not ended else None)[0]
                    break
                except subprocess.TimeoutExpired:
                    ended = "daemon" if _exec_into_daemon(pid, chain[-1][1]) else startup.ended(time.monotonic_ns())
                    if ended:  # py-spy writes what it has on SIGINT
                        _signal(spy, signal.SIGINT)
            said = said.decode("utf-8", "replace")
            status = spy.returncode
            self._log(argv, said)
            file = self.dir / name
            if status != 0 and file.exists():
                keep_whole_lines(file)
            full = self._note_write_failure(said)
            if file.exists():
                self._add_segment(said, {
                    "file": compress(file, process_chain(chain)), "root_pid": self.pid, "pid": pid,
                    "rate_hz": rate_hz, "stage": stage, "started_ns": started, "ended_ns": time.monotonic_ns(),
                    "ended": ended or ("exit" if not _alive(pid) else "record_stop"), "exit_status": status})
            elif not full and any(p in said for p in _PERMISSION):
                self._log(argv, "(no stacks of its own: no ptrace permission)\n")
            return ended is not None and not full and not self._done.is_set() and _alive(pid)
        except OSError as exc:
            self._cannot_write(exc)
            return False

    def _add_segment(self, said: str, segment: dict) -> None:
        counts = re.search(r"Samples: (\d+) Errors: (\d+)", said)
        segment["samples"] = int(counts.group(1)) if counts else None
        segment["errors"] = int(counts.group(2)) if counts else None
        with self._lock:
            self.segments.append(segment)
            self._write_index()

    def _python_seen(self) -> bool:
        """Wait until CMD's tree has a Python process (True) or CMD ends (False)."""
        while True:
            if self._python or self._python_there():
                return True
            if self._done.wait(_WATCH_S) or not _alive(self.pid):
                self.reason = "no Python process was found in CMD's process tree"
                return False

    def _python_there(self) -> bool:
        return self._journaled() or any(_is_python(pid) for pid in self._tree.pids())

    def _journaled(self) -> bool:
        try:
            return self._journals is not None and any(
                name.endswith(journal.EVENTS_SUFFIX) for name in os.listdir(self._journals))
        except OSError:
            return False

    def _follow_py_spy(self) -> None:
        while not self._done.is_set():
            name = f"{self._tree_segments:03d}.raw"
            # Named from the stacks directory, py-spy's working directory: a run
            # directory whose path is not UTF-8 is no argument py-spy takes.
            argv = self.command(Path(name))
            started = time.monotonic_ns()
            try:
                with self._lock:
                    if self._done.is_set():
                        return
                    # Its words through a pipe, not into a file: on a full disk they still arrive.
                    self._spy = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                                 stderr=subprocess.STDOUT, start_new_session=True, cwd=self.dir)
                    # The watch for the processes of their own, once the tree's py-spy runs
                    # (not before: CMD may end at once, and that py-spy comes first).
                    if self.options.split and self._watch is None:
                        self._watch = threading.Thread(target=self._watch_children, daemon=True,
                                                       name="writerprof-py-spy-children")
                        self._watch.start()
            except OSError as exc:
                self._fail(f"cannot run py-spy ({self.executable}): {exc.strerror}")
                return
            with self._spy.stdout:
                said = self._spy.stdout.read().decode("utf-8", "replace")
            status = self._spy.wait()
            self._log(argv, said)
            if status != 0 and (self.dir / name).exists():  # cut off writing (a full disk)?
                keep_whole_lines(self.dir / name)  # whole lines only, and none is no segment
            if (self.dir / name).exists():
                full = self._note_write_failure(said)
                self._tree_segments += 1
                self._add_segment(said, {
                    "file": compress(self.dir / name), "root_pid": self.pid, "rate_hz": self.options.tree_rate_hz,
                    "started_ns": started, "ended_ns": time.monotonic_ns(), "exit_status": status})
                if full or status == 0 or self._done.is_set() or not _alive(self.pid):
                    return  # (a full disk has no room for a next segment either)
                continue  # it wrote what it had and ended early: follow on in a new segment
            if self._note_write_failure(said):
                return
            if any(p in said for p in _PERMISSION):
                self._fail(f"py-spy cannot attach to CMD (pid {self.pid}): no ptrace permission")
                return
            if _NO_PYTHON in said:  # not yet, or not at all: try again while CMD runs
                if self._done.wait(_RETRY_S) or not _alive(self.pid):
                    if not self._tree_segments:
                        self.reason = "no Python process was found in CMD's process tree"
                    return
                continue
            if self._done.is_set() or not _alive(self.pid):
                if not self._tree_segments:  # CMD ended before py-spy could attach
                    self.reason = "CMD ended before py-spy attached"
                return
            last = [line for line in said.splitlines() if line.strip() and not line.startswith(" ")]
            self._fail(f"py-spy failed (exit status {status}): {last[0] if last else 'no message'}")
            return

    def _log(self, argv: list[str], said: str) -> None:
        """py-spy's command and words, kept in py-spy.log while there is room."""
        try:
            with open(self.dir / "py-spy.log", "ab") as log:
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

    def _fail(self, reason: str) -> None:
        self.reason = reason
        self._warn(reason)

    def stop(self, grace_s: float | None = None) -> dict:
        """After CMD ended: let py-spy write its file (or make it), and say
        what was taken. py-spy is given a moment (grace_s, default
        _FLUSH_WAIT_S) to see the tree gone, then SIGINT: a process left
        running after CMD does not keep record waiting."""
        self._done.set()
        with self._lock:
            spy, spies = self._spy, [self._spy, *self._own.values()]
        deadline = time.monotonic() + (_FLUSH_WAIT_S if grace_s is None else grace_s)
        for each in spies:  # one grace for all: each ends once its processes are gone
            if each is not None:
                _stop(each, max(0.0, deadline - time.monotonic()))
        self._thread.join()
        for thread in self._own_threads:
            thread.join()
        if spy is not None:  # a py-spy that never ran has no version worth a process
            self.version = py_spy_version(self.executable)
        with self._lock:
            self._write_index()
        return self.outcome()

    def outcome(self) -> dict:
        taken = bool(self.segments)
        own = [s for s in self.segments if "pid" in s and s.get("stage") != "after_startup"]
        return {**self.options.settings(), "taken": taken,
                "reason": None if taken else (self.reason or "py-spy wrote no stacks"),
                "py_spy": self.version, "segments": len(self.segments),
                "samples": sum(s["samples"] or 0 for s in self.segments),
                "tree_rate_hz": self.options.tree_rate_hz,
                "full_rate_processes": len({s["pid"] for s in own}),
                "full_rate_samples": sum(s["samples"] or 0 for s in own),
                "busy_cpu_processes": len({s["pid"] for s in own if s["rate_hz"] != self.options.rate_hz}),
                "after_startup_processes": len({s["pid"] for s in self.segments if s.get("stage") == "after_startup"})}

    def _write_index(self) -> None:
        index = {"py_spy": self.version, "executable": self.executable,
                 "command": self.command(self.dir / "NNN.raw"), **self.options.settings(),
                 "tree_rate_hz": self.options.tree_rate_hz,
                 "full_rate_command": self.command(self.dir / "PID-NNN.raw", pid="PID") if self.options.split else None,
                 "segments": self.segments}
        temporary = self.dir / f".stacks.json.{os.getpid()}.tmp"
        try:
            temporary.write_text(json.dumps(index, indent=2) + "\n")
            os.replace(temporary, self.dir / "stacks.json")
        except OSError as exc:
            try:
                temporary.unlink(missing_ok=True)
            except OSError:
                pass
            self._cannot_write(exc)


def _is_python(pid: int) -> bool:
    exe = procfs.read_exe(HOST, pid)
    return exe is not None and os.path.basename(exe).startswith(("python", "pypy"))


def _exec_into_daemon(pid: int, seen_cmdline: str) -> bool:
    """Whether process pid has exec'd one of multiprocessing's daemons since
    the watch saw it (a forkserver's writers keep the daemon's command line:
    only a change counts)."""
    now = " ".join(procfs.read_cmdline(HOST, pid))
    return bool(now) and now != seen_cmdline and is_daemon(now)


def _alive(pid: int) -> bool:
    return os.path.exists(f"/proc/{pid}")


def _stop(spy: subprocess.Popen, grace_s: float) -> None:
    """Let a py-spy end by itself within grace_s, else SIGINT (it writes what
    it has), else SIGKILL."""
    try:
        spy.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal(spy, signal.SIGINT)
        try:
            spy.wait(timeout=_KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            _signal(spy, signal.SIGKILL)
            spy.wait()


def _signal(process: subprocess.Popen, signum: int) -> None:
    try:
        process.send_signal(signum)
    except ProcessLookupError:
        pass


def start(pid: int, stacks_dir: Path, options: StackOptions, warn,
          journals: Path | None = None) -> tuple[StackRecorder | None, dict]:
    """py-spy following pid's process tree once a Python process is there
    (journals: where the probe journals them); or None and the outcome saying
    why not (warn has then been called with the one line to show)."""
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
        f"{r}; {FIX}" if "ptrace" in r else r), journals=journals)
    try:
        recorder.start()
    except OSError as exc:  # no room for the stacks directory: no stacks, not a failed recording
        reason = f"cannot make {stacks_dir}: {exc.strerror or exc}"
        return None, {**options.settings(), "taken": False, "reason": reason}
    return recorder, recorder.outcome()
