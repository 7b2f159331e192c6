"""Where the processes ran, over time, on the recording host's time line
(seconds since the recording started): for up to MAX_PROCESS_ROWS
processes, each one's sampler readings (time, CPU, its NUMA node), the CPUs
it was allowed between affinity changes (as runs of CPUs on one node) and,
for a producer, its writers' lifetimes; for more, per (host, role) group the
share of readings on each node in TIME_BINS time bins and how many of the
group were alive. Either way the result is bounded.

A reading is busy when the process used CPU time since its previous one.
An idle process (a forkserver daemon between forks, the resource tracker)
is read every tick on the CPU it last ran on: its readings say where it
slept, not where it worked, so the groups count busy readings only and each
process row says which of its readings were busy."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from writerprof.analysis.groups import group_key, process_groups
from writerprof.analysis.runqueue import growth
from writerprof.analysis.samples import cpu_column, node_table, sample_rows
from writerprof.run import roles as run_roles
from writerprof.run import topology

MAX_PROCESS_ROWS = 16  # one row per process up to this many
TIME_BINS = 120  # beyond: the node shares in this many time bins


def shown(procs: list[dict]) -> list[dict]:
    """The processes a timeline of the run shows: those sampled, and every producer and writer."""
    return [p for p in procs if p["samples"] or p["role"] in (run_roles.PRODUCER, run_roles.WRITER)]


def sample_nodes(run) -> np.ndarray:
    """The NUMA node of the CPU of each of run.samples, or -1."""
    lut = node_table(run)
    return lut[run.samples["host_index"], cpu_column(lut, run.samples["cpu"])]


def affinity(run, procs: list[dict], saves: list[dict], offsets: dict[str, int],
             max_rows: int = MAX_PROCESS_ROWS) -> dict | None:
    """{"end_s", "rows": [per process]} up to max_rows processes shown, else
    {"end_s", "groups": [per (host, role): its "counts" of readings per
    node lane and time bin, "alive" per bin], "centres", "nodes"}; None without
    sampler readings. offsets: clocks.host_offsets(run)."""
    chosen = shown(procs)
    if not len(run.samples) or not chosen:
        return None
    origin = run.meta.get("started_ns") or 0
    # Samples are on their host's clock.
    shift = np.array([offsets.get(h, 0) for h in run.hosts] or [0], dtype=np.int64)
    t = (run.samples["t_ns"] + shift[run.samples["host_index"]] - origin) / 1e9
    ended = run.meta.get("ended_ns")
    end_s = (ended - origin) / 1e9 if ended else (float(t.max()) if len(t) else 1.0)
    rows, nodes = sample_rows(run), sample_nodes(run)
    busy = growth(rows, run.samples["t_ns"], run.samples["utime_ns"] + run.samples["stime_ns"]) > 0
    node_of = {host: topology.cpu_nodes(topo) for host, topo in run.topology.items()}
    if len(chosen) <= max_rows:
        return {"end_s": end_s, "rows": _per_process(chosen, saves, rows, nodes, run.samples["cpu"], busy, t, end_s,
                                                     node_of)}
    return {"end_s": end_s, **_per_group(chosen, rows, nodes, busy, t, end_s, node_of, len(procs))}


def mask_intervals(proc: dict, end_s: float) -> list[tuple[float, float, list[int]]]:
    """(from, to, allowed CPUs) over the process's life."""
    start = proc["created_s"]
    stop = proc["exited_s"] if proc["exited_s"] is not None else end_s
    marks = [(start, proc["allowed_cpus"])] + [(c["t_s"], c["cpus"]) for c in proc["affinity_changes"]]
    out = []
    for (a, cpus), (b, _) in zip(marks, marks[1:] + [(stop, None)]):
        a, b = max(a, start), min(b, stop)
        if b > a and cpus:
            if out and out[-1][2] == cpus and out[-1][1] >= a:
                out[-1] = (out[-1][0], b, cpus)
            else:
                out.append((a, b, cpus))
    return out


def cpu_runs(cpus, nodes: dict[int, int]) -> list[tuple[int, int, int | None]]:
    """Consecutive CPUs on one node: (first, last, node)."""
    runs = []
    for cpu in sorted(cpus):
        node = nodes.get(cpu)
        if runs and runs[-1][1] == cpu - 1 and runs[-1][2] == node:
            runs[-1] = (runs[-1][0], cpu, node)
        else:
            runs.append((cpu, cpu, node))
    return runs


def _per_process(chosen, saves, rows, nodes, cpu, busy, t, end_s, node_of) -> list[dict]:
    save_of = {s["writer"]: s["save"] for s in saves if s["writer"] is not None}
    by_id = {p["id"]: p for p in chosen}
    writers_of = defaultdict(list)  # by its saves: under forkserver a writer's parent is the daemon
    for s in saves:
        if s["writer"] is not None and s["writer"] in by_id:
            writers_of[s["producer"]].append(by_id[s["writer"]])
    out = []
    for proc in sorted(chosen, key=lambda p: (p["host"], p["created_s"])):
        host_nodes = node_of.get(proc["host"], {})
        mine = rows == proc["id"]
        writers = sorted(writers_of.get(proc["id"], []), key=lambda w: w["created_s"])
        out.append({
            "id": proc["id"],
            "save": save_of.get(proc["id"]),
            "allowed": [[a, b, [list(r) for r in cpu_runs(cpus, host_nodes)]]
                        for a, b, cpus in mask_intervals(proc, end_s)],
            "writers": [[w["created_s"], w["exited_s"] if w["exited_s"] is not None else end_s,
                         save_of.get(w["id"])] for w in writers],
            "t_s": t[mine].tolist(), "cpu": cpu[mine].tolist(), "node": nodes[mine].tolist(),
            "busy": busy[mine].tolist(),
            "host_nodes": sorted(set(host_nodes.values())),
            "cpus": sorted(host_nodes) or sorted(set(proc["allowed_cpus"])),
        })
    return out


def _per_group(chosen, rows, nodes, busy, t, end_s, node_of, n_procs) -> dict:
    """Per (host, role): node shares of its busy readings per time bin and processes alive, all groups at once."""
    groups = process_groups(chosen)
    members: dict = defaultdict(list)
    for p in chosen:
        members[group_key(p)].append(p)
    keys = sorted(members)
    group_of = np.full(n_procs + 1, -1, dtype=np.int64)
    for g, key in enumerate(keys):
        group_of[[p["id"] for p in members[key]]] = g
    g_of_sample = np.where(rows >= 0, group_of[rows], -1)
    t0 = min(0.0, float(t.min()))
    edges = np.linspace(t0, max(end_s, float(t.max())), TIME_BINS + 1)
    width = edges[1] - edges[0]
    centres = (edges[:-1] + edges[1:]) / 2
    b = np.clip(((t - t0) / width).astype(np.int64), 0, TIME_BINS - 1)
    all_nodes = sorted({int(n) for n in np.unique(nodes) if n >= 0}
                       | {n for host_nodes in node_of.values() for n in host_nodes.values()})
    lanes = len(all_nodes) + 1  # the last: readings on no known node
    lane_of = np.full(max(all_nodes, default=0) + 2, len(all_nodes), dtype=np.int64)
    lane_of[all_nodes] = np.arange(len(all_nodes))
    lane = lane_of[np.where(nodes >= 0, nodes, len(lane_of) - 1)]
    keep = (g_of_sample >= 0) & busy
    flat = (g_of_sample[keep] * TIME_BINS + b[keep]) * lanes + lane[keep]
    counts = np.bincount(flat, minlength=len(keys) * TIME_BINS * lanes).reshape(len(keys), TIME_BINS, lanes)
    out = []
    for group, key, c in zip(groups, keys, counts):
        # A lane without readings (a node none of the group ran on) as []: the result stays small.
        per_lane = [lane if any(lane) else [] for lane in c.T.tolist()]
        out.append({**{k: group[k] for k in _GROUP_FIELDS}, "counts": per_lane,
                    "alive": _alive(members[key], centres, end_s).tolist()})
    return {"groups": out, "centres": centres.tolist(), "nodes": all_nodes, "processes": len(chosen)}


def bin_shares(counts: list[list[int]], bins: int = TIME_BINS) -> np.ndarray:
    """A group's readings per node lane and time bin ([] for none) -> the
    share of each bin's readings on each lane (0 where a bin has none)."""
    c = np.array([lane or [0] * bins for lane in counts], dtype=np.int64).reshape(len(counts), bins).T
    total = c.sum(axis=1, keepdims=True)
    return np.divide(c, total, out=np.zeros(c.shape), where=total > 0).T


# What the timeline says of each group (the counts are in summary["process_groups"]).
_GROUP_FIELDS = ("host", "role", "count", "masks", "allowed_cpus", "allowed_nodes", "spanning")


def _alive(members: list[dict], centres: np.ndarray, end_s: float) -> np.ndarray:
    """How many of the members were alive at each time."""
    created = np.array([p["created_s"] for p in members])
    stop = np.array([p["exited_s"] if p["exited_s"] is not None else end_s for p in members])
    lived = stop >= created
    created, stop = np.sort(created[lived]), np.sort(stop[lived])
    return np.searchsorted(created, centres, side="right") - np.searchsorted(stop, centres, side="left")

