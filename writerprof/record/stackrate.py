"""At what rate py-spy samples which process of CMD's tree (issue 16): the
processes a Python process of the tree started (writers, workers: their
start-up and their saves are what the stacks are for) at the full rate, each
by a py-spy of its own; the rest (CMD, MPI ranks, multiprocessing's daemons)
sparsely, by one py-spy for the tree. And the full rate halved while the
CPUs have little free time: py-spy's reads compete with the run for CPU
(about 0.1 ms a sample for a shallow stack, 0.5 ms for one of 80 frames, the
depth of a writer's imports at start-up, on this project's 2-CPU machine),
and where the CPUs are busy that time is taken from the run."""

from __future__ import annotations

from writerprof.record.system import HOST, System

# The command lines of multiprocessing's daemons (started by a Python process,
# but not writers: they wait on a socket or a pipe for the run's whole life).
DAEMONS = ("from multiprocessing.forkserver import main", "from multiprocessing.resource_tracker import main",
           "from multiprocessing.semaphore_tracker import main")
BUSY_BELOW = 0.25  # free share of the CPUs (idle + iowait) under which the full rate is halved
_WINDOW_NS = 200_000_000  # the free share is measured over at least this long


def full_rate(pid: int, root: int, cmdline: str, parent: tuple[bool, str] | None) -> bool:
    """Whether process pid (its command line) is sampled at the full rate, in
    a py-spy of its own: a process that a Python process of CMD's tree started
    (parent: whether that parent is Python, and its command line), not CMD,
    and not one of multiprocessing's daemons (the forkserver's children share
    its command line: they are its writers)."""
    if pid == root or parent is None or not parent[0]:
        return False
    return not (cmdline != parent[1] and any(daemon in cmdline for daemon in DAEMONS))


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


def adapted_rate(rate_hz: int, free_share: float, floor_hz: int) -> int:
    """The full rate for a process starting now: halved while the CPUs'
    free share is under BUSY_BELOW, never under floor_hz (the sparse rate)."""
    return rate_hz if free_share >= BUSY_BELOW else max(floor_hz, rate_hz // 2)
