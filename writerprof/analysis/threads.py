"""Where each process's threads spent their CPU time: the sampler's
per-thread readings (run.threads), each one's CPU time over its interval put
on the node of the CPU the thread last ran on, counted inside spans of the
process's life (its work calls, else all of it). An idle thread (a main
thread blocked on a queue while a pool fills the buffers) weighs nothing;
the probe's stack-sampling thread is left out."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import kernels
from writerprof.analysis.samples import cpu_column, node_table, thread_rows
from writerprof.probes.writerprof_probe.format import STACKS_THREAD as _STACKS_THREAD

STACKS_THREAD = _STACKS_THREAD.encode()  # as run.threads' name column has it

MAX_THREADS = 8  # threads listed per process, the busiest first


def time_inside(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Time spent inside the sorted, disjoint intervals up to each of t (int64
    arrays; t in order is fastest). Compiled (kernels): numpy's searchsorted
    and the gathers after it took 6x as long over a part's critical paths."""
    if len(starts) == 0:  # (no library loaded for none: record's summary of a short run)
        return np.zeros(len(t), np.int64)
    return kernels.time_inside(starts, ends, t)


def time_between(starts: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Time spent inside the sorted, disjoint intervals from each of a to the same of b (a <= b)."""
    both = time_inside(starts, ends, np.concatenate([b, a]))  # one search: the intervals' sums made once
    return both[:len(b)] - both[len(b):]


def merged(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals, as sorted disjoint ones (some may touch: one ends where the next starts)."""
    if len(starts) == 0:
        return starts, ends
    order = None
    if not (starts[1:] >= starts[:-1]).all():  # (calls of the chunk columns are in order already)
        order = np.argsort(starts, kind="stable")
    elif (starts[1:] >= ends[:-1]).all():  # disjoint already (a thread's calls, one after another)
        return starts, ends
    return kernels.merged(starts, ends, order)  # compiled: the sweep and its gathers in one pass


def worked(run, spans: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> dict[int, dict]:
    """Per row of run.processes with thread readings whose CPU time falls in its
    spans (pieces of (row, start_ns, end_ns), work_windows.Spans, in any
    order; a row with none: its whole life): {"nodes": node -> CPU seconds, "cpu_s", "threads": the
    busiest MAX_THREADS, each {"tid", "name", "main", "cpu_s", "nodes"}}.
    All processes at once: a large run has thousands."""
    t, rows = run.threads, thread_rows(run)
    keep = (rows >= 0) & (t["name"] != STACKS_THREAD)  # the probe's sampling is not the process's work
    if not keep.any():
        return {}
    kept = np.flatnonzero(keep)
    order = kept[np.lexsort((t["t_ns"][kept], t["tid"][kept], rows[kept]))]
    t, rows = t[order], rows[order]  # (one copy of the readings, not two)
    used = t["utime_ns"] + t["stime_ns"]
    # Each record's CPU time since the previous of its thread (from zero for its
    # first, and for a tid reused: its time starts again).
    same = np.concatenate(([False], (rows[1:] == rows[:-1]) & (t["tid"][1:] == t["tid"][:-1])))
    before = np.concatenate(([0], used[:-1]))
    weight = np.where(same & (used >= before), used - before, used).astype(np.float64)
    since, until = t["since_ns"], t["t_ns"]
    has = np.zeros(len(run.processes), bool)
    for span_row, _, _ in spans:
        has[span_row] = True
    has = has[rows]
    for first, stop in _blocks(spans, len(run.processes)):  # a few processes' spans at a time: small temporaries
        lo, hi = np.searchsorted(rows, [first, stop])  # their readings
        if lo == hi:
            continue
        span_row, span_start, span_end = _rows_spans(spans, first, stop)
        part = slice(lo, hi)
        weight[part] = np.where(has[part], weight[part] * _share_inside(
            rows[part], since[part], until[part], span_row, span_start, span_end), weight[part])
    lut = node_table(run)
    node = lut[t["host_index"], cpu_column(lut, t["cpu"])]
    known = (weight > 0) & (node >= 0)
    if not known.any():
        return {}
    rows, tid, node, weight, name = rows[known], t["tid"][known], node[known], weight[known], t["name"][known]
    n_nodes = int(node.max()) + 1
    per_node = np.bincount(rows * n_nodes + node, weights=weight,
                           minlength=len(run.processes) * n_nodes).reshape(-1, n_nodes)
    busy = np.flatnonzero(per_node.sum(axis=1) > 0)
    # As lists: a numpy scalar per value cost more than the value's work (thousands of rows).
    out = {row: {"nodes": _seconds(nodes), "cpu_s": total / 1e9, "threads": []}
           for row, nodes, total in zip(busy.tolist(), per_node[busy].tolist(), per_node[busy].sum(axis=1).tolist())}
    # Per thread: (row, tid) pairs, the busiest MAX_THREADS of each row.
    pair_key = (rows.astype(np.int64) << 32) | tid.astype(np.int64)
    pairs, first, pair = np.unique(pair_key, return_index=True, return_inverse=True)
    last = np.zeros(len(pairs), np.int64)
    last[pair] = np.arange(len(pair))  # the last record of each pair (records are in time order)
    cpu = np.bincount(pair, weights=weight, minlength=len(pairs))
    pair_nodes = np.bincount(pair * n_nodes + node, weights=weight, minlength=len(pairs) * n_nodes)
    pair_nodes = pair_nodes.reshape(-1, n_nodes)
    pair_row = rows[first]
    busiest = np.lexsort((pairs & 0xFFFFFFFF, -cpu, pair_row))
    starts = np.searchsorted(pair_row[busiest], pair_row[busiest], side="left")
    chosen = busiest[np.arange(len(busiest)) - starts < MAX_THREADS]
    pids = run.processes["pid"].tolist()
    for row, one, label, seconds, nodes in zip(pair_row[chosen].tolist(), (pairs[chosen] & 0xFFFFFFFF).tolist(),
                                               name[last[chosen]].tolist(), cpu[chosen].tolist(),
                                               pair_nodes[chosen].tolist()):
        label = label.decode("utf-8", "replace")
        out[row]["threads"].append({"tid": one, "name": label or None, "main": one == pids[row],
                                    "cpu_s": seconds / 1e9, "nodes": _seconds(nodes)})
    return out


SPAN_BLOCK = 1 << 20  # spans read at once (a 10M-chunk run has tens of millions)


def _blocks(spans, n_rows: int) -> list[tuple[int, int]]:
    """[(first, stop)] ranges of process rows whose spans number about
    SPAN_BLOCK a range (a row's are never split)."""
    if not spans:
        return []
    count = np.cumsum(sum(np.bincount(row, minlength=n_rows) for row, _, _ in spans))
    cuts = np.searchsorted(count, np.arange(SPAN_BLOCK, count[-1], SPAN_BLOCK)) + 1  # after the row reaching each
    edges = np.unique(np.concatenate(([0], np.minimum(cuts, n_rows), [n_rows])))
    return list(zip(edges[:-1].tolist(), edges[1:].tolist()))


def _rows_spans(spans, first: int, stop: int) -> tuple[np.ndarray, ...]:
    """(row, start_ns, end_ns) of the spans of rows first to stop - 1, from every piece."""
    chosen = [np.flatnonzero((row >= first) & (row < stop)) for row, _, _ in spans]
    return tuple(np.concatenate([piece[i][mine] for piece, mine in zip(spans, chosen)]) for i in range(3))


def _share_inside(rows, since, until, span_row, span_start, span_end) -> np.ndarray:
    """The share of each record's interval (since, until] inside its row's
    spans. Each row's times are moved onto a range of a line of their own,
    so that every row's spans are merged and looked up at once."""
    n = int(max(rows.max(), span_row.max())) + 1
    lo = np.full(n, np.iinfo(np.int64).max)
    hi = np.full(n, np.iinfo(np.int64).min)
    np.minimum.at(lo, rows, since)
    np.minimum.at(lo, span_row, span_start)
    np.maximum.at(hi, rows, until)
    np.maximum.at(hi, span_row, span_end)
    extent = np.where(hi >= lo, hi - lo + 1, 0)
    base = np.cumsum(extent) - extent - np.where(hi >= lo, lo, 0)
    starts, ends = merged(span_start + base[span_row], span_end + base[span_row])
    inside = time_between(starts, ends, since + base[rows], until + base[rows])
    return inside / np.maximum(until - since, 1)


def _seconds(per_node: list[float]) -> dict[int, float]:
    return {n: w / 1e9 for n, w in enumerate(per_node) if w > 0}
