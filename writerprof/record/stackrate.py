"""At what rate py-spy samples which process of CMD's tree (issue 16): the
processes a Python process of the tree started (writers, workers: their
start-up and their saves are what the stacks are for) at the full rate, each
by a py-spy of its own; the rest (CMD, MPI ranks, multiprocessing's daemons)
sparsely, by one py-spy for the tree. And, if asked (record
--busy-stack-rate), a lower rate for the writers that start while the CPUs
have little free time: py-spy's reads compete with the run for CPU (about
0.1 ms a sample for a shallow stack, 0.5 ms for one of 80 frames, the depth
of a writer's imports at start-up, on this project's 2-CPU machine), and
where the CPUs are busy that time is taken from the run. Not by default: the
CPUs of a shared machine are busy with others' work too, and a writer's
target can be short (84 ms for a 64 MiB save here: at 50 Hz, none of its
samples fell in it one time in four on a loaded machine), while its start-up
is what the stacks are for."""

from __future__ import annotations

from writerprof.record.system import HOST, System

# The command lines of multiprocessing's daemons (started by a Python process,
# but not writers: they wait on a socket or a pipe for the run's whole life).
DAEMONS = ("from multiprocessing.forkserver import main", "from multiprocessing.resource_tracker import main",
           "from multiprocessing.semaphore_tracker import main")
BUSY_BELOW = 0.25  # free share of the CPUs (idle + iowait) under which the CPUs are busy
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


def adapted_rate(rate_hz: int, free_share: float, busy_rate_hz: int | None) -> int:
    """The full rate for a process starting now: busy_rate_hz (if given)
    while the CPUs' free share is under BUSY_BELOW, else rate_hz."""
    return busy_rate_hz if busy_rate_hz is not None and free_share < BUSY_BELOW else rate_hz
