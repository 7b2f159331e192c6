"""Where each save's buffers are: per save, the pages of each buffer the
writer copied from on each NUMA node (and not yet faulted in) at the end of
the writer's loop, with the node the writer ran on, and the pages of each
that moved between its readings (None: fewer than two that compare). Beyond max_bars buffers
in all, one row per (host, node the writers ran on) with the share of their
buffers' pages on each node, so that the result stays small."""

from __future__ import annotations

from collections import defaultdict

from writerprof.analysis import buffers
from writerprof.analysis.processes import dominant

MAX_BUFFER_BARS = 48  # one entry per buffer up to this many, else per (host, writer node)


def buffer_placement(run, procs: list[dict], saves: list[dict], max_bars: int = MAX_BUFFER_BARS) -> dict:
    """{"unit": "pages", "saves": [per save with buffers]} up to max_bars
    buffers, else {"unit": "pages", "groups": [per (host, writer node)]}."""
    readings = buffers.readings(run)
    return _bounded([_save(readings, procs, s) for s in saves], "pages", max_bars)


def from_shares(procs: list[dict], saves: list[dict], max_bars: int = MAX_BUFFER_BARS) -> dict:
    """Without the buffers' readings (a summary from before they were kept):
    each writer's buffers as one entry, the share of their pages per node."""
    out = []
    for save in saves:
        writer = procs[save["writer"]] if save["writer"] is not None else None
        share = (writer or {}).get("buffer_nodes") or procs[save["producer"]]["buffer_nodes"]
        out.append({**_who(save, writer),
                    "buffers": [{"index": "all", "nodes": dict(share), "unfaulted": 0, "moved": None}]
                    if share else []})
    return _bounded(out, "share of pages", max_bars)


def _bounded(placed: list[dict], unit: str, max_bars: int) -> dict:
    placed = [p for p in placed if p["buffers"]]
    if sum(len(p["buffers"]) for p in placed) <= max_bars:
        return {"unit": unit, "saves": placed}
    return {"unit": unit, "groups": by_writer_node(placed)}


def _who(save: dict, writer: dict | None) -> dict:
    node, share = dominant(writer["worked_nodes"] if writer else {})
    return {"save": save["save"], "host": save["host"], "rank": save["rank"], "producer": save["producer"],
            "writer_node": node, "writer_share": share}


def _save(readings: buffers.Readings, procs: list[dict], save: dict) -> dict:
    """One save's buffers: the writer's own (created or attached), else the
    producer's created within the save; each as last read at a loop's end."""
    found = []
    for proc, window in ((save["writer"], None), (save["producer"], (save["start_ns"], save["end_ns"]))):
        if proc is None:
            continue
        if window is None:
            own = readings.mapped.get(proc, set())
        else:
            own = {index for t, index in readings.created.get(proc, []) if window[0] <= t <= window[1]}
        last = readings.last_end.get(proc, {})
        for index in sorted(own & last.keys()):
            nodes, unfaulted, scale = last[index]
            moved = readings.moved.get((save["host"], readings.names[proc].get(index)))
            found.append({"index": index,
                          "nodes": {str(int(n)): c * scale for n, c in (nodes or {}).items()},
                          "unfaulted": (unfaulted or 0) * scale,
                          "moved": moved["pages"] if moved else None})
        if found:
            break
    writer = procs[save["writer"]] if save["writer"] is not None else None
    return {**_who(save, writer), "buffers": found}


def by_writer_node(placed: list[dict]) -> list[dict]:
    """Per (host, node the writer ran on): saves, buffers, pages per node
    (-1: not faulted in) and their shares, and the share on the writers' node."""
    groups: dict = defaultdict(lambda: {"pages": defaultdict(float), "saves": 0, "buffers": 0})
    for s in placed:
        g = groups[(s["host"], s["writer_node"])]
        g["saves"] += 1
        for b in s["buffers"]:
            g["buffers"] += 1
            for node, value in b["nodes"].items():
                g["pages"][int(node)] += value
            g["pages"][-1] += b["unfaulted"]
    out = []
    for host, node in sorted(groups, key=lambda k: (k[0], -1 if k[1] is None else k[1])):
        g = groups[(host, node)]
        total = sum(g["pages"].values()) or 1
        out.append({"host": host, "writer_node": node, "saves": g["saves"], "buffers": g["buffers"],
                    "shares": {str(n): v / total for n, v in g["pages"].items()},
                    "local": g["pages"].get(node, 0) / total if node is not None else None})
    return out
