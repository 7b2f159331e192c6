"""The shared-memory buffers of each process and their page readings, from
one pass over the run's shm and placement events (found once per run): the
buffers a process created or attached, when it created each, its last
reading of each buffer at a loop's end, its last reading with nodes, and the
pages of each buffer that moved between readings (moved_pages)."""

from __future__ import annotations

import weakref
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Readings:
    """Per process row."""

    mapped: dict = field(default_factory=lambda: defaultdict(set))  # buffers it created or attached
    created: dict = field(default_factory=lambda: defaultdict(list))  # (t_ns, buffer) it created
    last_end: dict = field(default_factory=lambda: defaultdict(dict))  # buffer -> its last end-of-loop reading
    last_nodes: dict = field(default_factory=lambda: defaultdict(dict))  # buffer -> its last reading's nodes
    names: dict = field(default_factory=lambda: defaultdict(dict))  # buffer index -> its segment's name
    moved: dict = field(default_factory=dict)  # (host, name) -> Moved, with two comparable readings or more


_computed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> its Readings


def readings(run) -> Readings:
    if run not in _computed:
        _computed[run] = _readings(run)
    return _computed[run]


def _readings(run) -> Readings:
    e = run.events
    chosen = np.flatnonzero((e["kind"] == "shm") | (e["kind"] == "placement"))
    out = Readings()
    series = defaultdict(list)  # (host, name) -> [(t_ns, (proc, index), nodes, full)]
    hosts = run.processes["host"]
    for proc, kind, d, t_ns in zip(e["proc"][chosen].tolist(), e["kind"][chosen].tolist(),
                                   e["data"][chosen].tolist(), e["t_ns"][chosen].tolist()):
        if kind == "shm":
            op = d.get("op")
            if op == "create" or op == "attach":
                out.mapped[proc].add(d.get("index"))
                if op == "create":
                    out.created[proc].append((d.get("t_ns") or 0, d.get("index")))
            continue
        if d.get("when") == "end":
            out.last_end[proc][d.get("index")] = d
        if d.get("nodes"):
            out.last_nodes[proc][d.get("index")] = d["nodes"]
        if d.get("name") is not None:
            out.names[proc][d.get("index")] = d["name"]
            series[(hosts[proc], d["name"])].append((t_ns, (proc, d.get("index")), *scaled(d)))
    for key, readings_of in series.items():
        found = moved_pages(sorted(readings_of, key=lambda r: r[0]))
        if found is not None:
            out.moved[key] = found
    return out


# A reading with at most this share of its pages not mapped in its process
# sees where the whole buffer is: two such readings compare across processes.
FULL_SHARE = 0.01


def scaled(d: dict) -> tuple[dict, bool]:
    """A placement reading's pages per node, scaled from its sample to the
    buffer, and whether it sees (nearly) every page."""
    scale = d["pages"] / d["sampled"] if d.get("sampled") and d.get("pages") else 1.0
    nodes = {int(n): c * scale for n, c in (d.get("nodes") or {}).items()}
    pages = d.get("pages") or 0
    return nodes, bool(pages) and (d.get("unfaulted") or 0) * scale <= FULL_SHARE * pages


def moved_pages(readings: list[tuple]) -> dict | None:
    """Pages of one buffer that left a node between its readings [(t_ns,
    mapping, nodes, full)], in time order; None without two that compare. Two
    readings compare when they are of one mapping (a process's, by its
    index there: a page it mapped stays mapped, so a node's count can only
    fall by a move) or both see every page.
    A page moved back and forth counts each time."""
    last_of: dict = {}
    last_full = None
    pages, compared, first_ns, last_ns = 0.0, 0, None, None
    for t_ns, mapping, nodes, full in readings:
        before = [r for r in (last_of.get(mapping), last_full if full else None) if r is not None]
        if before:
            pages += max(sum(max(0.0, r[2].get(n, 0.0) - nodes.get(n, 0.0)) for n in r[2]) for r in before)
            compared += 1
            first_ns = min(r[0] for r in before) if first_ns is None else first_ns
            last_ns = t_ns
        last_of[mapping] = (t_ns, mapping, nodes)
        if full:
            last_full = (t_ns, mapping, nodes)
    if not compared:
        return None
    return {"pages": pages, "compared": compared, "from_ns": first_ns, "to_ns": last_ns}
