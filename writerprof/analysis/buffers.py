"""The shared-memory buffers of each process and their page readings, from
one pass over the run's shm and placement events (found once per run): the
buffers a process created or attached, when it created each, its last
reading of each buffer at a loop's end, and its last reading with nodes."""

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


_computed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> its Readings


def readings(run) -> Readings:
    if run not in _computed:
        _computed[run] = _readings(run)
    return _computed[run]


def _readings(run) -> Readings:
    e = run.events
    chosen = np.flatnonzero((e["kind"] == "shm") | (e["kind"] == "placement"))
    out = Readings()
    for proc, kind, d in zip(e["proc"][chosen].tolist(), e["kind"][chosen].tolist(), e["data"][chosen].tolist()):
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
    return out
