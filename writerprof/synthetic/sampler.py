"""The sampler's view of a synthetic host: when it reads each process, the
counters it reads then, and its files (samples.bin, threads.bin,
sampled.jsonl) in the order the real sampler appends them. Each process is
one thread doing all its work: its thread records are its main thread's."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from writerprof.record.sampler import NUMA_MAPS_EVERY_NS
from writerprof.run import layout
from writerprof.analysis.threads import time_inside
from writerprof.run.loader import SAMPLE_DTYPE, THREAD_SAMPLE_DTYPE
from writerprof.units import format_cpu_list

CLK_TICK_NS = 10_000_000  # /proc times and start times count in 100 Hz clock ticks
FIRST_SAMPLE_NS = 25_000_000  # recording start to the sampler's first tick
EXE = "/usr/lib/python3.11/bin/python3.11"  # where /proc/PID/exe of every process points
# Order of a rank's processes within a sampler tick.
PRODUCER, TRACKER, DAEMON, WRITER = range(4)


# --- counters over time ----------------------------------------------------------

busy = time_inside  # time spent inside sorted, disjoint intervals up to each of t


def step(times, values, t):
    """Sum of the values whose time is at or before each of t (times sorted)."""
    total = np.concatenate(([0], np.cumsum(values, dtype=np.int64)))
    return total[np.searchsorted(times, t, side="right")]


def ticks_floor(ns):
    return ns // CLK_TICK_NS * CLK_TICK_NS


# --- the sampler's files -----------------------------------------------------------

class Records:
    """sampled.jsonl records, kept as their lines until they are sorted."""

    def __init__(self):
        self.lines: list[tuple] = []  # (t_ns, slot in the tick, order, line)

    def last(self) -> int:
        return max((r[0] for r in self.lines), default=0)

    def write(self, path: Path):
        self.lines.sort(key=lambda r: r[:3])
        with open(path, "w") as f:
            f.writelines(r[3] for r in self.lines)
        self.lines = []

    def append(self, record: tuple):
        t, slot, order, data = record
        kind = data["kind"]
        # The many small ones formatted as json.dumps would, for speed.
        if kind == "numa_maps":
            pages = data["pages"]
            pages = "{" + ", ".join(f'"{n}": {c}' for n, c in pages.items()) + "}"
            line = (f'{{"kind": "numa_maps", "t_ns": {t}, "pid": {data["pid"]}, "address": {data["address"]}, '
                    f'"file": "{data["file"]}", "pages": {pages}, "huge": false}}\n')
        elif kind == "gone":
            line = f'{{"kind": "gone", "t_ns": {t}, "pid": {data["pid"]}}}\n'
        elif kind == "affinity":
            line = f'{{"kind": "affinity", "t_ns": {t}, "pid": {data["pid"]}, "cpus": "{data["cpus"]}"}}\n'
        else:
            line = json.dumps(data) + "\n"
        self.lines.append((t, slot, order, line))


class Spool:
    """samples.bin in time order, as the sampler appends it, without holding
    a host's samples: they go to a temporary file per window of ticks, and
    each window is sorted alone at the end."""

    WINDOW_TICKS = 64
    MAX_PENDING = 1 << 18  # samples held before they are spooled (24 MiB)

    def __init__(self, directory: Path, tick0: int, interval: int, dtype: np.dtype = SAMPLE_DTYPE,
                 name: str = "samples", header: bytes = b""):
        self.directory, self.tick0, self.dtype, self.name, self.header = directory, tick0, dtype, name, header
        self.window_ns = interval * self.WINDOW_TICKS
        self.files: dict[int, object] = {}
        self.pending: list[np.ndarray] = []
        self.pending_count = 0

    def _file(self, window: int):
        f = self.files.get(window)
        if f is None:
            f = self.files[window] = open(self.directory / f".{self.name}.{window}.tmp", "wb")
        return f

    def add(self, samples: np.ndarray):
        self.pending.append(samples)
        self.pending_count += len(samples)
        if self.pending_count > self.MAX_PENDING:
            self.flush()

    def flush(self):
        """Spool what was added (a save's worth), a write per window."""
        if not self.pending:
            return
        samples = np.concatenate(self.pending)
        self.pending, self.pending_count = [], 0
        windows = (samples["t_ns"] - self.tick0) // self.window_ns
        order = np.argsort(windows, kind="stable")
        samples, windows = samples[order], windows[order]
        cuts = np.flatnonzero(np.diff(windows)) + 1
        for start, end in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(samples)]))):
            samples[start:end].tofile(self._file(int(windows[start])))

    def finish(self, path: Path):
        self.flush()
        with open(path, "wb") as out:
            out.write(self.header)
            for window in sorted(self.files):
                f = self.files.pop(window)
                f.close()
                part = np.fromfile(f.name, dtype=self.dtype)
                part[np.argsort(part["t_ns"], kind="stable")].tofile(out)
                Path(f.name).unlink()


# --- one host's sampler ------------------------------------------------------------

class Sampler:
    """When the sampler of one host reads each process (every interval from
    its first tick, a process `offset` into the tick by its place in the
    process list), and the records it makes of what it read."""

    def __init__(self, directory: Path, base: int, index: int, interval: int, run_queue_share: float = 0.0):
        self.interval, self.run_queue_share = interval, run_queue_share
        self.tick0 = base + FIRST_SAMPLE_NS
        self.boot_offset = 1_137 + 211 * index  # sub-tick part of /proc start times on this clock
        self.samples = Spool(directory, self.tick0, interval)
        self.threads = Spool(directory, self.tick0, interval, THREAD_SAMPLE_DTYPE, "threads", layout.header(
            layout.THREADS_MAGIC, layout.THREADS_VERSION, layout.THREAD_SAMPLE))
        self.last_read: dict[int, tuple[int, int]] = {}  # pid -> (its last tick, utime + stime then)
        self.first_read: dict[int, int] = {}  # pid -> when its main thread started, as its first record counts
        self.records = Records()

    def tick_round(self, t: int) -> int:
        """A start time as /proc has it: clock-tick precision."""
        return (t - self.boot_offset) // CLK_TICK_NS * CLK_TICK_NS + self.boot_offset

    def offset(self, local: int, kind: int) -> int:
        return ((local * 4 + kind) * 2_000) % (self.interval // 2)  # 2 us a process

    def ticks(self, lo: int, hi: int, off: int) -> np.ndarray:
        """Sample times in [lo, hi) of a process read `off` into each tick."""
        first = max(0, -(-(lo - self.tick0 - off) // self.interval))
        last = -(-(hi - self.tick0 - off) // self.interval)
        return self.tick0 + off + np.arange(first, max(first, last), dtype=np.int64) * self.interval

    def next_tick(self, t: int, off: int) -> int:
        return self.tick0 + off + max(0, -(-(t - self.tick0 - off) // self.interval)) * self.interval

    def seen(self, local: int, kind: int, pid: int, ppid: int, alive_from: int, exit_t: int, argv,
             masks, mappings=()):
        """The sampler's rare records of one process (kind: its place among
        its rank's processes): first sight with its affinity, affinity changes
        (masks: [(from, mask)]), numa_maps of its shared-memory mappings at
        first sight and every NUMA_MAPS_EVERY_NS, gone. Returns the sample
        times of its life."""
        off = self.offset(local, kind)
        ticks = self.ticks(alive_from, exit_t, off)
        slot = local * 4 + kind
        if len(ticks) == 0:
            return ticks
        first = int(ticks[0])
        out = self.records
        out.append((first, slot, 0, {"kind": "seen", "t_ns": first, "pid": pid, "ppid": ppid,
                                     "created_ns": self.tick_round(alive_from), "cmdline": argv, "exe": EXE}))
        current = [mask for since, mask in masks if since <= first][-1]
        out.append((first, slot, 1, {"kind": "affinity", "t_ns": first, "pid": pid,
                                     "cpus": format_cpu_list(current)}))
        for since, mask in masks:
            t = self.next_tick(since, off)
            if since > first and t < exit_t and mask != current:
                out.append((t, slot, 1, {"kind": "affinity", "t_ns": t, "pid": pid,
                                         "cpus": format_cpu_list(mask)}))
                current = mask
        if mappings:
            self.numa_maps(slot, pid, mappings, {}, first, exit_t, off)
        gone = self.next_tick(exit_t, off)
        out.append((gone, slot, 3, {"kind": "gone", "t_ns": gone, "pid": pid}))
        return ticks

    def numa_maps(self, slot: int, pid: int, mappings, recorded: dict, t: int, hi: int, off: int) -> int:
        """The numa_maps reads of one process from tick t until hi, one every
        NUMA_MAPS_EVERY_NS, with a record of each mapping ([(address, file,
        mapped, unmapped, faulted, pages)]) whose pages moved since `recorded`
        (address -> what the last record said). Returns the next read's time."""
        while t < hi:
            for address, file, mapped, unmapped, faulted, pages in mappings:
                if mapped <= t < unmapped:
                    placed = (file, pages if faulted is not None and t >= faulted else {})
                    if recorded.get(address) != placed:
                        recorded[address] = placed
                        self.records.append((t, slot, 2, {"kind": "numa_maps", "t_ns": t, "pid": pid,
                                                          "address": address, "file": file,
                                                          "pages": placed[1], "huge": False}))
            t = self.next_tick(t + NUMA_MAPS_EVERY_NS, off)
        return t

    def add(self, ticks, **columns):
        """Samples of one process at `ticks`: columns of SAMPLE_DTYPE, arrays or scalars."""
        out = np.zeros(len(ticks), SAMPLE_DTYPE)
        out["t_ns"] = ticks
        for name, value in columns.items():
            out[name] = value
        self.samples.add(out)
        self._add_threads(out)

    def _add_threads(self, samples: np.ndarray):
        """The main thread's records of these samples of one process: where its CPU time grew."""
        pid = int(samples["pid"][0])
        first_t, first_used = self.last_read.get(pid, (int(samples["t_ns"][0]) - self.interval, 0))
        used = samples["utime_ns"] + samples["stime_ns"]
        since = np.concatenate(([first_t], samples["t_ns"][:-1]))
        grew = used > np.concatenate(([first_used], used[:-1]))
        self.last_read[pid] = (int(samples["t_ns"][-1]), int(used[-1]))
        out = np.zeros(int(grew.sum()), THREAD_SAMPLE_DTYPE)
        for name in ("t_ns", "pid", "cpu", "utime_ns", "stime_ns", "nonvoluntary_ctxt"):
            out[name] = samples[name][grew]
        out["since_ns"], out["tid"], out["name"] = since[grew], pid, b"python3"
        began = self.first_read.setdefault(pid, first_t)
        out["run_delay_ns"] = (self.run_queue_share * (out["t_ns"] - began)).astype(np.int64)
        self.threads.add(out)

    def finish(self, directory: Path):
        """samples.bin in tick order, as the sampler appends it; sampled.jsonl likewise."""
        self.samples.finish(directory / layout.SAMPLES_FILE)
        self.threads.finish(directory / layout.THREADS_FILE)
        self.records.write(directory / layout.SAMPLED_FILE)
