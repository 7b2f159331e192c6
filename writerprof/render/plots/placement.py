"""The buffer placement plot (summary["buffer_placement"])."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from writerprof.analysis import placement
from writerprof.render.format import rank_label
from writerprof.render.plots.style import NO_NODE, empty, figure, node_colour, node_legend, title

MIN_SAVE_SLOT = 3.6  # bar widths: a save's buffers and its label's room


def buffer_placement(summary: dict) -> Figure:
    """Pages of each buffer per NUMA node at the end of the writer's loop,
    with the node the writer ran on; at scale one bar per (host, node the
    writers ran on), the share of their buffers' pages on each node. A
    summary without the buffers' readings: the shares of its process rows."""
    found = summary.get("buffer_placement") or placement.from_shares(summary["processes"], summary["saves"])
    if found.get("groups"):
        return _per_node(summary, found["groups"])
    if not found.get("saves"):
        return empty("Buffer placement", "no placement readings of the buffers in this run")
    return _per_buffer(summary, found["saves"], found["unit"])


def _per_buffer(summary, saves, unit) -> Figure:
    multi_rank = len({(s["host"], s["producer"]) for s in saves}) > 1
    nodes = sorted({int(n) for s in saves for b in s["buffers"] for n in b["nodes"]}
                   | {s["writer_node"] for s in saves if s["writer_node"] is not None})
    # A bar and its gap are 0.35 in; a save's slot at least MIN_SAVE_SLOT of them, so
    # that its label ("writer: node 1 (100%)") stays over its own buffers.
    slots = [max(len(s["buffers"]) + 0.8, MIN_SAVE_SLOT) for s in saves]
    fig = figure(max(6.0, 3.5 + 0.35 * sum(slots)), 4.2)  # 3.5 in: the y axis and the legend
    ax = fig.add_subplot()
    x, centres, labels = 0.0, [], []
    top = max(sum(b["nodes"].values()) + b["unfaulted"] for s in saves for b in s["buffers"]) or 1
    for s, slot in zip(saves, slots):
        pad = (slot - len(s["buffers"]) - 0.8) / 2
        x += pad
        xs = []
        for b in s["buffers"]:
            bottom = 0.0
            for node in nodes:
                value = b["nodes"].get(str(node), 0)
                if value:
                    ax.bar(x, value, bottom=bottom, color=node_colour(node), width=0.8, edgecolor="white", lw=0.5)
                    bottom += value
            if b["unfaulted"]:
                ax.bar(x, b["unfaulted"], bottom=bottom, color=NO_NODE, width=0.8, hatch="//", edgecolor="#999999",
                       lw=0.5)
            xs.append(x)
            x += 1
        centre = (xs[0] + xs[-1]) / 2
        centres.append(centre)
        labels.append(f"save {s['save']}" + (f"\n{rank_label(s['rank']) or s['host']}" if multi_rank else ""))
        # The node the writer ran on, as a bar across its buffers.
        ax.plot([xs[0] - 0.4, xs[-1] + 0.4], [top * 1.06] * 2, color=node_colour(s["writer_node"]), lw=5,
                solid_capstyle="butt")
        where = (f"writer: node {s['writer_node']} ({s['writer_share']:.0%})" if s["writer_node"] is not None
                 else "writer: node ?")
        ax.text(centre, top * 1.1, where, ha="center", va="bottom", fontsize=7)
        x += 0.8 + pad
    ax.set_xticks(centres, labels, fontsize=8)
    ax.set_ylim(0, top * 1.25)
    ax.set_ylabel(f"{unit} per node (estimated from sampled pages)" if unit == "pages" else unit)
    title(ax, f"Buffer placement: pages of each buffer per NUMA node at the end of the writer's loop "
              f"({sum(len(s['buffers']) for s in saves)} buffers in {len(saves)} saves); the line above "
              f"= the node the writer ran on")
    handles = node_legend(nodes, summary["topology"])
    if any(b["unfaulted"] for s in saves for b in s["buffers"]):
        handles.append(Patch(facecolor=NO_NODE, hatch="//", edgecolor="#999999", label="not faulted in"))
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # off the bars' labels
    return fig


def _per_node(summary, groups) -> Figure:
    nodes = sorted({int(n) for g in groups for n in g["shares"] if int(n) >= 0}
                   | {g["writer_node"] for g in groups if g["writer_node"] is not None})
    fig = figure(max(6.0, 2 + 1.3 * len(groups)), 4.2)
    ax = fig.add_subplot()
    for i, g in enumerate(groups):
        bottom = 0.0
        for node in nodes + [-1]:
            value = g["shares"].get(str(node), 0)
            if value:
                ax.bar(i, value, bottom=bottom, color=node_colour(node), width=0.7, edgecolor="white", lw=0.5,
                       hatch="//" if node < 0 else None)
                bottom += value
        local = g["local"]
        ax.text(i, 1.02, f"{g['saves']} saves\n" + (f"{local:.0%} local" if local is not None else ""),
                ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)),
                  [f"{g['host']}\nwriters on\nnode {'?' if g['writer_node'] is None else g['writer_node']}"
                   for g in groups], fontsize=8)
    for label, g in zip(ax.get_xticklabels(), groups):  # in the colour of the writers' node
        label.set_color(node_colour(g["writer_node"]) if g["writer_node"] is not None else "#333333")
        label.set_fontweight("bold")
    ax.set_ylim(0, 1.2)
    ax.set_yticks([0, 0.25, 0.5, 0.75, 1])
    ax.set_ylabel("share of the buffers' pages")
    title(ax, f"Buffer placement at scale ({sum(g['buffers'] for g in groups)} buffers in "
              f"{sum(g['saves'] for g in groups)} saves): pages per NUMA node, by host and the node the writer "
              f"ran on (local = on the writer's node)")
    handles = node_legend(nodes, summary["topology"])
    if any(g["shares"].get("-1") for g in groups):
        handles.append(Patch(facecolor=NO_NODE, hatch="//", edgecolor="#999999", label="not faulted in"))
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))  # off the bars' labels
    return fig
