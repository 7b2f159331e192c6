"""The shared-memory buffers of each process and their page readings, from
one pass over the run's shm and placement events (found once per run): the
buffers a process created or attached, when it created each, its last
reading of each buffer at a loop's end, its last reading with nodes, and the
pages of each buffer that moved between readings (moved)."""

from __future__ import annotations

import weakref
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np


PAGE = 4096  # bytes: the pages of a buffer's size


@dataclass
class Readings:
    """Per process row."""

    mapped: dict = field(default_factory=lambda: defaultdict(set))  # buffers it created or attached
    pages: dict = field(default_factory=lambda: defaultdict(int))  # pages (PAGE bytes) of each create and attach
    created: dict = field(default_factory=lambda: defaultdict(list))  # (t_ns, buffer) it created
    # buffer -> its last end-of-loop reading's (nodes, unfaulted, scale: of its sample to the buffer's pages)
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
    # Each event's fields read in one pass over its dict (read again later, a
    # dict is out of the cache: a pass per field took twice as long); then the
    # per-process dicts, and the named readings' numbers as columns, compared
    # for every buffer at once (moved).
    e = run.events
    out = Readings()
    shm = np.flatnonzero(e["kind"] == "shm")
    fields = [(d.get("op"), d.get("index"), d.get("size"), d.get("t_ns")) for d in e["data"][shm].tolist()]
    for proc, (op, index, size, t_ns) in zip(e["proc"][shm].tolist(), fields):
        if op == "create" or op == "attach":
            out.mapped[proc].add(index)
            out.pages[proc] += -(-int(size or 0) // PAGE)
            if op == "create":
                out.created[proc].append((t_ns or 0, index))
    placed = np.flatnonzero(e["kind"] == "placement")
    procs, data = e["proc"][placed].tolist(), e["data"][placed].tolist()
    index, name, nodes, when, pages, sampled, unfaulted = _columns(
        [(d.get("index"), d.get("name"), d.get("nodes"), d.get("when"), d.get("pages"), d.get("sampled"),
          d.get("unfaulted")) for d in data], 7)
    last_end, last_nodes, names = out.last_end, out.last_nodes, out.names
    readings = zip(procs, index, name, nodes, when, pages, sampled, unfaulted)
    for proc, i, n, found, w, buffer_pages, sample_pages, not_faulted in readings:
        if w == "end":  # what placement reads of it, read here (the dict is out of the cache by then)
            per_sample = buffer_pages / sample_pages if sample_pages and buffer_pages else 1.0
            last_end[proc][i] = (found, not_faulted, per_sample)
        if found:
            last_nodes[proc][i] = found
        if n is not None:
            names[proc][i] = n
    named = [k for k, n in enumerate(name) if n is not None]
    hosts = run.processes["host"][np.array([procs[k] for k in named], dtype=np.int64)].tolist()
    series_of: dict = {}  # (host, name) -> its number, and (proc, index) -> its
    mapping_of: dict = {}
    series = [series_of.setdefault((host, name[k]), len(series_of)) for host, k in zip(hosts, named)]
    mapping = [mapping_of.setdefault((procs[k], index[k]), len(mapping_of)) for k in named]
    pages, sampled, unfaulted = (np.array([x or 0 for x in column], dtype=np.float64)[named]
                                 for column in (pages, sampled, unfaulted))
    scale = np.where((sampled != 0) & (pages != 0), pages / np.where(sampled != 0, sampled, 1), 1.0)
    full = (pages != 0) & (unfaulted * scale <= FULL_SHARE * pages)
    cells = [(at, int(n), c) for at, k in enumerate(named) if nodes[k] for n, c in nodes[k].items()]
    found = moved(np.array(series, dtype=np.int64), e["t_ns"][placed][np.array(named, dtype=np.int64)],
                  np.array(mapping, dtype=np.int64), full, _node_matrix(len(named), cells, scale))
    keys = list(series_of)
    for number, fell, compared, first_ns, last_ns in found:
        out.moved[keys[number]] = {"pages": fell, "compared": compared, "from_ns": first_ns, "to_ns": last_ns}
    return out


def _columns(rows: list[tuple], width: int) -> list[tuple]:
    """Rows of `width` fields as `width` columns (empty ones without rows)."""
    return list(zip(*rows)) or [()] * width


# A reading with at most this share of its pages not mapped in its process
# sees where the whole buffer is: two such readings compare across processes.
FULL_SHARE = 0.01


def _node_matrix(count: int, cells: list[tuple], scale: np.ndarray) -> np.ndarray:
    """Readings x nodes of pages, from (reading, node, pages) cells (0 where
    none), each reading's scaled from its sample to its buffer (scale)."""
    if not cells:
        return np.zeros((count, 0))
    reading, node = (np.array(column, dtype=np.int64) for column in list(zip(*cells))[:2])
    pages = np.array([c for _, _, c in cells], dtype=np.float64)
    matrix = np.zeros((count, int(node.max()) + 1))
    matrix[reading, node] = pages * scale[reading]
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
