"""Hooked calls inside hooked calls: a spec-hooked close() that calls
os.fsync, a write_chunk that calls posix_fadvise. The probe records both,
the inner one a level deeper (its CHUNK depth: the hooked calls of other
phases it ran inside, on its thread). Each call's own time is its duration
less that of the calls directly inside it, so that a phase's seconds are its
own and an fsync inside close is counted once, as fsync."""

from __future__ import annotations

import numpy as np


def parents(c: dict) -> np.ndarray:
    """For each record, the row of the call it ran directly inside (same
    process and thread, one level shallower, spanning it), or -1. `c` holds
    the columns proc, tid, depth, start_ns and end_ns."""
    n = len(c["proc"])
    out = np.full(n, -1, dtype=np.int64)
    depth = c["depth"].astype(np.int64)
    if not n or not depth.any():
        return out
    # On one thread calls nest properly: in start order (the outer first when
    # they start together), a call's parent is the last call before it one
    # level shallower.
    order = np.lexsort((depth, c["start_ns"], c["tid"], c["proc"]))
    d = depth[order]
    at = np.arange(n)
    for level in range(int(d.max())):
        last = np.maximum.accumulate(np.where(d == level, at, -1))
        child = np.flatnonzero(d == level + 1)
        parent = last[child]
        ok = parent >= 0
        child, parent = child[ok], parent[ok]
        rows, prows = order[child], order[parent]
        inside = ((c["proc"][prows] == c["proc"][rows]) & (c["tid"][prows] == c["tid"][rows])
                  & (c["end_ns"][prows] >= c["end_ns"][rows]))
        out[rows[inside]] = prows[inside]
    return out


def own_ns(c: dict, parent: np.ndarray | None = None) -> np.ndarray:
    """Each call's duration less the durations of the calls directly inside it."""
    parent = parents(c) if parent is None else parent
    duration = (c["end_ns"] - c["start_ns"]).astype(np.int64)
    nested = parent >= 0
    inner = np.bincount(parent[nested], weights=duration[nested], minlength=len(duration))
    return duration - inner.astype(np.int64)


def own_spans(c: dict, rows: np.ndarray, parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (start_ns, end_ns) pieces of the calls `rows` outside the calls
    directly inside them (which run one after another on the call's thread):
    a close with an fsync inside is the close before it and the close after."""
    rows = np.asarray(rows, dtype=np.int64)
    is_row = np.zeros(len(parent), dtype=bool)
    is_row[rows] = True
    children = np.flatnonzero((parent >= 0) & is_row[np.maximum(parent, 0)])
    owner = np.concatenate([rows, parent[children]])
    # Per call: starts are its own start and its children's ends; ends its
    # children's starts and its own end. Both sorted within a call pair up.
    starts = np.concatenate([c["start_ns"][rows], c["end_ns"][children]])
    ends = np.concatenate([c["start_ns"][children], c["end_ns"][rows]])
    ends_of = np.concatenate([parent[children], rows])
    s = np.lexsort((starts, owner))
    e = np.lexsort((ends, ends_of))
    start, end = starts[s], ends[e]
    keep = end > start
    start, end = start[keep], end[keep]
    by_time = np.argsort(start, kind="stable")
    return start[by_time], end[by_time]
