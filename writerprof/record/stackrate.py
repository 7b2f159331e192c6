"""At what rate py-spy samples which process of CMD's tree (issue 16): the
first FULL_RATE_STARTS processes each Python process of the tree started
(writers, workers: their start-up and their saves are what the stacks are
for) at the full rate; the rest (CMD, MPI ranks, multiprocessing's daemons,
a parent's later writers) sparsely; each process by py-spys of its own
(writerprof.record.pyspy). And, if asked (record
--busy-stack-rate), a lower rate for the writers that start while the CPUs
have little free time: py-spy's reads compete with the run for CPU (about
0.1 ms a sample for a shallow stack, 0.5 ms for one of 80 frames, the depth
of a writer's imports at start-up, on this project's 2-CPU machine), and
where the CPUs are busy that time is taken from the run. Not by default: the
CPUs of a shared machine are busy with others' work too, and a writer's
target can be short (84 ms for a 64 MiB save here: at 50 Hz, none of its
samples fell in it one time in four on a loaded machine), while its start-up
is what the stacks are for.

A writer's full rate lasts for its start-up (StartupEnd): until its
journal says its target began (`target_start`) and TARGET_HEAD_S more, or,
for a process that journals none (not a multiprocessing child, or not
probed), STARTUP_CAP_S. Then it is sampled at the sparse rate by a second
py-spy of its own: the start-up diagnosis needs the __main__ re-run and the
imports at the full rate; the head of the target keeps a short save's
stacks (84 ms for 64 MiB here) beside the start-up's, and a long-lived
writer's time after is in its journal already."""

from __future__ import annotations

import json
import os
from pathlib import Path

from writerprof.probes.writerprof_probe import format as journal
from writerprof.record.system import HOST, System

# The command lines of multiprocessing's daemons (started by a Python process,
# but not writers: they wait on a socket or a pipe for the run's whole life).
DAEMONS = ("from multiprocessing.forkserver import main", "from multiprocessing.resource_tracker import main",
           "from multiprocessing.semaphore_tracker import main")
BUSY_BELOW = 0.25  # free share of the CPUs (idle + iowait) under which the CPUs are busy
_WINDOW_NS = 200_000_000  # the free share is measured over at least this long
# The full rate's end for a process that journals no target start (the
# probe's format, which its own sampler keeps to too).
STARTUP_CAP_S = journal.FULL_RATE_CAP_NS / 1e9
TARGET_START = "target_start"  # the journal's event: the first line of the target
TARGET_HEAD_S = journal.FULL_RATE_HEAD_NS / 1e9  # of the target kept at the full rate (its first save's calls)
# A parent's writers re-run the same start-up (forkserver's and spawn's
# __main__ re-run and its imports; little or none under fork): the first
# FULL_RATE_STARTS (the probe's format: its sampler keeps to it too) give the
# start-up's flamegraph at the full rate (~250 samples of a 1.2 s
# start-up), and each later one, at the sparse rate from its start, adds its
# own, weighted, for the cost of one shallow py-spy, not of ~130 samples of 80
# frames (0.06-0.1 CPU s each: a 4-save forkserver reproducer's py-spys
# took 0.56 CPU s, 0.34 of it its writers' start-ups).
FULL_RATE_STARTS = journal.FULL_RATE_STARTS


def full_rate(pid: int, root: int, cmdline: str, parent: tuple[bool, str] | None) -> bool:
    """Whether process pid (its command line) is sampled at the full rate, in
    a py-spy of its own: a process that a Python process of CMD's tree started
    (parent: whether that parent is Python, and its command line), not CMD,
    and not one of multiprocessing's daemons (the forkserver's children share
    its command line: they are its writers)."""
    if pid == root or parent is None or not parent[0]:
        return False
    return not (cmdline != parent[1] and is_daemon(cmdline))


def is_daemon(cmdline: str) -> bool:
    """Whether a command line is one of multiprocessing's daemons'. A child
    seen between its fork and its exec still has its parent's: the watch
    may give a daemon-to-be the full rate; its exec (the command line asked
    again in the first moments of its py-spy: pyspy.StackRecorder._exec)
    then starts the daemon's own py-spy at the daemons' rate."""
    return any(daemon in cmdline for daemon in DAEMONS)


def parse_cpu_line(text: str) -> tuple[int, int] | None:
    """(free ticks: idle + iowait, all ticks) from /proc/stat's first line."""
    first = text.split("\n", 1)[0].split()
    if len(first) < 6 or first[0] != "cpu" or not all(f.isdigit() for f in first[1:]):
        return None
    ticks = [int(f) for f in first[1:9]]  # user nice system idle iowait irq softirq steal (guest is in user)
    return ticks[3] + ticks[4], sum(ticks)


class FreeCpu:
    """The free share of the host's CPUs between looks at /proc/stat, over
    at least _WINDOW_NS; 1.0 until two looks (or without /proc/stat)."""

    def __init__(self, system: System = HOST):
        self.system = system
        self.share = 1.0
        self._last: tuple[int, int, int] | None = None  # (t_ns, free, all)

    def look(self, t_ns: int) -> float:
        if self._last is not None and t_ns - self._last[0] < _WINDOW_NS:
            return self.share
        ticks = parse_cpu_line(self.system.read("/proc/stat") or "")
        if ticks is None:
            return self.share
        if self._last is not None and ticks[1] > self._last[2]:
            self.share = (ticks[0] - self._last[1]) / (ticks[1] - self._last[2])
        self._last = (t_ns, *ticks)
        return self.share


def adapted_rate(rate_hz: int, free_share: float, busy_rate_hz: int | None) -> int:
    """The full rate for a process starting now: busy_rate_hz (if given)
    while the CPUs' free share is under BUSY_BELOW, else rate_hz."""
    return busy_rate_hz if busy_rate_hz is not None and free_share < BUSY_BELOW else rate_hz


class StartupEnd:
    """When process pid's start-up ends, from its journal in journals (the
    newest PID-CREATED_NS events file of that pid: a pid reused in one run
    is rare, and then the newest is this process's). Cheap enough to ask
    every 50 ms: one listdir until the journal is there, then a stat, and
    a read of what was appended since."""

    def __init__(self, journals: Path | None, pid: int, started_ns: int, cap_s: float = STARTUP_CAP_S,
                 head_s: float = TARGET_HEAD_S):
        self.journals, self.pid = journals, pid
        self.deadline_ns = started_ns + int(cap_s * 1e9)
        self.head_ns = int(head_s * 1e9)
        self.target_ns: int | None = None  # the target_start event's t_ns (CLOCK_MONOTONIC), once read
        self._file: Path | None = None
        self._read = 0  # bytes of the journal looked at (whole lines)

    def ended(self, now_ns: int) -> str | None:
        """Why the start-up is over ("target_start": head_s after it;
        "startup_cap": no target_start within cap_s), or None."""
        if self.target_ns is None:
            self.target_ns = self._target_start()
        if self.target_ns is not None:
            return TARGET_START if now_ns >= self.target_ns + self.head_ns else None
        return "startup_cap" if now_ns >= self.deadline_ns else None

    def _target_start(self) -> int | None:
        """The t_ns of the journal's target_start event, if there yet."""
        if self.journals is None:
            return None
        try:
            if self._file is None:
                prefix = f"{self.pid}-"
                mine = [n for n in os.listdir(self.journals)
                        if n.startswith(prefix) and n.endswith(journal.EVENTS_SUFFIX)]
                if not mine:
                    return None
                self._file = self.journals / max(mine, key=lambda n: int(n[len(prefix):].split(".", 1)[0] or 0))
            if self._file.stat().st_size <= self._read:
                return None
            with open(self._file, "rb") as events:
                events.seek(self._read)
                text = events.read()
        except (OSError, ValueError):
            return None
        whole = text[:text.rfind(b"\n") + 1]  # a line being written is read again next time
        self._read += len(whole)
        for line in whole.splitlines():
            if TARGET_START.encode() in line:
                try:
                    event = json.loads(line)
                    if event.get("kind") == TARGET_START:
                        return int(event["t_ns"])
                except (ValueError, AttributeError, KeyError, TypeError):
                    continue
        return None
