"""Pages that move: the kernel's NUMA counters, read through
writerprof.record.system. Host-wide from /proc/vmstat (allocations local or
remote, automatic balancing's hint faults, pages migrated), per process from
/proc/PID/sched where the kernel has CONFIG_NUMA_BALANCING and balancing is
on (its main task's hint faults and migrated pages), and the
kernel.numa_balancing setting. The
sampler reads them on a slow tick (SLOW_EVERY_NS) and records a reading when
it changed; the analysis turns them into deltas over each save
(writerprof.analysis.numa_activity)."""

from __future__ import annotations

import re

from writerprof.record.system import HOST, System

# The /proc/vmstat counters kept, whichever this kernel has.
VMSTAT_COUNTERS = ("numa_hit", "numa_miss", "numa_foreign", "numa_local", "numa_other", "numa_hint_faults",
                   "numa_hint_faults_local", "numa_pages_migrated", "pgmigrate_success", "pgmigrate_fail",
                   "numa_pte_updates")
# Their lines, found by one search of the file's ~180 rather than a look at each in Python (the sampler's slow tick).
_VMSTAT_LINE = re.compile(rf"^({'|'.join(VMSTAT_COUNTERS)}) [ \t]*(\d+)[ \t]*$", re.MULTILINE | re.ASCII)
# /proc/PID/sched lines kept (the task's own, CONFIG_NUMA_BALANCING only), by the name recorded.
# Not total_numa_faults: the kernel decays it every scan period, so its change over a save means nothing.
SCHED_COUNTERS = {"numa_pages_migrated": "numa_pages_migrated"}
# Reading both costs ~0.1 ms a process: often enough to bracket a save, not every tick.
SLOW_EVERY_NS = 250_000_000
_BALANCING = "/proc/sys/kernel/numa_balancing"


def numa_balancing(system: System = HOST) -> int | None:
    """kernel.numa_balancing: 0 off, 1 on (2: memory tiering only, 3 both);
    None where the kernel has no such setting."""
    text = system.read(_BALANCING)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def host_counters(system: System = HOST) -> dict[str, int]:
    """The NUMA counters of /proc/vmstat this kernel has ({} without NUMA)."""
    return {name: int(value) for name, value in _VMSTAT_LINE.findall(system.read("/proc/vmstat") or "")}


def process_counters(system: System, pid: int) -> dict[str, int] | None:
    """The NUMA balancing counters of /proc/PID/sched; None where the process
    is gone or the kernel keeps none (no CONFIG_NUMA_BALANCING)."""
    text = system.read(f"/proc/{pid}/sched")
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        key = SCHED_COUNTERS.get(name.strip())
        if sep and key is not None:
            try:
                out[key] = int(value.strip())
            except ValueError:
                pass
    return out or None


class Readings:
    """What the sampler last recorded, to record a reading only when it changed."""

    def __init__(self, system: System = HOST):
        self.system = system
        # Without automatic balancing a process's counters stay at 0: not read at all.
        self.per_process = bool(numa_balancing(system))
        self.read_ns: int | None = None
        self._host: dict | None = None
        self._procs: dict[int, dict] = {}

    def due(self, t_ns: int) -> bool:
        return self.read_ns is None or t_ns - self.read_ns >= SLOW_EVERY_NS

    def host(self, t_ns: int) -> list[dict]:
        """The host's reading as a sampled.jsonl record, if it changed."""
        self.read_ns = t_ns
        counters = host_counters(self.system)
        if not counters or counters == self._host:
            return []
        self._host = counters
        return [{"kind": "vmstat", "t_ns": t_ns, "pid": 0, "counters": counters}]  # pid 0: the host

    def process(self, pid: int, t_ns: int) -> list[dict]:
        """A process's reading as a sampled.jsonl record, if it changed."""
        counters = process_counters(self.system, pid)
        if counters is None or counters == self._procs.get(pid):
            return []
        self._procs[pid] = counters
        return [{"kind": "numa_sched", "t_ns": t_ns, "pid": pid, "counters": counters}]

    def tick(self, t_ns: int, pids) -> list[dict]:
        """On a slow tick: the host's and each live process's readings that
        changed (the processes not in pids are forgotten)."""
        if not self.due(t_ns):
            return []
        out = self.host(t_ns)
        pids = set(pids)
        for pid in list(self._procs):
            if pid not in pids:
                del self._procs[pid]
        for pid in sorted(pids) if self.per_process else ():
            out += self.process(pid, t_ns)
        return out
