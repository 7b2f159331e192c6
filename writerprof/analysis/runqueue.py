"""Run-queue delay: per thread, the CPU time it used and the time it waited
on a run queue for a CPU inside a window, from the sampler's per-thread
readings (run.threads: each record's growth since the previous of its
thread spread evenly over its interval); and the host's CPU time on a set
of CPUs in it (run.cpus), whose part no recorded thread used is the other
programs' (and the kernel's)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from writerprof.analysis.threads import time_between


@dataclass(frozen=True)
class _Host:
    """One host's readings in time order, each with what grew in its interval (since, t]."""

    since: np.ndarray
    t: np.ndarray
    key: np.ndarray  # threads: pid << 32 | tid; CPUs: the CPU
    cpu: np.ndarray  # the CPU the thread last ran on (threads); the CPU (CPUs)
    grew: dict[str, np.ndarray]  # field -> its growth, ns (or switches)
    longest: int  # the longest interval: a window's readings end before its end + this
    name: np.ndarray | None = None  # threads: the name each reading has


@dataclass(frozen=True)
class Threads:
    """Per thread with readings in a window: pid, tid, name, its CPU time and
    run-queue delay inside the window (s), its involuntary switches, its
    CPU time on each CPU it was read on (cpu_s_on: CPU -> s), its CPU time
    inside the spans asked about (cpu_s_in), and its CPU time and delay in
    each of the window's bins (cpu_bins, wait_bins: a row a thread, s)."""

    pid: np.ndarray
    tid: np.ndarray
    name: list[str]
    cpu_s: np.ndarray
    wait_s: np.ndarray
    involuntary: np.ndarray
    cpu_s_on: list[dict[int, float]]
    cpu_s_in: np.ndarray
    cpu_bins: np.ndarray
    wait_bins: np.ndarray


_prepared: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> host -> (threads, CPUs), made once


def lifetime_waits(run) -> dict[tuple[str, int], float]:
    """Per (host, pid) whose threads waited at all: their run-queue delay
    over their lives (s), a bound of any window's (a sort of the readings
    that waited, not of all of them). Empty for runs from before the
    readings, or from kernels without schedstat (-1: not read)."""
    t = run.threads
    # (Ids as the kernel gives them, below 2**22 (pid_max's ceiling), so that they pack into one key;
    # a damaged file's others are no thread's.)
    waited = np.flatnonzero((t["run_delay_ns"] > 0) & (t["pid"] > 0) & (t["pid"] < 1 << 22) & (t["tid"] > 0)
                            & (t["tid"] < 1 << 22))
    if not len(waited):
        return {}
    t = t[waited]
    # A thread's delay counts up: its last reading holds its life's (a tid reused: the larger of the two).
    key = (t["host_index"].astype(np.int64) << 44) | (t["pid"].astype(np.int64) << 22) | t["tid"].astype(np.int64)
    order = np.argsort(key, kind="stable")
    key, delay = key[order], t["run_delay_ns"][order]
    first = np.flatnonzero(np.append(True, key[1:] != key[:-1]))
    most = np.maximum.reduceat(delay, first)
    out: dict = {}
    for k, d in zip((key[first] >> 22).tolist(), most.tolist()):
        process = (run.hosts[k >> 22], k & 0x3FFFFF)
        out[process] = out.get(process, 0.0) + d / 1e9
    return out


def in_window(run, host: str, a: int, b: int, spans: tuple[np.ndarray, np.ndarray] | None = None,
              edges: np.ndarray | None = None) -> Threads:
    """Every thread of the host read in (a, b], recorded process or not;
    spans: sorted, disjoint (starts, ends) inside it; edges: the bins', a to b."""
    h = _host(run, host)[0]
    rows, share = _inside(h, a, b)
    since, t = h.since[rows], h.t[rows]
    starts, ends = spans if spans is not None else (np.zeros(0, np.int64), np.zeros(0, np.int64))
    lo, hi = np.clip(since, a, b), np.clip(t, a, b)
    in_spans = time_between(starts, ends, lo, hi) / np.maximum(t - since, 1)
    key = h.key[rows]
    found, at = np.unique(key, return_inverse=True)
    n = len(found)
    sums = {name: np.bincount(at, weights=h.grew[name][rows] * share, minlength=n) for name in h.grew}
    # A thread's name as its last reading in the window has it.
    last = np.zeros(n, np.int64)
    last[at] = rows
    names = [v.decode("utf-8", "replace") for v in h.name[last]]
    on = [dict() for _ in range(n)]
    used = h.grew["cpu"][rows] * share
    for i, cpu, s in zip(at.tolist(), h.cpu[rows].tolist(), used.tolist()):
        if s > 0:
            on[i][cpu] = on[i].get(cpu, 0.0) + s / 1e9
    bins = _bins(since, t, np.array([a, b]) if edges is None else edges)
    per_bin = {name: np.zeros((n, bins.shape[1])) for name in ("cpu", "wait")}
    for name, table in per_bin.items():
        np.add.at(table, at, bins * h.grew[name][rows, None] / 1e9)
    return Threads(pid=(found >> 32).astype(np.int64), tid=(found & 0xFFFFFFFF).astype(np.int64), name=names,
                   cpu_s=sums["cpu"] / 1e9, wait_s=sums["wait"] / 1e9, involuntary=sums["involuntary"],
                   cpu_s_on=on, cpu_s_in=np.bincount(at, weights=h.grew["cpu"][rows] * in_spans, minlength=n) / 1e9,
                   cpu_bins=per_bin["cpu"], wait_bins=per_bin["wait"])


def host_busy(run, host: str, cpus: list[int], edges: np.ndarray) -> np.ndarray | None:
    """CPU seconds the host's CPUs `cpus` were busy in each bin (edges);
    None where its readings cover less than half of the bins' time (none
    were written: its threads hardly waited)."""
    h = _host(run, host)[1]
    if h is None:
        return None
    a, b = int(edges[0]), int(edges[-1])
    rows, _ = _inside(h, a, b)
    rows = rows[np.isin(h.cpu[rows], cpus)]
    bins = _bins(h.since[rows], h.t[rows], edges)
    covered = float((bins * (h.t[rows] - h.since[rows])[:, None]).sum())
    if covered < 0.5 * len(cpus) * (b - a):
        return None
    return (bins * h.grew["busy"][rows, None]).sum(axis=0) / 1e9


def _bins(since: np.ndarray, t: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The share of each interval (since, t] in each bin between edges (a row an interval)."""
    overlap = (np.minimum(t[:, None], edges[None, 1:]) - np.maximum(since[:, None], edges[None, :-1]))
    return np.clip(overlap, 0, None) / np.maximum(t - since, 1)[:, None]


def _inside(h: _Host, a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    """The readings whose interval meets (a, b], and the share of each inside it."""
    lo, hi = np.searchsorted(h.t, [a, b + h.longest], side="right")
    rows = np.arange(lo, hi)
    rows = rows[h.since[rows] < b]
    since, t = h.since[rows], h.t[rows]
    overlap = np.minimum(t, b) - np.maximum(since, a)
    return rows, np.clip(overlap, 0, None) / np.maximum(t - since, 1)


def _host(run, host: str) -> tuple[_Host, _Host | None]:
    made = _prepared.setdefault(run, {})
    if host not in made:
        index = run.hosts.index(host)
        made[host] = (_threads(run.threads[run.threads["host_index"] == index]),
                      _cpus(run.cpus[run.cpus["host_index"] == index]))
    return made[host]


def _threads(t: np.ndarray) -> _Host:
    t = t[np.argsort(t["t_ns"], kind="stable")]
    key = (t["pid"].astype(np.int64) << 32) | t["tid"].astype(np.int64)
    grew = {"cpu": growth(key, t["t_ns"], t["utime_ns"] + t["stime_ns"]),
            "wait": growth(key, t["t_ns"], t["run_delay_ns"]),
            "involuntary": growth(key, t["t_ns"], t["nonvoluntary_ctxt"])}
    return _Host(t["since_ns"], t["t_ns"], key, t["cpu"].astype(np.int64), grew, _longest(t["since_ns"], t["t_ns"]),
                 t["name"])


def _cpus(c: np.ndarray) -> _Host | None:
    """A CPU's readings: each one's growth since that CPU's previous, over
    the time between them (a CPU's first reading is only where it starts)."""
    if not len(c):
        return None
    c = c[np.lexsort((c["t_ns"], c["cpu"]))]
    same = np.concatenate(([False], c["cpu"][1:] == c["cpu"][:-1]))
    since = np.where(same, np.concatenate(([0], c["t_ns"][:-1])), c["t_ns"])
    busy = np.where(same, np.diff(c["busy_ns"], prepend=0), 0).astype(np.float64)
    order = np.argsort(c["t_ns"], kind="stable")
    return _Host(since[order], c["t_ns"][order], c["cpu"][order].astype(np.int64), c["cpu"][order].astype(np.int64),
                 {"busy": np.maximum(busy[order], 0)}, _longest(since, c["t_ns"]))


def growth(key: np.ndarray, t: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Each reading's growth since the previous of its key (keys' readings in
    time order): from zero for its first, and where the value went back (a
    tid reused: its count starts again); none where it was not read (-1)."""
    order = np.lexsort((t, key))
    k, v = key[order], value[order].astype(np.int64)
    same = np.concatenate(([False], k[1:] == k[:-1]))
    before = np.concatenate(([0], v[:-1]))
    grew = np.where(same & (v >= before) & (before >= 0), v - before, v)
    out = np.empty(len(v), np.float64)
    out[order] = np.maximum(grew, 0)
    return out


def _longest(since: np.ndarray, t: np.ndarray) -> int:
    return int((t - since).max()) if len(t) else 0
