"""A save's critical path: its wall time cut into causes (saves.COMPONENTS)
that add up to it exactly, as interval arithmetic over every save at once.

The critical path follows the producer. While it generates, the save waits
on generation; before it starts the writer, on setup; during
Process.start(), on the start. Any other time the producer is blocked (on a
full queue, or waiting for the writer's result), and the save waits on
whatever the writer is doing then: a start-up phase, a write, an fsync, ...
If the writer is waiting for a chunk too, the save waits on the queue
itself. Time in which neither side was in a recorded activity is the
unexplained remainder."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import nesting, threads
from writerprof.analysis.components import CODE, UNEXPLAINED, loop_components


def _pieces(starts, ends, labels) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals as what each holds: at a time, of the intervals begun at or
    before it, the latest (the later given of equal starts), if the time is
    before its end. (start, stop, label) pieces that do not overlap, in
    order, each from an interval's start until it ends or the next begins;
    empty ones left out."""
    if not (starts[1:] >= starts[:-1]).all():  # (the callers' are mostly in order already)
        order = np.argsort(starts, kind="stable")
        starts, ends, labels = starts[order], ends[order], labels[order]
    stop = np.minimum(ends, np.append(starts[1:], np.iinfo(np.int64).max))
    kept = stop > starts
    return starts[kept], stop[kept], labels[kept]


def _blocks_in_order(values: np.ndarray) -> np.ndarray:
    """The rows that put the runs of equal values in increasing order of
    value, each run's rows kept in their order (a stable argsort, in the
    time of one over the runs)."""
    if not len(values):
        return np.arange(0)
    first = np.flatnonzero(np.append(True, values[1:] != values[:-1]))
    length = np.diff(np.append(first, len(values)))
    runs = np.argsort(values[first], kind="stable")
    # Row k of the output: its run's first row, plus its place in that run.
    out_first = np.cumsum(length[runs]) - length[runs]
    return np.repeat(first[runs] - out_first, length[runs]) + np.arange(len(values))


def critical_paths(found, w0, w1, gen, loop, codes) -> np.ndarray:
    """Seconds of each component, then the unexplained, per save."""
    # Long on purpose: one key space for every save's intervals; the priority
    # rules below read as one sequence (producer first, then writer).
    n = len(found)
    saves = np.arange(n)
    shift = nesting.key_bits(int((w1 - w0).max()), n)

    span = w1 - w0

    def keys(save, *times):
        """Each of times (of these saves) as keys: offsets into the save's window, under its number."""
        save = save.astype(np.int64)
        base, top, high = w0[save], span[save], save << shift  # once for the starts and the ends
        out = []
        for t in times:
            offset = np.asarray(t, dtype=np.int64) - base
            np.maximum(offset, 0, out=offset)  # clipped to the save's window (np.clip: several times slower)
            np.minimum(offset, top, out=offset)
            offset |= high
            out.append(offset)
        return out

    t_start = np.array([f["t_start"] for f in found], dtype=np.int64)
    t_started = np.array([f["t_started"] for f in found], dtype=np.int64)
    gen_start, gen_end, gen_save = gen["start_ns"], gen["end_ns"], gen["save"]
    # The writer's calls by save (each writer's are together and in time order):
    # each level's intervals are then in order for _pieces, with no sort.
    by_save = _blocks_in_order(loop["save"])
    loop_start, loop_end, loop_depth, loop_phase, loop_save = (
        loop[name][by_save] for name in ("start_ns", "end_ns", "depth", "phase", "save"))
    # The writer's start-up phases: each until the next begins, the last until its loop does.
    up_name, up_start, up_end, up_save = [], [], [], []
    for i, f in enumerate(found):
        marks = [(name, t) for name, t in f["boundaries"] if name != "first_chunk"]
        stop = min([t for name, t in f["boundaries"] if name == "first_chunk"] or [int(w1[i])])
        for (name, t), (_, t_next) in zip(marks, marks[1:] + [(None, stop)]):
            up_name.append(CODE["startup:" + name])
            up_start.append(t)
            up_end.append(t_next)
            up_save.append(i)
    up_save = np.array(up_save, dtype=np.int64)
    components = loop_components(codes)
    component_of = np.full(max(components, default=0) + 1, UNEXPLAINED)
    component_of[list(components)] = list(components.values())
    # What each side is doing, as layers of pieces, the one that wins first: the
    # producer where it is doing something (generating; before and during
    # Process.start()), then the writer's calls (deeper calls inside outer ones
    # win), after its last call its teardown, its start-up phases.
    opened, begun, started = keys(saves, w0, t_start, t_started)
    layers = [_pieces(*keys(gen_save, gen_start, gen_end), np.full(len(gen_start), CODE["generation"])),
              (np.concatenate([opened, begun]), np.concatenate([begun, started]),
               np.repeat([CODE["setup"], CODE["startup:start"]], n))]
    for depth in reversed(range(int(loop_depth.max()) + 1 if len(loop_depth) else 0)):
        level = loop_depth == depth
        level = slice(None) if level.all() else level  # one level (the usual): no copies
        layers.append(_pieces(*keys(loop_save[level], loop_start[level], loop_end[level]),
                              component_of[loop_phase[level]]))
    if len(loop_end):  # each save's calls together (by_save): its last end, a reduce per save
        first = np.flatnonzero(np.append(True, loop_save[1:] != loop_save[:-1]))
        has = loop_save[first]
        layers.append((*keys(has, np.maximum.reduceat(loop_end, first), w1[has]),
                       np.full(len(has), CODE["teardown"])))
    layers.append(_pieces(*keys(up_save, up_start, up_end), np.array(up_name, dtype=np.int64)))
    # Each piece holds the save for its time outside the layers above it (their
    # union, as intervals in order); the rest of the save is unexplained.
    # Times in whole nanoseconds, summed exactly (as floats up to 2**53 ns).
    width = UNEXPLAINED + 1
    totals = np.zeros(n * width)
    above = np.zeros(0, np.int64), np.zeros(0, np.int64)
    for k, (start, stop, label) in enumerate(layers):
        if not len(start):  # (a depth without calls): hides nothing below
            continue
        kept = stop > start
        start, stop, label = start[kept], stop[kept], label[kept]
        hidden = threads.time_between(*above, start, stop)
        totals += np.bincount((start >> shift) * width + label, weights=stop - start - hidden, minlength=n * width)
        if k < len(layers) - 1:  # (none below the last)
            above = threads.merged(np.concatenate([above[0], start]), np.concatenate([above[1], stop]))
    totals = totals.reshape(n, width)
    totals[:, UNEXPLAINED] = span - totals.sum(axis=1)
    return totals / 1e9
