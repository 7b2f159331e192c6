"""A big run's saves found a few hosts at a time. A save's producer and
writer are processes of one host, so the saves of a run are those of its
hosts' parts, each analysed as a run of its processes alone: the peak memory
of the analysis is then a part's, not the whole run's (tens of millions of
records make temporaries of gigabytes)."""

from __future__ import annotations

import weakref
from dataclasses import replace

import numpy as np

# Chunk records above which a run of several hosts is taken in parts of about
# this many: a part's temporaries (a few int64 per record) stay under 32 MiB,
# which malloc reuses (bigger ones are mapped afresh, every page faulted in):
# at 2M the saves of the 10M-chunk benchmark run took 12% longer to find.
PART_RECORDS = 1_000_000


def parts(run, part_records: int | None = None) -> list[tuple[int, int]] | None:
    """[(first process row, the row after the last)] of parts of consecutive
    hosts; None when the run is small enough whole, or one host."""
    part_records = part_records or PART_RECORDS
    records = len(run.chunk_columns)
    if records <= part_records or len(run.hosts) < 2 or not len(run.processes):
        return None
    host = run.processes["host"]
    # The loader keeps a host's processes together (rows ordered by host first).
    edges = np.append(np.flatnonzero(np.append(True, host[1:] != host[:-1])), len(host))
    if len(edges) < 3:
        return None
    proc = run.chunk_columns["proc"]
    at = np.searchsorted(proc, edges.astype(proc.dtype))  # proc's type: no copy of it
    cuts, size = [0], 0  # the first host of each part
    for i in range(len(edges) - 1):
        records = int(at[i + 1] - at[i])
        if size and size + records > part_records:
            cuts.append(i)
            size = 0
        size += records
    cuts.append(len(edges) - 1)
    return [(int(edges[a]), int(edges[b])) for a, b in zip(cuts, cuts[1:])]


def part(run, first: int, stop: int):
    """Process rows first to stop - 1 of the run as a run of their own (rows from 0)."""
    events, shm, placements, io, http = (_rows_between(run, name, "proc", first, stop)
                                         for name in ("events", "shm", "placements", "io", "http"))
    for rows in (events, shm, placements, io, http):
        rows["proc"] -= first
    # Its hosts' thread readings (its rows' hosts are consecutive ones): every part would
    # otherwise match the whole run's to its processes.
    hosts = [run.hosts.index(host) for host in dict.fromkeys(run.processes["host"][first:stop].tolist())]
    threads = _rows_between(run, "threads", "host_index", min(hosts, default=0), max(hosts, default=-1) + 1)
    return replace(run, processes=run.processes[first:stop], chunk_columns=run.chunk_columns.processes(first, stop),
                   events=events, samples=run.samples[:0], sampled=[], losses=[], shm=shm, placements=placements,
                   io=io, http=http, threads=threads)


_sorted: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> {its array's name: (order, sorted key)}


def _rows_between(run, name: str, key: str, first: int, stop: int) -> np.ndarray:
    """The rows of the run's array `name` whose `key` is in [first, stop), in
    their order: the key sorted once per run, not a mask of every row per
    part (the 10M-chunk run's 43 parts: 0.9 s)."""
    of_run = _sorted.setdefault(run, {})
    rows = getattr(run, name)
    if name not in of_run:
        order = np.argsort(rows[key], kind="stable")
        of_run[name] = order, rows[key][order]
    order, keys = of_run[name]
    a, b = np.searchsorted(keys, [first, stop])
    return rows[np.sort(order[a:b])]


def joined(found: list[tuple]) -> list[dict]:
    """The parts' saves (saves.in_parts) as the whole run's: process rows the run's, in the order they started."""
    saves = []
    for first, part, _ in found:
        for save in part:
            save["producer"] += first
            if save["writer"] is not None:
                save["writer"] += first
        saves += part
    return sorted(saves, key=lambda s: s["start_ns"])
