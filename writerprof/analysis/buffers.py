"""The shared-memory buffers of each process and their page readings, from
the run's columns of them (run.shm, run.placements: writerprof.run.shm),
found once per run: the buffers a process created or attached, when it
created each, its last reading of each buffer at a loop's end, its last
reading with nodes, and the pages of each buffer that moved between
readings (moved). Grouped with numpy; Python objects only for the results."""

from __future__ import annotations

import weakref
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from writerprof.probes.writerprof_probe import format as journal
from writerprof.run.shm import distinct_rows

PAGE = 4096  # bytes: the pages of a buffer's size


@dataclass
class Readings:
    """Per process row."""

    mapped: dict = field(default_factory=lambda: defaultdict(set))  # buffers it created or attached
    pages: dict = field(default_factory=lambda: defaultdict(int))  # pages (PAGE bytes) of each create and attach
    created: dict = field(default_factory=lambda: defaultdict(list))  # (t_ns, buffer) it created
    # buffer -> its last end-of-loop reading's (nodes, unfaulted, scale: of its sample to the buffer's pages);
    # the nodes dicts of readings alike are one object: read them, do not change them
    last_end: dict = field(default_factory=lambda: defaultdict(dict))
    last_nodes: dict = field(default_factory=lambda: defaultdict(dict))  # buffer -> its last reading's nodes
    names: dict = field(default_factory=lambda: defaultdict(dict))  # buffer index -> its segment's name
    moved: dict = field(default_factory=dict)  # (host, name) -> Moved, with two comparable readings or more


_computed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> its Readings


def readings(run) -> Readings:
    if run not in _computed:
        _computed[run] = _readings(run)
    return _computed[run]


def _readings(run) -> Readings:
    out = Readings()
    _mappings(run.shm, out)
    p = run.placements
    # A JSON event's missing count (-1) reads as none (0).
    pages, sampled, unfaulted = (np.maximum(p[name], 0) for name in ("pages", "sampled", "unfaulted"))
    scale = np.where((sampled != 0) & (pages != 0), pages / np.where(sampled != 0, sampled, 1), 1.0)
    ends = np.flatnonzero(p["when"] == journal.PLACEMENT_WHENS["end"])
    _per_buffer(p, ends, out.last_end,
                list(zip(_nodes(p, ends), unfaulted[ends].tolist(), scale[ends].tolist())))
    with_nodes = np.flatnonzero(p["nodes"] > 0)
    _per_buffer(p, with_nodes, out.last_nodes, _nodes(p, with_nodes))
    named = np.flatnonzero(p["name"] >= 0)
    _per_buffer(p, named, out.names, run.buffer_names[p["name"][named]].tolist())
    _moved(run, named, pages, unfaulted, scale, out)
    return out


def _mappings(shm: np.ndarray, out: Readings) -> None:
    """mapped, pages and created, from the create and attach records."""
    ops = journal.SHM_OPS
    rows = np.flatnonzero((shm["op"] == ops["create"]) | (shm["op"] == ops["attach"]))
    procs, starts, stops, order = _groups(shm["proc"][rows])
    rows = rows[order]
    index = shm["index"][rows].tolist()
    pages = -(-np.maximum(shm["size"][rows], 0) // PAGE)  # a JSON event's missing size (-1): none
    totals = np.add.reduceat(pages, starts).tolist() if len(rows) else []
    for proc, a, b, total in zip(procs, starts, stops, totals):
        out.mapped[proc] = set(index[a:b])
        out.pages[proc] = total
    creates = np.flatnonzero(shm["op"] == ops["create"])
    procs, starts, stops, order = _groups(shm["proc"][creates])
    created = list(zip(shm["t_ns"][creates][order].tolist(), shm["index"][creates][order].tolist()))
    for proc, a, b in zip(procs, starts, stops):
        out.created[proc] = created[a:b]


def _groups(procs: np.ndarray) -> tuple[list[int], list[int], list[int], np.ndarray]:
    """Rows (in time order) grouped by process: the processes, each one's
    first and stop position in order, and order (each's rows in time order)."""
    order = np.argsort(procs, kind="stable")
    grouped = procs[order]
    starts = np.flatnonzero(np.append(True, grouped[1:] != grouped[:-1])) if len(grouped) else grouped[:0]
    return grouped[starts].tolist(), starts.tolist(), starts[1:].tolist() + [len(grouped)], order


def _per_buffer(p: np.ndarray, rows: np.ndarray, into: dict, values: list) -> None:
    """into[proc][index] = the value of each (process, buffer)'s last of rows
    (time order; values: one per row), each process's buffers in the order
    of their first of rows."""
    key = p["proc"][rows].astype(np.int64) << 32 | p["index"][rows]
    _, first = np.unique(key, return_index=True)
    last = len(key) - 1 - np.unique(key[::-1], return_index=True)[1]
    firsts = np.argsort(first, kind="stable")  # the buffers in order of their first
    procs, starts, stops, order = _groups(p["proc"][rows][first[firsts]])
    values = list(map(values.__getitem__, last[firsts][order].tolist()))
    index = p["index"][rows][first[firsts][order]].tolist()
    for proc, a, b in zip(procs, starts, stops):
        into[proc] = dict(zip(index[a:b], values[a:b]))


def _nodes(p: np.ndarray, rows: np.ndarray) -> list[dict]:
    """The {node: pages} dicts of those readings: one dict per distinct
    reading of nodes (a few in a run), found by a sort of their slots in use."""
    if not len(rows):
        return []
    count = p["nodes"][rows].astype(np.int64)
    width = int(count.max())
    used = np.arange(width) < count[:, None]
    cells = np.concatenate([count[:, None], np.where(used, p["node"][rows][:, :width], 0),
                            np.where(used, p["node_pages"][rows][:, :width], 0)], axis=1)
    firsts, inverse = distinct_rows(cells)
    dicts = [{str(n): c for n, c in zip(row[1:1 + row[0]], row[1 + width:1 + width + row[0]])}
             for row in cells[firsts].tolist()]
    return [dicts[i] for i in inverse.tolist()]


def _moved(run, named: np.ndarray, pages, unfaulted, scale, out: Readings) -> None:
    """out.moved: per (host, name) of the named readings, what moved() finds."""
    p = run.placements
    procs = p["proc"][named]
    hosts, host_code = np.unique(run.processes["host"], return_inverse=True)
    key = host_code.reshape(-1)[procs].astype(np.int64) * max(len(run.buffer_names), 1) + p["name"][named]
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    number = np.empty(len(first), dtype=np.int64)
    number[np.argsort(first, kind="stable")] = np.arange(len(first))  # numbered in order of their first reading
    series = number[inverse.reshape(-1)]
    mapping = np.unique(procs.astype(np.int64) << 32 | p["index"][named], return_inverse=True)[1].reshape(-1)
    pages, unfaulted, scale = pages[named].astype(np.float64), unfaulted[named].astype(np.float64), scale[named]
    full = (pages != 0) & (unfaulted * scale <= FULL_SHARE * pages)
    found = moved(series, p["t_ns"][named], mapping, full, _node_matrix(p, named, scale))
    firsts = np.sort(first)
    keys = list(zip(hosts[host_code.reshape(-1)[procs[firsts]]].tolist(),
                    run.buffer_names[p["name"][named][firsts]].tolist()))
    for number, fell, compared, first_ns, last_ns in found:
        out.moved[keys[number]] = {"pages": fell, "compared": compared, "from_ns": first_ns, "to_ns": last_ns}


# A reading with at most this share of its pages not mapped in its process
# sees where the whole buffer is: two such readings compare across processes.
FULL_SHARE = 0.01


def _node_matrix(p: np.ndarray, rows: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Readings x nodes of pages (0 where none), each reading's scaled from
    its sample to its buffer (scale)."""
    used = np.arange(p["node"].shape[1]) < p["nodes"][rows][:, None]
    reading = np.nonzero(used)[0]
    if not len(reading):
        return np.zeros((len(rows), 0))
    # A column per node read, in node order (a node no reading has would add 0 to every sum in moved).
    nodes, column = np.unique(p["node"][rows][used], return_inverse=True)
    matrix = np.zeros((len(rows), len(nodes)))
    matrix[reading, column.reshape(-1)] = p["node_pages"][rows][used].astype(np.float64) * scale[reading]
    return matrix


def moved(series, times, mapping, full, nodes) -> list[tuple]:
    """Per buffer (series: the reading's buffer number) with two readings
    that compare: (number, pages that left a node, comparisons, from_ns,
    to_ns), buffers in number order. Each reading (times[i], of mapping[i],
    full[i]: it sees every page, nodes[i]: pages per node) compares, in time
    order, with the last before it of its mapping (a process's, by its index
    there: a page it mapped stays mapped, so a node's count can only fall by
    a move) and, when it sees every page, with the last before it that did;
    the larger fall counts. A page moved back and forth counts each time."""
    if not len(series):
        return []
    order = np.lexsort((times, series))  # each buffer's readings in time order (stable: ties as recorded)
    series, times, mapping, full, nodes = series[order], times[order], mapping[order], full[order], nodes[order]
    at = np.arange(len(series))
    first_of = np.searchsorted(series, series)  # the position of its buffer's first reading
    # The last reading before of its mapping: the previous of its (buffer, mapping) in time order.
    grouped = np.lexsort((at, mapping, series))
    same = (series[grouped][1:] == series[grouped][:-1]) & (mapping[grouped][1:] == mapping[grouped][:-1])
    of_mapping = np.full(len(at), -1)
    of_mapping[grouped[1:]] = np.where(same, grouped[:-1], -1)
    # The last full reading before it, of its buffer.
    of_full = np.concatenate(([-1], np.maximum.accumulate(np.where(full, at, -1))[:-1]))
    of_full = np.where(full & (of_full >= first_of), of_full, -1)
    fall = np.full(len(at), -np.inf)
    for before in (of_mapping, of_full):
        has = before >= 0
        drop = np.zeros(int(has.sum()))
        for node in range(nodes.shape[1]):  # node by node: summed in the order of the nodes
            drop = drop + np.maximum(0.0, nodes[before[has], node] - nodes[has, node])
        fall[has] = np.maximum(fall[has], drop)
    compared = np.flatnonzero((of_mapping >= 0) | (of_full >= 0))
    if not len(compared):
        return []
    number = series[compared]  # in buffer, then time order
    buffers = np.unique(number)
    first = compared[np.searchsorted(number, buffers)]  # each buffer's first comparison, and its last
    last = compared[np.searchsorted(number, buffers, side="right") - 1]
    never = np.iinfo(np.int64).max
    since = np.minimum(np.where(of_mapping >= 0, times[np.maximum(of_mapping, 0)], never),
                       np.where(of_full >= 0, times[np.maximum(of_full, 0)], never))
    pages = np.bincount(number, weights=fall[compared])  # in time order per buffer, as a running sum
    counts = np.bincount(number)
    return list(zip(buffers.tolist(), pages[buffers].tolist(), counts[buffers].tolist(), since[first].tolist(),
                    times[last].tolist()))
