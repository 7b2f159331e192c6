"""Plots of a run and of a comparison, as matplotlib Figures: they draw what
the summary (or the comparison) says and compute no findings of their own;
the timelines read the run's arrays for what to draw.

Figures are made with matplotlib.figure.Figure, never pyplot: no display is
needed and a caller's pyplot state is left alone. Saving picks the Agg (PNG)
or SVG canvas by the file's format.

One colour per critical-path component or hooked phase (COLOURS) in every
plot, and one per NUMA node (node_colour). With many processes or saves
(MPI runs) each plot aggregates, per (host, role), per save index, or to a
few representative ranks, and says so in its title.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from writerprof.analysis.clocks import host_offsets
from writerprof.analysis.processes import dominant
from writerprof.analysis.samples import sample_rows
from writerprof.analysis.saves import COMPONENTS, STARTUP_PHASES
from writerprof.run import roles as run_roles
from writerprof.run.topology import cpu_nodes
from writerprof.units import format_cpu_list

# One colour per component of the critical path, per phase of a hooked call
# and per start-up phase, the same in every plot. Start-up phases are warm
# (the __main__ re-run the strongest), the writer's I/O cool, the producer's
# work green.
COLOURS = {
    "setup": "#b0b0b0",
    "startup:start": "#fdd49e",
    "startup:interpreter": "#fdbb84",
    "startup:main_rerun": "#d7301f",
    "startup:unpickle": "#fc8d59",
    "startup:bootstrap": "#ef6548",
    "startup:target_setup": "#990000",
    "generation": "#2ca02c",
    "put-wait": "#b8e0b0",
    "queue": "#bcbd22",
    "get-wait": "#e6e68a",
    "write": "#1f77b4",
    "fadvise": "#17becf",
    "fsync": "#6a3d9a",
    "close": "#e377c2",
    "teardown": "#8c564b",
    "unexplained": "#404040",
}
# Other names of the same things: hooked phases, start-up phases.
_ALIASES = {"gen": "generation", "put": "put-wait", "get": "get-wait", "first_chunk": "get-wait",
            **{p: f"startup:{p}" for p in STARTUP_PHASES[:-1]}}
# What each coloured thing is called in a legend.
NAMES = {
    "setup": "setup (buffers)", "startup:start": "start-up: start", "startup:interpreter": "start-up: interpreter",
    "startup:main_rerun": "start-up: __main__ re-run", "startup:unpickle": "start-up: unpickle",
    "startup:bootstrap": "start-up: bootstrap", "startup:target_setup": "start-up: target setup",
    "generation": "gen", "put-wait": "put-wait (producer blocked)", "queue": "queue (both waiting)",
    "get-wait": "get-wait (writer waiting)", "write": "write", "fadvise": "fadvise", "fsync": "fsync",
    "close": "close", "teardown": "teardown", "unexplained": "unexplained",
}
# One colour per NUMA node (Dark2, then tab10's), and for pages on no node yet.
NODE_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
                "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
NO_NODE = "#dddddd"
SIDE_COLOUR = "#e0e0e0"  # a waterfall's whole-save bars

# Beyond these, plots aggregate.
MAX_PROCESS_ROWS = 16  # affinity timeline: one row per process up to this many
MAX_PAIRS = 4  # chunk timeline: producer/writer pairs drawn before picking representatives
MAX_BUFFER_BARS = 48  # buffer placement: one bar per buffer up to this many
MAX_SAVE_BARS = 12  # save decomposition: one bar per save, per side, up to this many
MAX_INDEX_BARS = 30  # ... and at most this many save-index bars (consecutive indices pooled beyond)
TIME_BINS = 120  # affinity timeline at scale: time bins of the node shares
# The waterfall lumps components whose difference is below this share of the total difference.
WATERFALL_MIN_SHARE = 0.01
WATERFALL_MIN_S = 0.0005

# The hooked phases each side of a pair does (the timeline's lanes).
_PRODUCER_PHASES = ("gen", "put")
_WRITER_PHASES = ("get", "write", "fadvise", "fsync", "close")


def colour(name: str) -> str:
    """The colour of a component, hooked phase or start-up phase, by any of its names."""
    return COLOURS.get(_ALIASES.get(name, name), "#999999")


def node_colour(node) -> str:
    if node is None or int(node) < 0:
        return NO_NODE
    return NODE_COLOURS[int(node) % len(NODE_COLOURS)]


def _name(key: str) -> str:
    key = _ALIASES.get(key, key)
    return NAMES.get(key, key)


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _empty(title: str, why: str, width: float = 8, height: float = 2.5) -> Figure:
    fig = _figure(width, height)
    ax = fig.add_subplot()
    ax.set_title(title)
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, color="#555555")
    ax.set_axis_off()
    return fig


def _title(ax, text: str, fontsize: float = 9) -> None:
    """A left-aligned title wrapped to the width of its figure."""
    width = int(ax.figure.get_figwidth() * 10.5 * 9 / fontsize)
    ax.set_title(textwrap.fill(text, width), fontsize=fontsize, loc="left")


def _origin(summary: dict) -> int:
    return summary["run"].get("started_ns") or 0


def _rank(rank) -> str:
    return f"rank {rank}" if rank is not None and rank >= 0 else ""


def _who(proc: dict, multi_host: bool) -> str:
    """'writer 1234' / 'producer rank 3 (h1)'."""
    parts = [proc["role"], _rank(proc["rank"]), str(proc["pid"])]
    text = " ".join(p for p in parts if p)
    return f"{text} ({proc['host']})" if multi_host else text


def _node_legend(nodes, topology: dict | None = None) -> list[Patch]:
    handles = []
    for node in sorted(nodes):
        cpus = ""
        if topology:
            lists = [t["nodes"].get(str(node)) for t in topology.values() if t.get("nodes", {}).get(str(node))]
            if len(lists) == 1:
                cpus = f" (CPUs {format_cpu_list(lists[0])})"
        handles.append(Patch(facecolor=node_colour(node), label=f"node {node}{cpus}"))
    return handles


def _sample_nodes(run) -> np.ndarray:
    """The NUMA node of the CPU of each of run.samples, or -1."""
    s = run.samples
    out = np.full(len(s), -1, dtype=np.int64)
    for host_index, host in enumerate(run.hosts):
        nodes = cpu_nodes(run.topology[host]) if host in run.topology else {}
        if not nodes:
            continue
        lut = np.full(max(nodes) + 1, -1, dtype=np.int64)
        for cpu, node in nodes.items():
            lut[cpu] = node
        mine = (s["host_index"] == host_index) & (s["cpu"] >= 0) & (s["cpu"] < len(lut))
        out[mine] = lut[s["cpu"][mine]]
    return out


def _run_end_s(run, summary: dict, times: np.ndarray) -> float:
    ended = run.meta.get("ended_ns")
    if ended:
        return (ended - _origin(summary)) / 1e9
    return float(times.max()) if len(times) else 1.0


# --- affinity timeline -------------------------------------------------------------------------

def affinity_timeline(run, summary: dict, max_rows: int = MAX_PROCESS_ROWS) -> Figure:
    """Where each process ran: the CPU of every sampler tick, coloured by its
    NUMA node, over the CPUs it was allowed (shaded by node); on a producer's
    row its writers' lifetimes. More than max_rows processes: one row per
    (host, role), the share of samples on each node over time, with the
    number of live processes."""
    offsets = host_offsets(run)  # the summary's times are on one time line already; the run's are not
    procs = [p for p in summary["processes"]
             if p["samples"] or p["role"] in (run_roles.PRODUCER, run_roles.WRITER)]
    title = "Where each process ran"
    if not len(run.samples) or not procs:
        return _empty(title, "no sampler readings in this run (recorded with --no-sampler?)")
    rows = sample_rows(run)
    nodes = _sample_nodes(run)
    shift = np.array([offsets.get(h, 0) for h in run.hosts] or [0], dtype=np.int64)
    t = (run.samples["t_ns"] + shift[run.samples["host_index"]] - _origin(summary)) / 1e9
    end_s = _run_end_s(run, summary, t)
    if len(procs) <= max_rows:
        return _affinity_per_process(run, summary, procs, rows, nodes, t, end_s)
    return _affinity_per_group(run, summary, procs, rows, nodes, t, end_s)


def _mask_intervals(proc: dict, end_s: float) -> list[tuple[float, float, list[int]]]:
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


def _cpu_runs(cpus, nodes: dict[int, int]) -> list[tuple[int, int, int | None]]:
    """Consecutive CPUs on one node: (first, last, node)."""
    runs = []
    for cpu in sorted(cpus):
        node = nodes.get(cpu)
        if runs and runs[-1][1] == cpu - 1 and runs[-1][2] == node:
            runs[-1] = (runs[-1][0], cpu, node)
        else:
            runs.append((cpu, cpu, node))
    return runs


def _affinity_per_process(run, summary, procs, rows, nodes, t, end_s) -> Figure:
    procs = sorted(procs, key=lambda p: (p["host"], p["created_s"]))
    multi_host = len({p["host"] for p in procs}) > 1
    save_of = {s["writer"]: s for s in summary["saves"] if s["writer"] is not None}
    # A producer's writers by its saves (under forkserver their parent is the daemon).
    by_id = {p["id"]: p for p in procs}
    writers_of = defaultdict(list)
    for s in summary["saves"]:
        if s["writer"] is not None and s["writer"] in by_id:
            writers_of[s["producer"]].append(by_id[s["writer"]])
    ncpus = max((len(cpu_nodes(topo)) for topo in run.topology.values()), default=2)
    row_height = 0.55 if ncpus <= 4 else 0.8 if ncpus <= 32 else 1.2
    fig = _figure(12, 1.3 + row_height * len(procs))
    axes = fig.subplots(len(procs), 1, sharex=True, squeeze=False)[:, 0]
    seen_nodes = set()
    for ax, proc in zip(axes, procs):
        host_nodes = cpu_nodes(run.topology[proc["host"]]) if proc["host"] in run.topology else {}
        # The CPUs it was allowed, shaded by node, per interval between affinity changes.
        for a, b, cpus in _mask_intervals(proc, end_s):
            for first, last, node in _cpu_runs(cpus, host_nodes):
                ax.broken_barh([(a, b - a)], (first - 0.5, last - first + 1), facecolor=node_colour(node),
                               alpha=0.15, edgecolor="none")
        # Its writers' lifetimes, on a producer's row.
        for writer in sorted(writers_of.get(proc["id"], []), key=lambda w: w["created_s"]):
            stop = writer["exited_s"] if writer["exited_s"] is not None else end_s
            ax.axvspan(writer["created_s"], stop, color="#000000", alpha=0.06, lw=0)
            save = save_of.get(writer["id"])
            ax.text(writer["created_s"], 1.0, f" w{save['save'] if save else ''}", transform=ax.get_xaxis_transform(),
                    fontsize=7, va="top", color="#333333")
        for edge in (proc["created_s"], proc["exited_s"]):
            if edge is not None:
                ax.axvline(edge, color="#333333", lw=0.8, ls=":")
        mine = rows == proc["id"]
        if mine.any():
            ax.scatter(t[mine], run.samples["cpu"][mine], c=[node_colour(n) for n in nodes[mine]], s=9,
                       marker="s", linewidths=0)
            seen_nodes.update(int(n) for n in np.unique(nodes[mine]) if n >= 0)
        seen_nodes.update(n for n in host_nodes.values())
        host_cpus = sorted(host_nodes) or sorted(set(proc["allowed_cpus"]))
        if host_cpus:
            ax.set_ylim(min(host_cpus) - 0.6, max(host_cpus) + 0.6)
            if len(host_cpus) <= 8:
                ax.set_yticks(host_cpus)
        label = _who(proc, multi_host)
        save = save_of.get(proc["id"])
        if save:
            label += f"\nsave {save['save']}"
        ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="x", color="#eeeeee", lw=0.5)
    axes[-1].set_xlabel("seconds since the recording started")
    _title(axes[0], f"Where each process ran ({len(procs)} processes): the sampled CPU (y) coloured by its "
                    f"NUMA node; shading = the CPUs it was allowed; grey bands on a producer = its writers' "
                    f"lifetimes (w<save>)")
    handles = _node_legend(seen_nodes, summary["topology"])
    handles.append(Patch(facecolor="#000000", alpha=0.1, label="writer alive"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6), fontsize=8)
    fig.supylabel("CPU", fontsize=8)
    return fig


def _affinity_per_group(run, summary, procs, rows, nodes, t, end_s) -> Figure:
    groups: dict = defaultdict(list)
    for p in procs:
        groups[(p["host"], p["role"])].append(p)
    order = {run_roles.PRODUCER: 0, run_roles.WRITER: 1, run_roles.FORKSERVER: 2, run_roles.RESOURCE_TRACKER: 3}
    keys = sorted(groups, key=lambda k: (k[0], order.get(k[1], 9), k[1]))
    group_of = np.full(len(summary["processes"]) + 1, -1, dtype=np.int64)
    for g, key in enumerate(keys):
        group_of[[p["id"] for p in groups[key]]] = g
    g_of_sample = np.where(rows >= 0, group_of[rows], -1)
    t0 = min(0.0, float(t.min()))
    edges = np.linspace(t0, max(end_s, float(t.max())), TIME_BINS + 1)
    width = edges[1] - edges[0]
    centres = (edges[:-1] + edges[1:]) / 2
    b = np.clip(((t - t0) / width).astype(np.int64), 0, TIME_BINS - 1)
    all_nodes = sorted({int(n) for n in np.unique(nodes) if n >= 0}
                       | {n for topo in run.topology.values() for n in cpu_nodes(topo).values()})
    node_index = {n: i for i, n in enumerate(all_nodes)}
    lanes = len(all_nodes) + 1  # the last: samples on no known node
    lane = np.array([node_index.get(int(n), len(all_nodes)) for n in nodes], dtype=np.int64) if len(nodes) else nodes
    keep = g_of_sample >= 0
    flat = (g_of_sample[keep] * TIME_BINS + b[keep]) * lanes + lane[keep]
    counts = np.bincount(flat, minlength=len(keys) * TIME_BINS * lanes).reshape(len(keys), TIME_BINS, lanes)
    fig = _figure(12, 1.4 + 1.0 * len(keys))
    axes = fig.subplots(len(keys), 1, sharex=True, squeeze=False)[:, 0]
    nprocs = len(procs)
    for ax, key, c in zip(axes, keys, counts):
        members = groups[key]
        total = c.sum(axis=1, keepdims=True)
        share = np.divide(c, total, out=np.zeros(c.shape), where=total > 0)
        ax.stackplot(centres, share.T, colors=[node_colour(n) for n in all_nodes] + [NO_NODE], step="mid",
                     linewidth=0)
        ax.set_ylim(0, 1)
        ax.set_yticks([0, 0.5, 1])
        ax.tick_params(axis="y", labelsize=7)
        # How many of the group were alive: the writers' lifetimes, at scale.
        alive = np.zeros(TIME_BINS)
        for p in members:
            stop = p["exited_s"] if p["exited_s"] is not None else end_s
            alive += (centres >= p["created_s"]) & (centres <= stop)
        twin = ax.twinx()
        twin.step(centres, alive, where="mid", color="#000000", lw=0.9)
        twin.set_ylim(0, max(1, alive.max()) * 1.1)
        twin.tick_params(axis="y", labelsize=7)
        masks = {tuple(p["allowed_cpus"]) for p in members}
        allowed_nodes = sorted({n for p in members for n in p["allowed_nodes"]})
        spanning = sum(len(p["allowed_nodes"]) > 1 for p in members)
        mask_text = (f"allowed CPUs {format_cpu_list(next(iter(masks)))}" if len(masks) == 1
                     else f"{len(masks)} different masks")
        ax.set_ylabel(f"{key[1]} on {key[0]}\n{len(members)} processes\n{mask_text}\n"
                      f"nodes {','.join(map(str, allowed_nodes)) or '?'}"
                      + (f"; {spanning} span >1 node" if spanning and len(allowed_nodes) > 1 else ""),
                      rotation=0, ha="right", va="center", fontsize=8)
    axes[-1].set_xlabel("seconds since the recording started")
    _title(axes[0], f"Where the processes ran, by host and role ({nprocs} processes in {len(keys)} groups): "
                    f"share of sampler ticks on each NUMA node over time (left axis); "
                    f"black line = processes alive (right axis)")
    handles = _node_legend(all_nodes, summary["topology"])
    handles.append(Patch(facecolor=NO_NODE, label="no known node"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6), fontsize=8)
    return fig


# --- buffer placement --------------------------------------------------------------------------

def _placements(run, summary: dict) -> list[dict]:
    """Per save: the writer's main node and, per buffer it copied from, its
    pages per node (and not yet faulted) at the end of the writer's loop."""
    by_proc: dict = defaultdict(list)
    for proc, kind, data in zip(run.events["proc"], run.events["kind"], run.events["data"]):
        if kind in ("shm", "placement"):
            by_proc[int(proc)].append((kind, data))
    out = []
    procs = summary["processes"]
    for save in summary["saves"]:
        buffers = []
        for proc, owned in ((save["writer"], None), (save["producer"], (save["start_ns"], save["end_ns"]))):
            if proc is None:
                continue
            events = by_proc.get(proc, [])
            if owned is None:
                own = {d.get("index") for k, d in events if k == "shm" and d.get("op") in ("create", "attach")}
            else:  # the producer's buffers created within the save
                own = {d.get("index") for k, d in events if k == "shm" and d.get("op") == "create"
                       and owned[0] <= (d.get("t_ns") or 0) <= owned[1]}
            last: dict = {}
            for kind, d in events:
                if kind == "placement" and d.get("when") == "end" and d.get("index") in own:
                    last[d["index"]] = d
            for index, d in sorted(last.items()):
                scale = d["pages"] / d["sampled"] if d.get("sampled") and d.get("pages") else 1.0
                buffers.append({"index": index, "nodes": {int(n): c * scale for n, c in (d.get("nodes") or {}).items()},
                                "unfaulted": (d.get("unfaulted") or 0) * scale})
            if buffers:
                break
        writer = procs[save["writer"]] if save["writer"] is not None else None
        node, share = dominant(writer["worked_nodes"] if writer else {})
        out.append({"save": save, "writer_node": node, "writer_share": share, "buffers": buffers})
    return out


def _placements_from_summary(summary: dict) -> list[dict]:
    """Without the run: each writer's buffers as one bar, shares of pages per node."""
    out = []
    procs = summary["processes"]
    for save in summary["saves"]:
        writer = procs[save["writer"]] if save["writer"] is not None else None
        share = (writer or {}).get("buffer_nodes") or procs[save["producer"]]["buffer_nodes"]
        node, node_share = dominant(writer["worked_nodes"] if writer else {})
        out.append({"save": save, "writer_node": node, "writer_share": node_share,
                    "buffers": [{"index": "all", "nodes": {int(n): v for n, v in share.items()}, "unfaulted": 0}]
                    if share else []})
    return out


def buffer_placement(summary: dict, run=None, max_bars: int = MAX_BUFFER_BARS) -> Figure:
    """Pages of each buffer per NUMA node at the end of the writer's loop,
    with the node the writer ran on (from the run's placement readings; from
    the summary's shares without the run). More than max_bars buffers: one
    bar per (host, node the writers ran on), the share of their buffers'
    pages on each node."""
    title = "Buffer placement"
    saves = _placements(run, summary) if run is not None else _placements_from_summary(summary)
    saves = [s for s in saves if s["buffers"]]
    if not saves:
        return _empty(title, "no placement readings of the buffers in this run")
    unit = "pages" if run is not None else "share of pages"
    nbars = sum(len(s["buffers"]) for s in saves)
    if nbars <= max_bars:
        return _placement_per_buffer(summary, saves, unit)
    return _placement_per_node(summary, saves)


def _placement_per_buffer(summary, saves, unit) -> Figure:
    multi_rank = len({(s["save"]["host"], s["save"]["producer"]) for s in saves}) > 1
    nodes = sorted({n for s in saves for b in s["buffers"] for n in b["nodes"]}
                   | {s["writer_node"] for s in saves if s["writer_node"] is not None})
    fig = _figure(max(6.0, 1.2 + 0.35 * sum(len(s["buffers"]) + 1 for s in saves)), 4.2)
    ax = fig.add_subplot()
    x, centres, labels = 0.0, [], []
    top = max(sum(b["nodes"].values()) + b["unfaulted"] for s in saves for b in s["buffers"]) or 1
    for s in saves:
        xs = []
        for b in s["buffers"]:
            bottom = 0.0
            for node in nodes:
                value = b["nodes"].get(node, 0)
                if value:
                    ax.bar(x, value, bottom=bottom, color=node_colour(node), width=0.8, edgecolor="white", lw=0.5)
                    bottom += value
            if b["unfaulted"]:
                ax.bar(x, b["unfaulted"], bottom=bottom, color=NO_NODE, width=0.8, hatch="//", edgecolor="#999999",
                       lw=0.5)
            xs.append(x)
            x += 1
        save = s["save"]
        centre = (xs[0] + xs[-1]) / 2
        centres.append(centre)
        labels.append(f"save {save['save']}" + (f"\n{_rank(save['rank']) or save['host']}" if multi_rank else ""))
        # The node the writer ran on, as a bar across its buffers.
        ax.plot([xs[0] - 0.4, xs[-1] + 0.4], [top * 1.06] * 2, color=node_colour(s["writer_node"]), lw=5,
                solid_capstyle="butt")
        where = (f"writer: node {s['writer_node']} ({s['writer_share']:.0%})" if s["writer_node"] is not None
                 else "writer: node ?")
        ax.text(centre, top * 1.1, where, ha="center", va="bottom", fontsize=7)
        x += 0.8
    ax.set_xticks(centres, labels, fontsize=8)
    ax.set_ylim(0, top * 1.25)
    ax.set_ylabel(f"{unit} per node (estimated from sampled pages)" if unit == "pages" else unit)
    _title(ax, f"Buffer placement: pages of each buffer per NUMA node at the end of the writer's loop "
               f"({sum(len(s['buffers']) for s in saves)} buffers in {len(saves)} saves); the line above "
               f"= the node the writer ran on")
    handles = _node_legend(nodes, summary["topology"])
    if any(b["unfaulted"] for s in saves for b in s["buffers"]):
        handles.append(Patch(facecolor=NO_NODE, hatch="//", edgecolor="#999999", label="not faulted in"))
    ax.legend(handles=handles, fontsize=8, loc="upper right", framealpha=0.9)
    return fig


def _placement_per_node(summary, saves) -> Figure:
    groups: dict = defaultdict(lambda: {"pages": defaultdict(float), "saves": 0, "buffers": 0})
    for s in saves:
        g = groups[(s["save"]["host"], s["writer_node"])]
        g["saves"] += 1
        for b in s["buffers"]:
            g["buffers"] += 1
            for node, value in b["nodes"].items():
                g["pages"][node] += value
            g["pages"][-1] += b["unfaulted"]
    keys = sorted(groups, key=lambda k: (k[0], -1 if k[1] is None else k[1]))
    nodes = sorted({n for g in groups.values() for n in g["pages"] if n >= 0} | {n for _, n in keys if n is not None})
    fig = _figure(max(6.0, 2 + 1.3 * len(keys)), 4.2)
    ax = fig.add_subplot()
    for i, key in enumerate(keys):
        pages = groups[key]["pages"]
        total = sum(pages.values()) or 1
        bottom = 0.0
        for node in nodes + [-1]:
            value = pages.get(node, 0) / total
            if value:
                ax.bar(i, value, bottom=bottom, color=node_colour(node), width=0.7, edgecolor="white", lw=0.5,
                       hatch="//" if node < 0 else None)
                bottom += value
        local = pages.get(key[1], 0) / total if key[1] is not None else None
        ax.text(i, 1.02, f"{groups[key]['saves']} saves\n" + (f"{local:.0%} local" if local is not None else ""),
                ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(keys)), [f"{host}\nwriters on\nnode {'?' if n is None else n}" for host, n in keys],
                  fontsize=8)
    for label, (_, node) in zip(ax.get_xticklabels(), keys):  # in the colour of the writers' node
        label.set_color(node_colour(node) if node is not None else "#333333")
        label.set_fontweight("bold")
    ax.set_ylim(0, 1.2)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1])
    ax.set_ylabel("share of the buffers' pages")
    _title(ax, f"Buffer placement at scale ({sum(g['buffers'] for g in groups.values())} buffers in {len(saves)} "
               f"saves): pages per NUMA node, by host and the node the writer ran on "
               f"(local = on the writer's node)")
    handles = _node_legend(nodes, summary["topology"])
    if any(g["pages"].get(-1) for g in groups.values()):
        handles.append(Patch(facecolor=NO_NODE, hatch="//", edgecolor="#999999", label="not faulted in"))
    ax.legend(handles=handles, fontsize=8, loc="upper right", framealpha=0.9)
    return fig


# --- chunk timeline ----------------------------------------------------------------------------

def _representatives(summary: dict, max_pairs: int) -> tuple[list[int], str]:
    """The producers to draw and what they are."""
    by_producer: dict = defaultdict(list)
    for s in summary["saves"]:
        by_producer[s["producer"]].append(s["duration_s"])
    producers = sorted(by_producer, key=lambda p: min(s["start_ns"] for s in summary["saves"] if s["producer"] == p))
    if len(producers) <= max_pairs:
        return producers, ""
    ranked = sorted(producers, key=lambda p: float(np.mean(by_producer[p])))
    picks = {"slowest": ranked[-1], "median": ranked[len(ranked) // 2], "fastest": ranked[0]}
    chosen, said = [], []
    for what, p in picks.items():
        if p not in chosen:
            chosen.append(p)
            proc = summary["processes"][p]
            said.append(f"{what} {_rank(proc['rank']) or 'pid ' + str(proc['pid'])}"
                        f" ({float(np.mean(by_producer[p])):.2f} s)")
    return chosen, (f"{len(chosen)} of {len(producers)} producers by mean save time: " + ", ".join(said))


def chunk_timeline(run, summary: dict, max_pairs: int = MAX_PAIRS) -> Figure:
    """Per producer/writer pair, on one time axis: the producer's setup, gen
    and put-wait; the writer's start-up phases, then get-wait, write, fadvise,
    fsync and close. More than max_pairs producers: the slowest, the median
    and the fastest by mean save time, as the title says."""
    title = "Chunk timeline"
    if not summary["saves"]:
        return _empty(title, "no saves in this run")
    producers, picked = _representatives(summary, max_pairs)
    offsets = host_offsets(run)
    names = run.phase_names
    phase_of = np.array([names.get(int(c), "") for c in range(max(names, default=0) + 1)], dtype=object)
    chunk_phase = phase_of[np.minimum(run.chunks["phase"], len(phase_of) - 1)] if len(run.chunks) else np.array([])
    starts = {}  # (producer, writer pid) -> Process.start() start_ns
    for proc, kind, data in zip(run.events["proc"], run.events["kind"], run.events["data"]):
        if kind == "process_start" and data.get("started"):
            starts[(int(proc), data.get("child_pid"))] = data.get("start_ns")
    multi_host = len(summary["run"]["hosts"]) > 1
    lanes = []  # (label, {colour key: [(x, width)]})
    save_marks = []  # (lane, t, text)
    for producer in producers:
        saves = [s for s in summary["saves"] if s["producer"] == producer]
        proc = summary["processes"][producer]
        origin = _origin(summary) - offsets.get(proc["host"], 0)  # on this host's clock
        p_bars: dict = defaultdict(list)
        w_bars: dict = defaultdict(list)
        mine = run.chunks["proc"] == producer
        for name in _PRODUCER_PHASES:
            sel = mine & (chunk_phase == name)
            p_bars[name] += _spans(run.chunks[sel], origin)
        writers = [s["writer"] for s in saves if s["writer"] is not None]
        in_writers = np.isin(run.chunks["proc"], writers)
        for name in _WRITER_PHASES:
            w_bars[name] += _spans(run.chunks[in_writers & (chunk_phase == name)], origin)
        for s in saves:
            t_start = starts.get((producer, s["writer_pid"]))
            if t_start is None and s["writer"] is not None and s["startup_s"] is not None:
                writes = run.chunks[(run.chunks["proc"] == s["writer"]) & (chunk_phase == "write")]
                t_start = int(writes["start_ns"].min()) - s["startup_s"] * 1e9 if len(writes) else None
            if t_start is not None:
                if t_start > s["start_ns"]:
                    p_bars["setup"].append(((s["start_ns"] - origin) / 1e9, (t_start - s["start_ns"]) / 1e9))
                at = (t_start - origin) / 1e9
                for phase in STARTUP_PHASES:
                    seconds = (s["startup"] or {}).get(phase, 0.0)
                    if seconds > 0:
                        w_bars[phase].append((at, seconds))
                        at += seconds
            save_marks.append((len(lanes), (s["start_ns"] - origin) / 1e9, f"save {s['save']}"))
        who = _rank(proc["rank"]) or f"pid {proc['pid']}"
        where = f" ({proc['host']})" if multi_host else ""
        lanes.append((f"producer {who}{where}", p_bars))
        lanes.append((f"writers of {who}{where}", w_bars))
    n = len(lanes)
    fig = _figure(12, 1.5 + 0.55 * n)
    ax = fig.add_subplot()
    used = set()
    for i, (label, bars) in enumerate(lanes):
        y = n - 1 - i
        for key in ["setup", *STARTUP_PHASES, *_PRODUCER_PHASES, *_WRITER_PHASES]:
            spans = bars.get(key)
            if spans:
                ax.broken_barh(spans, (y - 0.38, 0.76), facecolors=colour(key), edgecolor="none")
                used.add(_ALIASES.get(key, key))
    if len(save_marks) <= 40:
        for lane, t, text in save_marks:
            ax.text(t, n - 1 - lane + 0.42, text, fontsize=7, va="bottom", color="#333333")
    ax.set_yticks([n - 1 - i for i in range(n)], [label for label, _ in lanes], fontsize=8)
    ax.set_ylim(-0.6, n - 0.1 + 0.35)
    ax.set_xlabel("seconds since the recording started")
    ax.grid(axis="x", color="#eeeeee", lw=0.5)
    ax.set_axisbelow(True)
    head = ("Chunk timeline: " + picked) if picked else (
        f"Chunk timeline ({len(summary['saves'])} saves): producer and writer of each save")
    _title(ax, head + "; start-up phases before the writer's first chunk")
    order = [k for k in ["setup", *COMPONENTS, "put-wait", "get-wait"] if k in used]
    order = [k for k in COLOURS if k in order]
    ax.legend(handles=[Patch(facecolor=COLOURS[k], label=_name(k)) for k in order], fontsize=7,
              loc="upper left", bbox_to_anchor=(1.0, 1.0), framealpha=0.9)
    return fig


def _spans(chunks: np.ndarray, origin: int) -> list[tuple[float, float]]:
    return list(zip(((chunks["start_ns"] - origin) / 1e9).tolist(),
                    ((chunks["end_ns"] - chunks["start_ns"]) / 1e9).tolist()))


# --- save decomposition ------------------------------------------------------------------------

def _bars_of(summaries: list[dict], max_bars: int) -> tuple[list[str], list[dict], str]:
    """The bars of one side: labels, {component: seconds} with 'unexplained', and how they were made."""
    saves = [(i, s) for i, summary in enumerate(summaries) for s in summary["saves"]]
    producers = {(i, s["producer"]) for i, s in saves}

    def parts(group):
        out = {c: float(np.mean([s["critical_path"][c] for _, s in group])) for c in COMPONENTS}
        out["unexplained"] = float(np.mean([s["unexplained_s"] for _, s in group]))
        return out

    if len(saves) <= max_bars:
        labels = []
        for i, s in saves:
            label = f"{s['save']}"
            if len(summaries) > 1:
                label = f"#{i + 1}.{label}"
            if len(producers) > len(summaries) and s["rank"] >= 0:
                label = f"r{s['rank']}.{label}"
            labels.append(label)
        return labels, [parts([x]) for x in saves], "one bar per save (run#.save)" if len(summaries) > 1 else \
            "one bar per save"
    by_index: dict = defaultdict(list)
    for x in saves:
        by_index[x[1]["save"]].append(x)
    indices = sorted(by_index)
    step = -(-len(indices) // MAX_INDEX_BARS)
    labels, values = [], []
    for k in range(0, len(indices), step):
        chunk = indices[k:k + step]
        group = [x for i in chunk for x in by_index[i]]
        labels.append(f"{chunk[0]}" if len(chunk) == 1 else f"{chunk[0]}-{chunk[-1]}")
        values.append(parts(group))
    how = f"mean per save index over {len(producers)} producers" + (f" and {len(summaries)} runs"
                                                                      if len(summaries) > 1 else "")
    return labels, values, how


def save_decomposition(sides: dict[str, list[dict]], max_bars: int = MAX_SAVE_BARS) -> Figure:
    """Stacked bars of the critical-path components of each save (and the
    unexplained remainder) for each labelled side; more than max_bars saves
    on a side: the mean per save index."""
    title = "Where each save's time goes (critical path)"
    made = {label: _bars_of(summaries, max_bars) for label, summaries in sides.items()}
    made = {label: m for label, m in made.items() if m[0]}
    if not made:
        return _empty(title, "no saves")
    keys = [c for c in (*COMPONENTS, "unexplained") if any(v[c] > 0 for m in made.values() for v in m[1])]
    widths = [max(3, len(m[0])) for m in made.values()]
    width = max(8.0, 1.5 + 0.5 * sum(widths))
    fig = _figure(width, 5.4)
    axes = fig.subplots(1, len(made), sharey=True, squeeze=False, width_ratios=widths)[0]
    hows = set()
    for ax, (label, (labels, values, how)) in zip(axes, made.items()):
        x = np.arange(len(labels))
        bottom = np.zeros(len(labels))
        for key in keys:
            heights = np.array([v[key] for v in values])
            if heights.any():
                ax.bar(x, heights, bottom=bottom, color=COLOURS[key], width=0.75, label=_name(key), gid=key)
            bottom += heights
        for xi, total in zip(x, bottom):
            ax.text(xi, total, f"{total:.2f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(x, labels, fontsize=8)
        mean = float(np.mean([s["duration_s"] for summary in sides[label] for s in summary["saves"]]))
        ax.set_title(f"{label}\nmean save {mean:.3f} s", fontsize=9)
        hows.add(how)
        ax.set_xlabel("save")
        ax.margins(y=0.12)
    axes[0].set_ylabel("seconds")
    fig.suptitle(f"{title}: {'; '.join(sorted(hows))}", fontsize=10)
    fig.legend(handles=[Patch(facecolor=COLOURS[k], label=_name(k)) for k in keys], loc="outside lower center",
               fontsize=8, ncols=max(1, min(len(keys), int(width / 2.0))))
    return fig


# --- comparison waterfall ----------------------------------------------------------------------

def _side_name(side: dict, default: str) -> str:
    return side.get("name") or "/".join(side.get("start_methods") or []) or default


def compare_waterfall(comparison: dict) -> Figure:
    """From A's mean save time to B's through each component's difference
    (largest first; the near-zero ones pooled as 'other'), then the
    unexplained; every step labelled in seconds. It closes: the last bar is
    B's mean save time."""
    a, b = comparison["a"], comparison["b"]
    name_a, name_b = _side_name(a, "A"), _side_name(b, "B")
    difference = comparison["difference_s"]
    cutoff = max(WATERFALL_MIN_S, WATERFALL_MIN_SHARE * abs(difference))
    shown = sorted((c for c in comparison["components"] if abs(c["diff_s"]) >= cutoff),
                   key=lambda c: -abs(c["diff_s"]))
    rest = [c for c in comparison["components"] if abs(c["diff_s"]) < cutoff]
    steps = [(c["name"], c.get("label") or _name(c["name"]), c["diff_s"], COLOURS.get(c["name"], "#999999"))
             for c in shown]
    if rest:
        steps.append(("other", f"other ({len(rest)} components < {cutoff * 1000:.1f} ms)",
                      sum(c["diff_s"] for c in rest), "#cccccc"))
    steps.append(("unexplained", "unexplained", comparison["unexplained_s"], COLOURS["unexplained"]))
    fig = _figure(max(7.0, 2.5 + 1.0 * (len(steps) + 2)), 4.8)
    ax = fig.add_subplot()
    labels = [f"{name_a}\nmean save"]
    ax.bar(0, a["mean_save_s"], color=SIDE_COLOUR, edgecolor="#333333", lw=0.8, width=0.7, gid="start")
    ax.text(0, a["mean_save_s"], f"{a['mean_save_s']:.3f} s", ha="center", va="bottom", fontsize=8)
    level = a["mean_save_s"]
    span = max(a["mean_save_s"], b["mean_save_s"]) or 1
    for i, (key, label, diff, fill) in enumerate(steps, start=1):
        ax.bar(i, abs(diff) or span * 1e-4, bottom=min(level, level + diff), color=fill, width=0.7, gid=key,
               edgecolor="#333333" if key == "unexplained" else "none", lw=0.5)
        ax.plot([i - 1.35, i + 0.35], [level, level], color="#555555", lw=0.6, ls=":")
        ax.text(i, max(level, level + diff) + span * 0.01, f"{diff:+.3f} s", ha="center", va="bottom", fontsize=8)
        level += diff
        labels.append(_wrap(label, 14))
    end = len(steps) + 1
    ax.plot([end - 1.35, end + 0.35], [level, level], color="#555555", lw=0.6, ls=":", gid="closing")
    ax.bar(end, b["mean_save_s"], color=SIDE_COLOUR, edgecolor="#333333", lw=0.8, width=0.7, gid="end")
    ax.text(end, b["mean_save_s"], f"{b['mean_save_s']:.3f} s", ha="center", va="bottom", fontsize=8)
    labels.append(f"{name_b}\nmean save")
    ax.set_xticks(range(end + 1), labels, fontsize=8)
    ax.set_ylabel("seconds per save (mean)")
    ax.set_ylim(0, span * 1.18)
    change = comparison["throughput"].get("change")
    rate = f", {change:+.0%} throughput" if change is not None else ""
    _title(ax, f"{name_a} → {name_b}: {difference:+.3f} s per save{rate}; "
               f"each bar a component's difference (B − A)")
    ax.axhline(0, color="#333333", lw=0.6)
    return fig


def _wrap(text: str, width: int) -> str:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join(lines + [line])


# --- sets and files ----------------------------------------------------------------------------

def report_figures(run, summary: dict) -> dict[str, Figure]:
    """The plots of one run, by file name."""
    label = "/".join(summary["run"]["start_methods"]) or Path(summary["run"]["path"]).name
    return {
        "affinity_timeline": affinity_timeline(run, summary),
        "buffer_placement": buffer_placement(summary, run),
        "chunk_timeline": chunk_timeline(run, summary),
        "save_decomposition": save_decomposition({label: [summary]}),
    }


def save_figures(figures: dict[str, Figure], out_dir, dpi: int = 110) -> list[Path]:
    """NAME.png and NAME.svg for each figure; the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in figures.items():
        for fmt in ("png", "svg"):
            path = out / f"{name}.{fmt}"
            # No date in the files: the same run gives the same bytes.
            metadata = {"Date": None} if fmt == "svg" else {}
            fig.savefig(path, format=fmt, dpi=dpi, metadata=metadata)
            written.append(path)
    return written
