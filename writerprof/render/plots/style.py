"""What every plot shares: one colour per critical-path component or hooked
phase (COLOURS) and one per NUMA node (node_colour), the legend's names,
labels of marks that keep off each other (Uncrowded), and figures made with
matplotlib.figure.Figure, never pyplot (no display is needed and a caller's
pyplot state is left alone)."""

from __future__ import annotations

import textwrap

from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.text import Text

from writerprof.analysis.saves import STARTUP_PHASES
from writerprof.render.format import rank_label
from writerprof.units import format_cpu_list

# One colour per component of the critical path, per phase of a hooked call
# and per start-up phase, the same in every plot: Paul Tol's colour-blind-safe
# palettes (bright, muted, light and vibrant), picked so that any two differ
# in hue or lightness for every reader, those with a red or green or blue
# deficiency included (tests/unit/test_plots_legible.py checks it). Start-up
# phases are warm (the __main__ re-run red), the writer's I/O blue, the
# producer's work green, what is no part of either grey.
COLOURS = {
    "setup": "#898989",
    "startup:start": "#EEDD88",
    "startup:interpreter": "#EE8866",
    "startup:main_rerun": "#CC3311",
    "startup:unpickle": "#EE3377",
    "startup:bootstrap": "#FFAABB",
    "startup:target_setup": "#882255",
    "generation": "#117733",
    "put-wait": "#44BB99",
    "queue": "#999933",
    "get-wait": "#BBCC33",
    "write": "#0077BB",
    "fadvise": "#99DDFF",
    "fsync": "#332288",
    "close": "#77AADD",
    "teardown": "#AA4499",
    "unexplained": "#000000",
    "other": "#DDDDDD",
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
    "close": "close", "teardown": "teardown", "unexplained": "unexplained", "other": "other",
}
# One colour per NUMA node (Dark2, then tab10's), and for pages on no node yet.
NODE_COLOURS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
                "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
NO_NODE = "#dddddd"
# A part under this share of its axis (a bar's height, a timeline's span) is a
# pixel or two: it has no legend entry of its own.
MIN_VISIBLE_SHARE = 0.005
SIDE_COLOUR = "#ffffff"  # a waterfall's whole-save bars (outlined)


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


class Uncrowded(Artist):
    """Labels of marks along an axes (a save's start, a writer's birth),
    each drawn only where it lies inside the axes and overlaps none drawn
    before it: decided as the figure is drawn, after its layout, on the
    labels' real boxes, so that marks a few pixels apart keep a readable few
    rather than a smear of text."""

    def __init__(self, ax, labels, transform=None, **style):
        """labels: [(x, y, text)] in the order they are kept; style: Text's."""
        super().__init__()
        self.texts = [Text(x, y, text, transform=transform or ax.transData, **style) for x, y, text in labels]
        for text in self.texts:
            text.set_figure(ax.figure)
        self.set_zorder(3)
        self.set_in_layout(False)
        ax.add_artist(self)

    def draw(self, renderer):
        if not self.get_visible():
            return
        room, kept = self.axes.bbox, []
        for text in self.texts:
            box = text.get_window_extent(renderer)
            inside = room.x0 <= box.x0 and box.x1 <= room.x1 and room.y0 <= box.y0 and box.y1 <= room.y1
            if inside and not any(box.overlaps(other) for other in kept):
                kept.append(box)
                text.draw(renderer)
