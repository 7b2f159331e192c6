"""Hooked calls inside hooked calls: a spec-hooked close() that calls
os.fsync, a write_chunk that calls posix_fadvise. The probe records both,
the inner one a level deeper (its CHUNK depth: the hooked calls of other
phases it ran inside, on its thread). Each call's own time is its duration
less that of the calls directly inside it, so that a phase's seconds are its
own and an fsync inside close is counted once, as fsync."""

from __future__ import annotations

import numpy as np


def parents(c: dict, phases=None) -> np.ndarray:
    """For each record, the row of the call it ran directly inside (same
    process and thread, one level shallower, spanning it), or -1. `c` holds
    the columns proc, tid, depth, start_ns and end_ns; given phases (codes),
    also phase: only a call of those is a parent (the others' children: -1)."""
    n = len(c["proc"])
    out = np.full(n, -1, dtype=np.int64)
    depth = c["depth"]
    if not n or not depth.any():
        return out
    start = c["start_ns"]
    # On one thread calls nest properly: a call's parent is the last call one
    # level shallower begun at or before it (the outer first when they start
    # together). Searched level by level among that level's calls alone, each
    # thread's on a range of one line of keys (the outer levels are few calls).
    for level in range(int(depth.max())):
        outer, inner = np.flatnonzero(depth == level), np.flatnonzero(depth == level + 1)
        # Searched in the processes with both alone: an inner call of a
        # process without (wanted) outer calls has no parent (a writer's, half
        # of a run's; a producer's gen inside its save, given the phases).
        wanted = outer if phases is None else outer[np.isin(c["phase"][outer], phases)]
        inner = inner[_of_processes(c["proc"], wanted)[c["proc"][inner]]]
        outer = outer[_of_processes(c["proc"], inner)[c["proc"][outer]]]
        if not len(outer) or not len(inner):
            continue
        inner_thread = _thread(c, inner)
        threads, number = np.unique(_thread(c, outer), return_inverse=True)
        at = np.minimum(np.searchsorted(threads, inner_thread), len(threads) - 1)
        known = threads[at] == inner_thread
        inner, at = inner[known], at[known]
        base = np.full(len(threads), np.iinfo(np.int64).max)
        np.minimum.at(base, number, start[outer])
        late = start[inner] >= base[at]  # begun before its thread's first outer call: none
        inner, at = inner[late], at[late]
        if not len(inner):
            continue
        span = max(int((start[outer] - base[number]).max()), int((start[inner] - base[at]).max()))
        bits = key_bits(span, len(threads))
        outer_keys = (number.astype(np.int64) << bits) | (start[outer] - base[number])
        order = np.argsort(outer_keys, kind="stable")  # ties in row order: the last of them is the outer
        found = np.searchsorted(outer_keys[order], (at.astype(np.int64) << bits) | (start[inner] - base[at]),
                                side="right") - 1
        parent = outer[order[found]]  # found >= 0: an outer call of its thread begun at or before it
        inside = c["end_ns"][parent] >= c["end_ns"][inner]
        if phases is not None:
            inside &= np.isin(c["phase"][parent], phases)
        out[inner[inside]] = parent[inside]
    return out


def _thread(c: dict, rows: np.ndarray) -> np.ndarray:
    """A key per row's thread: its process and tid."""
    return (c["proc"][rows].astype(np.int64) << 32) | (c["tid"][rows].astype(np.int64) & 0xFFFFFFFF)


def _of_processes(proc: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per process row: whether any of these rows is its."""
    found = np.zeros(int(proc.max()) + 1, bool)
    found[proc[rows]] = True
    return found


def key_bits(span: int, count: int) -> int:
    """Bits for a value up to `span`, so that count << bits | value fits in an int64."""
    bits = max(span, 1).bit_length()
    if bits + max(count, 1).bit_length() > 62:
        raise ValueError(f"a run spanning {span} ns over {count} keys is too large to index")
    return bits


def own_ns(c: dict, parent: np.ndarray | None = None, phases=None) -> np.ndarray:
    """Each call's duration less the durations of the calls directly inside
    it; given phases (codes), only for calls of those (the others': their
    duration), a search the shorter (parents)."""
    parent = parents(c, phases) if parent is None else parent
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
