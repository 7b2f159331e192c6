"""Flamegraphs of the stacks record took (writerprof.run.stacks): an
interactive SVG, a PNG, and a differential one of two runs.

A flamegraph here is a tree of frames, the root (all samples) at the bottom,
each frame above its caller, as wide as the samples whose stacks pass through
it. Children are laid out in name order, so that the same counts always give
the same picture. With record's --idle sampling the samples are wall-clock
time: a writer's start-up (its re-run of the parent's __main__ and the imports
under it) is a tower of its own beside the target's, as wide as the time it
took.

SVG: one <g> per frame with a <title> (frame, samples, share of all, seconds)
that any viewer shows on hover without script; a small inline script zooms on
click (click the bottom frame, or "Reset zoom", to zoom out) and writes the
frame under the pointer at the bottom. PNG: the same layout drawn by
matplotlib (a Figure, never pyplot).

Several threads (or processes) drawn as one graph are added up, and the
subtitle says so (added_up): with record's --idle sampling each thread's
samples are its wall-clock time, so two threads of a 4.7 s run can hold 7.6 s.
threads=True draws each thread under a root frame of its own (its name), as
the HTML report does for a role whose processes have several.

Differential (diff_svg, diff_png): the frames of both runs on one tree, each
as wide as the mean of its share of A's samples and its share of B's (so a
frame of either run is seen), coloured by the change in its share of all
samples from A to B: red where B spends a larger share there, blue a smaller
one, white no change; the hover gives both.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
import re
from xml.sax.saxutils import escape as _escape

from writerprof.run.stacks import in_standard_library

ROW_PX = 16
FONT_PX = 11
CHAR_PX = 6.6  # a monospace character at FONT_PX
MIN_PX = 0.3  # frames narrower than this are left out (their share is in their caller)
ROOT = "all"
_NOT_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def escape(text: str, entities: dict | None = None) -> str:
    """XML text: escaped, and without the characters XML 1.0 forbids."""
    return _escape(_NOT_XML.sub("\ufffd", text), entities or {})


@dataclass
class Box:
    """A frame laid out: x and w are fractions of the whole width."""

    name: str
    depth: int
    x: float
    w: float
    a: int  # samples through this frame (in A, for a differential one)
    b: int = 0  # in B (differential only)
    self_a: int = 0
    path: tuple[str, ...] = ()


@dataclass
class _Node:
    name: str
    a: int = 0
    b: int = 0
    self_a: int = 0
    children: dict[str, _Node] = field(default_factory=dict)


def _counts(stacks, by: str = "none", threads: bool = False) -> dict[tuple[str, ...], int]:
    if isinstance(stacks, Mapping):
        return dict(stacks)
    from writerprof.run.stacks import merged

    return merged(list(stacks), by=by, threads=threads)


def how_drawn(stacks, threads: bool = False) -> str:
    """What a graph of stacks adds up and how (how_many): "3 threads added
    up", "3 threads, each thread under its name" (threads); "" for one
    thread, or a count table."""
    from writerprof.run.stacks import how_many

    if isinstance(stacks, Mapping):
        return ""
    return how_many(stacks, ", each thread under its name" if threads else " added up")


def added_up(stacks, rate_hz: float | None = None, threads: bool = False, run_s: float | None = None) -> str:
    """A flamegraph's samples for its subtitle, saying what it adds up
    (how_drawn): "3 threads added up: 763 samples at 100 Hz, 7.6 s of thread
    time over a 4.7 s run"; one thread's: "50 samples at 100 Hz (0.5 s)".
    stacks: ProcessStacks, or a count table (its samples alone)."""
    total = sum(stacks.values()) if isinstance(stacks, Mapping) else sum(s.total for s in stacks)
    how = how_drawn(stacks, threads)
    rate = f" at {rate_hz:g} Hz" if rate_hz else ""
    if not how:
        return f"{total} samples{rate}" + (f" ({total / rate_hz:.1f} s)" if rate_hz else "")
    seconds = f", {total / rate_hz:.1f} s of thread time" if rate_hz else ""
    over = f" over a {run_s:.1f} s run" if run_s and rate_hz else ""
    return f"{how}: {total} samples{rate}{seconds}{over}"


def _tree(a: Mapping, b: Mapping | None = None) -> _Node:
    root = _Node(ROOT)
    for side, counts in (("a", a), ("b", b or {})):
        for frames, count in counts.items():
            node = root
            setattr(node, side, getattr(node, side) + count)
            for name in frames:
                node = node.children.setdefault(name, _Node(name))
                setattr(node, side, getattr(node, side) + count)
            if side == "a":
                node.self_a += count
    return root


def _boxes(root: _Node, weight) -> list[Box]:
    """Every frame, depth first, children sorted by name; x and w from weight(node)
    as fractions of the root's."""
    whole = weight(root) or 1.0
    out = []
    stack = [(root, 0, 0.0, ())]
    while stack:
        node, depth, x, path = stack.pop()
        w = weight(node) / whole
        out.append(Box(node.name, depth, x, w, node.a, node.b, node.self_a, path))
        child_x = x
        placed = []
        for name in sorted(node.children):
            child = node.children[name]
            placed.append((child, depth + 1, child_x, path + (name,)))
            child_x += weight(child) / whole
        stack.extend(reversed(placed))  # popped in name order
    return out


def layout(counts: Mapping[tuple[str, ...], int]) -> list[Box]:
    """The frames of a flamegraph of counts (stacks root -> leaf: samples),
    the root first: widths in proportion to samples, children by name."""
    return _boxes(_tree(counts), lambda n: float(n.a))


def diff_layout(a: Mapping[tuple[str, ...], int], b: Mapping[tuple[str, ...], int]) -> list[Box]:
    """The frames of both on one tree, each as wide as the mean of its shares."""
    root = _tree(a, b)
    ta, tb = root.a or 1, root.b or 1
    return _boxes(root, lambda n: (n.a / ta + n.b / tb) / 2)


# --- colours ---

_IMPORT_FILES = ("<frozen importlib", "importlib/", "runpy.py", "<frozen zipimport")


def _file_of(name: str) -> str:
    if name.endswith(")") and " (" in name:
        return name[name.rindex(" (") + 2:-1].rsplit(":", 1)[0]
    return ""


def frame_colour(name: str, depth: int = 1) -> str:
    """A warm colour per frame, by what it is: the import machinery teal
    (start-up reads as one block), the standard library orange, other
    packages yellow, the profiled program red; root and process frames grey."""
    if depth == 0:
        return "#c8c8c8"
    file = _file_of(name)
    jitter = zlib.crc32(name.encode()) % 1000 / 1000  # deterministic, unlike hash()
    if not file:
        return "#b4b4b4"
    top = file.split("/", 1)[0].removesuffix(".py")
    if any(file.startswith(p) or f"/{p}" in file for p in _IMPORT_FILES):
        hue, sat = (170 + 25 * jitter, 55)
    elif in_standard_library(file) or file.startswith("<"):
        hue, sat = (22 + 20 * jitter, 80)
    elif top in ("writerprof", "__main__", "") or file.endswith("main.py"):
        hue, sat = (0 + 12 * jitter, 75)
    else:
        hue, sat = (45 + 15 * jitter, 80)
    return _hsl(hue, sat, 55 + 12 * jitter)


def _hsl(h: float, s: float, l: float) -> str:
    import colorsys

    r, g, b = colorsys.hls_to_rgb(h / 360, l / 100, s / 100)
    return "#%02x%02x%02x" % (round(r * 255), round(g * 255), round(b * 255))


def diff_colour(change: float, scale: float) -> str:
    """Red for a larger share in B, blue for a smaller one; white for none."""
    t = min(1.0, abs(change) / scale) if scale > 0 else 0.0
    fade = round(255 * (1 - 0.85 * t))
    return f"#ff{fade:02x}{fade:02x}" if change > 0 else f"#{fade:02x}{fade:02x}ff" if change < 0 else "#ffffff"


# --- hover text ---

def _share(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def hover_text(box: Box, total: int, rate_hz: float | None = None) -> str:
    seconds = f", {box.a / rate_hz:.2f} s" if rate_hz else ""
    return f"{box.name}\n{box.a} samples ({_share(box.a, total):.1f}%{seconds})"


def diff_hover_text(box: Box, total_a: int, total_b: int, labels=("A", "B")) -> str:
    sa, sb = _share(box.a, total_a), _share(box.b, total_b)
    return (f"{box.name}\n{labels[0]}: {box.a} samples ({sa:.1f}%)\n{labels[1]}: {box.b} samples ({sb:.1f}%)\n"
            f"change: {sb - sa:+.1f} points of share")


def _change(box: Box, total_a: int, total_b: int) -> float:
    return _share(box.b, total_b) - _share(box.a, total_a)


# --- SVG ---

_SCRIPT = """
var W = %(width)d, PAD = %(pad)d, CH = %(char)s;
function frames() { return document.querySelectorAll('g.f'); }
function fit(g, px) {
  var t = g.querySelector('text'), n = g.getAttribute('data-n'), k = Math.floor((px - 6) / CH);
  t.textContent = k >= n.length ? n : (k >= 3 ? n.slice(0, k - 2) + '..' : '');
}
function zoom(g) {
  var zx = +g.getAttribute('data-x'), zw = +g.getAttribute('data-w'), zd = +g.getAttribute('data-d');
  frames().forEach(function (f) {
    var x = +f.getAttribute('data-x'), w = +f.getAttribute('data-w'), d = +f.getAttribute('data-d');
    var r = f.querySelector('rect'), t = f.querySelector('text'), nx, nw;
    if (d < zd && x <= zx + 1e-9 && x + w >= zx + zw - 1e-9) { nx = 0; nw = 1; }
    else if (d >= zd && x >= zx - 1e-9 && x + w <= zx + zw + 1e-9) { nx = (x - zx) / zw; nw = w / zw; }
    else { f.style.display = 'none'; return; }
    f.style.display = '';
    r.setAttribute('x', PAD + nx * W); r.setAttribute('width', Math.max(0, nw * W - 0.5));
    t.setAttribute('x', PAD + nx * W + 3); fit(f, nw * W);
  });
}
function init(evt) {
  var details = document.getElementById('details');
  frames().forEach(function (f) {
    f.addEventListener('click', function () { zoom(f); });
    f.addEventListener('mouseover', function () {
      details.textContent = f.querySelector('title').textContent.replace(/\\n/g, '  |  ');
    });
    f.addEventListener('mouseout', function () { details.textContent = ' '; });
  });
  document.getElementById('reset').addEventListener('click', function () { zoom(frames()[0]); });
}
"""


def _svg(boxes: list[Box], title: str, subtitle: str, text_of, colour_of, width: int) -> str:
    pad = 10
    drawn = [b for b in boxes if b.w * width >= MIN_PX]
    depth = max((b.depth for b in drawn), default=0) + 1
    top = 46
    height = top + depth * ROW_PX + 30
    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width + 2 * pad}" height="{height}" '
        f'viewBox="0 0 {width + 2 * pad} {height}" onload="init(evt)">',
        f"<style>text {{ font-family: monospace; font-size: {FONT_PX}px; fill: #000; }} "
        "g.f { cursor: pointer; } g.f:hover rect { stroke: #000; stroke-width: 0.6; } "
        "text.t { font-size: 15px; } text.s { fill: #555; } #reset { cursor: pointer; fill: #06c; }</style>",
        f'<rect x="0" y="0" width="{width + 2 * pad}" height="{height}" fill="#fbfbf7"/>',
        f'<text class="t" x="{(width + 2 * pad) / 2}" y="20" text-anchor="middle">{escape(title)}</text>',
        f'<text class="s" x="{(width + 2 * pad) / 2}" y="36" text-anchor="middle">{escape(subtitle)}</text>',
        f'<text id="reset" x="{pad}" y="20">Reset zoom</text>',
        f'<text id="details" x="{pad}" y="{height - 10}"> </text>',
        '<g id="frames">',
    ]
    for b in drawn:
        x, w = pad + b.x * width, b.w * width
        y = top + (depth - 1 - b.depth) * ROW_PX
        k = int((w - 6) // CHAR_PX)
        label = b.name if k >= len(b.name) else (b.name[: k - 2] + ".." if k >= 3 else "")
        out.append(
            f'<g class="f" data-x="{b.x:.9g}" data-w="{b.w:.9g}" data-d="{b.depth}" data-n="{escape(b.name, {chr(34): "&quot;"})}">'
            f"<title>{escape(text_of(b))}</title>"
            f'<rect x="{x:.2f}" y="{y}" width="{max(0.0, w - 0.5):.2f}" height="{ROW_PX - 1}" '
            f'fill="{colour_of(b)}" rx="1.5"/>'
            f'<text x="{x + 3:.2f}" y="{y + ROW_PX - 4}">{escape(label)}</text></g>')
    out.append("</g>")
    script = _SCRIPT % {"width": width, "pad": pad, "char": CHAR_PX}
    out.append(f'<script type="text/ecmascript"><![CDATA[{script}]]></script>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def flame_svg(stacks, title: str, *, rate_hz: float | None = None, by: str = "none", threads: bool = False,
              run_s: float | None = None, width: int = 1200) -> str:
    """A self-contained interactive SVG flamegraph. stacks: a count table
    {frames root -> leaf: samples}, or ProcessStacks (summed, or under a root
    frame per role or process: by="role" | "process"; threads: a root frame
    per thread above it). run_s: how long the run was, for the subtitle."""
    if rate_hz is None and not isinstance(stacks, Mapping) and stacks:
        rate_hz = stacks[0].rate_hz
    boxes = layout(_counts(stacks, by, threads))
    total = boxes[0].a
    sub = added_up(stacks, rate_hz, threads, run_s)
    return _svg(boxes, title, sub + "; hover for details, click to zoom",
                lambda b: hover_text(b, total, rate_hz), lambda b: frame_colour(b.name, b.depth), width)


def _diff_subtitle(labels, ta: int, tb: int, scale: float) -> str:
    return (f"{labels[0]}: {ta} samples; {labels[1]}: {tb} samples. Width: the mean share; red: a larger "
            f"share in the second, blue: a smaller one (up to {scale:.1f} points)")


def diff_svg(a_counts, b_counts, title: str, *, labels=("A", "B"), by: str = "none", width: int = 1200) -> str:
    """A differential flamegraph of A and B (count tables or ProcessStacks)."""
    boxes = diff_layout(_counts(a_counts, by), _counts(b_counts, by))
    ta, tb = boxes[0].a, boxes[0].b
    changes = [_change(b, ta, tb) for b in boxes[1:]]
    scale = max((abs(c) for c in changes), default=0.0)
    sub = _diff_subtitle(labels, ta, tb, scale)
    return _svg(boxes, title, sub, lambda b: diff_hover_text(b, ta, tb, labels),
                lambda b: diff_colour(_change(b, ta, tb), scale) if b.depth else "#dddddd", width)


# --- PNG ---

def _png(boxes: list[Box], title: str, subtitle: str, colour_of) -> bytes:
    from matplotlib.collections import PolyCollection
    from matplotlib.figure import Figure

    width_in = 16.0
    drawn = [b for b in boxes if b.w * width_in * 100 >= MIN_PX]
    depth = max((b.depth for b in drawn), default=0) + 1
    row_in = 0.17
    fig = Figure(figsize=(width_in, 0.9 + depth * row_in), dpi=100)
    height_in = 0.9 + depth * row_in
    ax = fig.add_axes((0.005, 0.15 / height_in, 0.99, depth * row_in / height_in))
    # One collection of rectangles: a patch per frame (barh) is several times slower to build and draw.
    cells = [((b.x, b.depth + 0.03), (b.x + b.w, b.depth + 0.03), (b.x + b.w, b.depth + 0.97),
              (b.x, b.depth + 0.97)) for b in drawn]
    ax.add_collection(PolyCollection(cells, facecolors=[colour_of(b) for b in drawn], edgecolors="white",
                                     linewidths=0.3))
    char_frac = 6.5 * 0.6 / 72 / (width_in * 0.99)  # a character at 6.5 pt, as a fraction of the width
    for b in drawn:
        k = int(b.w / char_frac) - 1
        if k < 3:
            continue
        label = b.name if k >= len(b.name) else b.name[: k - 2] + ".."
        ax.text(b.x + char_frac / 2, b.depth + 0.5, label, fontsize=6.5, va="center", ha="left",
                family="monospace", clip_on=True)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, depth)
    ax.set_axis_off()
    fig.text(0.5, 1 - 0.3 / height_in, title, ha="center", va="center", fontsize=12)
    fig.text(0.5, 1 - 0.6 / height_in, subtitle, ha="center", va="center", fontsize=9, color="#555555")
    data = io.BytesIO()
    fig.savefig(data, format="png")
    return data.getvalue()


def flame_png(stacks, title: str, *, rate_hz: float | None = None, by: str = "none", threads: bool = False,
              run_s: float | None = None) -> bytes:
    """The flamegraph as PNG bytes (matplotlib), the same layout as flame_svg."""
    if rate_hz is None and not isinstance(stacks, Mapping) and stacks:
        rate_hz = stacks[0].rate_hz
    boxes = layout(_counts(stacks, by, threads))
    return _png(boxes, title, added_up(stacks, rate_hz, threads, run_s), lambda b: frame_colour(b.name, b.depth))


def diff_png(a_counts, b_counts, title: str, *, labels=("A", "B"), by: str = "none") -> bytes:
    boxes = diff_layout(_counts(a_counts, by), _counts(b_counts, by))
    ta, tb = boxes[0].a, boxes[0].b
    scale = max((abs(_change(b, ta, tb)) for b in boxes[1:]), default=0.0)
    sub = _diff_subtitle(labels, ta, tb, scale)
    return _png(boxes, title, sub, lambda b: diff_colour(_change(b, ta, tb), scale) if b.depth else "#dddddd")


REPORTED_ROLES = ("writer", "producer")  # whose flamegraphs the HTML reports embed


def several_threads(stacks) -> bool:
    """Whether a process of stacks had threads of more than one name: the
    report's graphs then draw each thread apart."""
    return any(len(s.threads) > 1 for s in stacks)


def role_graphs(stacks, name: str, run_s: float | None = None) -> dict[str, str]:
    """The writers' and the producers' flamegraphs (SVG) of one run's stacks,
    each thread apart where a process had several (several_threads)."""
    out = {}
    for role in REPORTED_ROLES:
        mine = [s for s in stacks if s.role == role]
        if mine:
            count = f"{len(mine)} process{'es' * (len(mine) != 1)}"
            out[f"{role} stacks ({count})"] = flame_svg(mine, f"{role}: {count} of {name}",
                                                         threads=several_threads(mine), run_s=run_s)
    return out


def comparable_counts(stacks, role: str, threads: bool = False) -> dict[tuple[str, ...], int]:
    """One role's stacks summed for a differential graph: writers' from where
    the child's own code begins (fork and forkserver children share no
    frames before it); "all": each role under a root frame of its own;
    threads: each thread under one of its own (by name, as it is across runs)."""
    from writerprof.run.stacks import from_child_start, merged

    return merged(stacks, by="role" if role == "all" else "none", threads=threads,
                  each=from_child_start if role == "writer" else None)


def diff_title(what: str, labels: tuple[str, str], sides, threads: bool = False) -> str:
    """A differential graph's title: what, B against A, and what each side adds up (how_many)."""
    from writerprof.run.stacks import how_many

    added = [how_many(side) or "1 thread" for side in sides]
    said = f"; {'each thread under its name' if threads else 'added up'}: A {added[0]}, B {added[1]}"
    return f"{what}, B = {labels[1]} against A = {labels[0]}{said if added != ['1 thread'] * 2 else ''}"


def role_diffs(stacks_a, stacks_b, labels: tuple[str, str]) -> dict[str, str]:
    """Differential flamegraphs (SVG) of the writers and of the producers, B
    against A, each thread apart where a process of either had several."""
    out = {}
    for role in REPORTED_ROLES:
        a, b = ([s for s in side if s.role == role] for side in (stacks_a, stacks_b))
        if not a or not b:
            continue
        threads = several_threads(a + b)
        counts = [comparable_counts(side, role, threads) for side in (a, b)]
        out[f"{role} stacks, {labels[1]} against {labels[0]}"] = diff_svg(
            counts[0], counts[1], diff_title(f"{role} stacks", labels, (a, b), threads), labels=labels)
    return out
