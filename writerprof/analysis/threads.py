"""Where each process's threads spent their CPU time: the sampler's
per-thread readings (run.threads), each one's CPU time over its interval put
on the node of the CPU the thread last ran on, counted inside spans of the
process's life (its work calls, else all of it). An idle thread (a main
thread blocked on a queue while a pool fills the buffers) weighs nothing."""

from __future__ import annotations

import numpy as np

from writerprof.analysis.samples import cpu_column, node_table, thread_rows

MAX_THREADS = 8  # threads listed per process, the busiest first


def time_inside(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Time spent inside the sorted, disjoint intervals up to each of t."""
    if len(starts) == 0:
        return np.zeros(len(t), np.int64)
    length = ends - starts
    done = np.concatenate(([0], np.cumsum(length)))
    k = np.searchsorted(ends, t, side="right")
    kk = np.minimum(k, len(starts) - 1)  # the interval in progress, if any
    part = np.minimum(np.maximum(t - starts[kk], 0), length[kk])
    return done[k] + np.where(k < len(starts), part, 0)


def merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals, as sorted disjoint ones."""
    if len(starts) == 0:
        return starts, ends
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    new = np.concatenate(([True], starts[1:] > ends[:-1]))  # not overlapping the ones before
    last = np.concatenate((np.flatnonzero(new)[1:] - 1, [len(starts) - 1]))
    return starts[new], ends[last]


def worked(run, spans: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[int, dict]:
    """Per row of run.processes with thread readings whose CPU time falls in its
    spans (row -> sorted disjoint (starts, ends); a row not there: its whole life):
    {"nodes": node -> CPU seconds, "cpu_s", "threads": the busiest MAX_THREADS,
    each {"tid", "name", "main", "cpu_s", "nodes"}}."""
    t = run.threads
    rows = thread_rows(run)
    keep = rows >= 0
    if not keep.any():
        return {}
    t, rows = t[keep], rows[keep]
    order = np.lexsort((t["t_ns"], t["tid"], rows))
    t, rows = t[order], rows[order]
    used = t["utime_ns"] + t["stime_ns"]
    # Each record's CPU time since the previous of its thread (from zero for its
    # first, and for a tid reused: its time starts again).
    same = np.concatenate(([False], (rows[1:] == rows[:-1]) & (t["tid"][1:] == t["tid"][:-1])))
    before = np.concatenate(([0], used[:-1]))
    delta = np.where(same & (used >= before), used - before, used).astype(np.float64)
    lut = node_table(run)
    node = lut[t["host_index"], cpu_column(lut, t["cpu"])]
    cuts = np.flatnonzero(np.diff(rows)) + 1
    pid = run.processes["pid"]
    out = {}
    for a, b in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(rows)]))):
        row = int(rows[a])
        since, until = t["since_ns"][a:b], t["t_ns"][a:b]
        weight = delta[a:b]
        if row in spans:
            starts, ends = spans[row]
            inside = time_inside(starts, ends, until) - time_inside(starts, ends, since)
            weight = weight * inside / np.maximum(until - since, 1)
        found = _process(weight, node[a:b], t["tid"][a:b], t["name"][a:b], int(pid[row]))
        if found is not None:
            out[row] = found
    return out


def _process(weight, node, tid, name, pid: int) -> dict | None:
    known = (weight > 0) & (node >= 0)
    if not known.any():
        return None
    threads = []
    for one in np.unique(tid[known]):
        mine = known & (tid == one)
        per_node = np.bincount(node[mine], weights=weight[mine])
        last_name = name[np.flatnonzero(tid == one)[-1]].decode("utf-8", "replace")
        threads.append({"tid": int(one), "name": last_name or None, "main": int(one) == pid,
                        "cpu_s": float(weight[mine].sum()) / 1e9,
                        "nodes": _seconds(per_node)})
    threads.sort(key=lambda th: (-th["cpu_s"], th["tid"]))
    per_node = np.bincount(node[known], weights=weight[known])
    return {"nodes": _seconds(per_node), "cpu_s": float(weight[known].sum()) / 1e9,
            "threads": threads[:MAX_THREADS]}


def _seconds(per_node: np.ndarray) -> dict[int, float]:
    return {n: float(w) / 1e9 for n, w in enumerate(per_node) if w > 0}
