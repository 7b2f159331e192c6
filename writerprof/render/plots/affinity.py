"""The affinity timeline: where each process ran (summary["affinity"])."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from writerprof.analysis.affinity import bin_shares
from writerprof.render.plots.style import NO_NODE, Uncrowded, empty, figure, node_colour, node_legend, title, who
from writerprof.units import format_cpu_list

# At most this many (host, role) groups drawn: each is two axes, and
# matplotlib's cost is per axes (a 1024-rank run has hundreds of groups).
MAX_PLOTTED_GROUPS = 12
IDLE = "#aaaaaa"  # a reading of a process that used no CPU since the one before


def affinity_timeline(summary: dict) -> Figure:
    """Where each process ran: the CPU of every sampler tick, coloured by its
    NUMA node where it used CPU since the tick before, a small grey dot where
    it was idle, over the CPUs it was allowed (shaded by node); on a
    producer's row its writers' lifetimes. Many processes: one row per (host,
    role), the share of its busy readings on each node over time, with the
    number of live processes."""
    found = summary.get("affinity")
    if not found:
        return empty("Where each process ran", "no sampler readings in this run (recorded with --no-sampler?)")
    if "rows" in found:
        return _per_process(summary, found)
    return _per_group(summary, found)


def _per_process(summary: dict, found: dict) -> Figure:
    procs = summary["processes"]
    rows = found["rows"]
    multi_host = len({procs[r["id"]]["host"] for r in rows}) > 1
    ncpus = max((t["cpus"] for t in summary["topology"].values()), default=2)
    row_height = 0.55 if ncpus <= 4 else 0.8 if ncpus <= 32 else 1.2
    fig = figure(12, 1.3 + row_height * len(rows))
    axes = fig.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
    seen_nodes, idle_drawn = set(), False
    for ax, row in zip(axes, rows):
        proc = procs[row["id"]]
        # The CPUs it was allowed, shaded by node, per interval between affinity changes.
        for a, b, runs in row["allowed"]:
            for first, last, node in runs:
                ax.broken_barh([(a, b - a)], (first - 0.5, last - first + 1), facecolor=node_colour(node),
                               alpha=0.15, edgecolor="none")
        # Its writers' lifetimes, on a producer's row.
        for created, stop, _ in row["writers"]:
            ax.axvspan(created, stop, color="#000000", alpha=0.06, lw=0)
        marks = [(created, 1.0, f" w{save if save is not None else ''}") for created, _, save in row["writers"]]
        Uncrowded(ax, marks, transform=ax.get_xaxis_transform(), fontsize=7, va="top", color="#333333")
        for edge in (proc["created_s"], proc["exited_s"]):
            if edge is not None:
                ax.axvline(edge, color="#333333", lw=0.8, ls=":")
        busy = np.array(row["busy"], dtype=bool)
        t, cpu = np.array(row["t_s"]), np.array(row["cpu"])
        if busy.any():
            ax.scatter(t[busy], cpu[busy], c=[node_colour(n) for n, b in zip(row["node"], busy) if b], s=9,
                       marker="s", linewidths=0)
            seen_nodes.update(n for n, b in zip(row["node"], busy) if b and n >= 0)
        if not busy.all():  # where it last ran, asleep: not where it worked
            ax.scatter(t[~busy], cpu[~busy], c=IDLE, s=2, marker="o", linewidths=0)
            idle_drawn = True
        seen_nodes.update(row["host_nodes"])
        if row["cpus"]:
            ax.set_ylim(min(row["cpus"]) - 0.6, max(row["cpus"]) + 0.6)
            if len(row["cpus"]) <= 8:
                ax.set_yticks(row["cpus"])
        label = who(proc, multi_host)
        if row["save"] is not None:
            label += f"\nsave {row['save']}"
        ax.set_ylabel(label, rotation=0, ha="right", va="center", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="x", color="#eeeeee", lw=0.5)
    axes[-1].set_xlabel("seconds since the recording started")
    title(axes[0], f"Where each process ran ({len(rows)} processes): the sampled CPU (y) coloured by its "
                   f"NUMA node where it used CPU since the reading before (a small grey dot: idle, on the CPU it "
                   f"last ran on); shading = the CPUs it was allowed; grey bands on a producer = its writers' "
                   f"lifetimes (w<save>)")
    handles = node_legend(seen_nodes, summary["topology"])
    if idle_drawn:
        handles.append(Line2D([], [], marker="o", markersize=3, color=IDLE, lw=0, label="idle"))
    handles.append(Patch(facecolor="#000000", alpha=0.1, label="writer alive"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6), fontsize=8)
    fig.supylabel("CPU", fontsize=8)
    return fig


def spread(group: dict) -> float:
    """The share of a group's sampler readings off the node lane it was read
    on most (0: all on one node; a group without readings 0 as well)."""
    per_lane = [sum(lane) for lane in group["counts"]]
    total = sum(per_lane)
    return 1 - max(per_lane) / total if total else 0.0


def plotted_groups(groups: list[dict], cap: int = MAX_PLOTTED_GROUPS) -> list[dict]:
    """Up to cap groups, the most spread over nodes first (spread), else in
    the summary's order (host, role); drawn in the summary's order."""
    if len(groups) <= cap:
        return groups
    order = sorted(range(len(groups)), key=lambda i: (-spread(groups[i]), i))
    return [groups[i] for i in sorted(order[:cap])]


def _per_group(summary: dict, found: dict) -> Figure:
    centres, all_nodes = found["centres"], found["nodes"]
    groups = plotted_groups(found["groups"])
    capped = len(groups) < len(found["groups"])
    fig = figure(12, 1.4 + 1.0 * len(groups))
    axes = fig.subplots(len(groups), 1, sharex=True, squeeze=False)[:, 0]
    for ax, g in zip(axes, groups):
        ax.stackplot(np.array(centres), bin_shares(g["counts"], len(centres)), colors=[node_colour(n) for n in all_nodes] + [NO_NODE],
                     step="mid", linewidth=0)
        ax.set_ylim(0, 1)
        ax.set_yticks([0, 0.5, 1])
        ax.tick_params(axis="y", labelsize=7)
        # How many of the group were alive: the writers' lifetimes, at scale.
        twin = ax.twinx()
        twin.step(np.array(centres), np.array(g["alive"], dtype=float), where="mid", color="#000000", lw=0.9)
        twin.set_ylim(0, max(1, max(g["alive"])) * 1.1)
        twin.tick_params(axis="y", labelsize=7)
        mask_text = (f"allowed CPUs {format_cpu_list(g['allowed_cpus'])}" if g["masks"] == 1
                     else f"{g['masks']} different masks")
        allowed_nodes = g["allowed_nodes"]
        ax.set_ylabel(f"{g['role']} on {g['host']}\n{g['count']} processes\n{mask_text}\n"
                      f"nodes {','.join(map(str, allowed_nodes)) or '?'}"
                      + (f"; {g['spanning']} span >1 node" if g["spanning"] and len(allowed_nodes) > 1 else ""),
                      rotation=0, ha="right", va="center", fontsize=8)
    axes[-1].set_xlabel("seconds since the recording started")
    shown = (f"{len(found['groups'])} groups; the {len(groups)} most spread over nodes shown" if capped
             else f"{len(groups)} groups")
    title(axes[0], f"Where the processes ran, by host and role ({found['processes']} processes in {shown}): share "
                   f"of the busy sampler readings (CPU used since the reading before) on each NUMA node over time "
                   f"(left axis; blank: all idle); black line = processes alive (right axis)")
    handles = node_legend(all_nodes, summary["topology"])
    handles.append(Patch(facecolor=NO_NODE, label="no known node"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(len(handles), 6), fontsize=8)
    return fig
