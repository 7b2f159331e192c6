"""What every plot shares: one colour per critical-path component or hooked
phase (COLOURS) and one per NUMA node (node_colour), the legend's names,
and figures made with matplotlib.figure.Figure, never pyplot (no display is
needed and a caller's pyplot state is left alone)."""

from __future__ import annotations

import textwrap

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from writerprof.analysis.saves import STARTUP_PHASES
from writerprof.render.format import rank_label
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
ALIASES = {"gen": "generation", "put": "put-wait", "get": "get-wait", "first_chunk": "get-wait",
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


def colour(name: str) -> str:
    """The colour of a component, hooked phase or start-up phase, by any of its names."""
    return COLOURS.get(ALIASES.get(name, name), "#999999")


def node_colour(node) -> str:
    if node is None or int(node) < 0:
        return NO_NODE
    return NODE_COLOURS[int(node) % len(NODE_COLOURS)]


def name(key: str) -> str:
    key = ALIASES.get(key, key)
    return NAMES.get(key, key)


def figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def empty(title_text: str, why: str, width: float = 8, height: float = 2.5) -> Figure:
    fig = figure(width, height)
    ax = fig.add_subplot()
    ax.set_title(title_text)
    ax.text(0.5, 0.5, why, ha="center", va="center", transform=ax.transAxes, color="#555555")
    ax.set_axis_off()
    return fig


def title(ax, text: str, fontsize: float = 9) -> None:
    """A left-aligned title wrapped to the width of its figure."""
    width = int(ax.figure.get_figwidth() * 10.5 * 9 / fontsize)
    ax.set_title(textwrap.fill(text, width), fontsize=fontsize, loc="left")


def who(proc: dict, multi_host: bool) -> str:
    """'writer 1234' / 'producer rank 3 (h1)'."""
    parts = [proc["role"], rank_label(proc["rank"]), str(proc["pid"])]
    text = " ".join(p for p in parts if p)
    return f"{text} ({proc['host']})" if multi_host else text


def node_legend(nodes, topology: dict | None = None) -> list[Patch]:
    handles = []
    for node in sorted(nodes):
        cpus = ""
        if topology:
            lists = [t["nodes"].get(str(node)) for t in topology.values() if t.get("nodes", {}).get(str(node))]
            if len(lists) == 1:
                cpus = f" (CPUs {format_cpu_list(lists[0])})"
        handles.append(Patch(facecolor=node_colour(node), label=f"node {node}{cpus}"))
    return handles

