"""The plots as a person reads them, on synthetic runs: every label drawn
inside its figure and on no other (from the rendered text's boxes, after
the layout), a palette whose colours differ for readers with a colour-vision
deficiency too, a legend of the parts one can see, the affinity timeline only
where placement can cost, idle daemons drawn idle, and a producer row that
says its generation was not hooked."""

import os
import subprocess
import sys
from contextlib import contextmanager

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.colors import to_rgb
from matplotlib.patches import Rectangle
from matplotlib.text import Text
from test_plots import SMALL, forkserver_run, legend_texts, recorded, scale_run

from writerprof.render import html, plots
from writerprof.render.plots.affinity import IDLE
from writerprof.render.plots.style import MIN_VISIBLE_SHARE

# --- what was drawn -----------------------------------------------------------------------------


@contextmanager
def _recording_texts():
    """Every Text drawn meanwhile (one that is not drawn, as a tick off the axis, is not seen)."""
    drawn, draw = [], Text.draw

    def recorded_draw(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)
        return draw(self, renderer)

    Text.draw = recorded_draw
    try:
        yield drawn
    finally:
        Text.draw = draw


def drawn_texts(fig, dpi: int = 100) -> list[tuple[str, object]]:
    """(text, its box in pixels) of every label drawn when the figure is rendered at `dpi`."""
    fig.set_dpi(dpi)
    canvas = FigureCanvasAgg(fig)
    with _recording_texts() as drawn:
        canvas.draw()
    renderer = canvas.get_renderer()
    return [(t.get_text(), t.get_window_extent(renderer)) for t in drawn]


def unreadable(fig, dpi: int = 100) -> list[str]:
    """Labels that overlap another (by more than half a pixel each way) or leave the figure."""
    texts = drawn_texts(fig, dpi)
    width, height = fig.bbox.width, fig.bbox.height
    found = []
    for i, (text, box) in enumerate(texts):
        if box.x0 < -0.5 or box.y0 < -0.5 or box.x1 > width + 0.5 or box.y1 > height + 0.5:
            found.append(f"{text!r} leaves the figure: {box.extents.round()}")
        for other, other_box in texts[i + 1:]:
            across = min(box.x1, other_box.x1) - max(box.x0, other_box.x0)
            up = min(box.y1, other_box.y1) - max(box.y0, other_box.y0)
            if across > 0.5 and up > 0.5:
                found.append(f"{text!r} overlaps {other!r} by {across:.0f}x{up:.0f} px")
    return found


def test_the_overlap_check_sees_an_overlap():
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.text(0.5, 0.5, "one label")
    ax.text(0.52, 0.5, "another label")
    ax.text(0.99, 0.1, "off the edge of the figure")
    found = unreadable(fig)
    assert any("overlaps" in f for f in found) and any("leaves the figure" in f for f in found), found


# The runs whose figures are read: few saves and many, one buffer a save and
# four, two ranks on one host, unhooked generation, and 64 ranks.
LEGIBLE = {
    "fork": dict(SMALL, start_method="fork"),
    "forkserver": dict(SMALL, start_method="forkserver", main_rerun_s=0.3),
    "30 saves": dict(SMALL, saves=30, start_method="forkserver"),
    "12 one-buffer saves": dict(SMALL, saves=12, buffers=1, start_method="fork"),
    "two ranks": dict(SMALL, saves=6, ranks_per_host=2, chunks_per_save=2, start_method="forkserver"),
    "gen not hooked": dict(SMALL, start_method="spawn", unhooked="gen,put,get"),
}


@pytest.mark.parametrize("scenario", list(LEGIBLE))
def test_no_label_overlaps_another_or_leaves_its_figure(tmp_path_factory, scenario):
    _, summary = recorded(tmp_path_factory, **LEGIBLE[scenario])
    for name, fig in plots.report_figures(summary).items():
        assert not unreadable(fig), (name, unreadable(fig))


def test_no_label_overlaps_another_at_scale(tmp_path_factory):
    _, summary = scale_run(tmp_path_factory)
    figures = {**plots.report_figures(summary), "two sides": plots.save_decomposition({"a": [summary], "b": [summary]})}
    for name, fig in figures.items():
        assert not unreadable(fig), (name, unreadable(fig))


def test_crowded_save_labels_keep_a_readable_few(tmp_path_factory):
    """30 saves a few pixels apart: some "save N" labels are drawn, none on another."""
    _, summary = recorded(tmp_path_factory, **LEGIBLE["30 saves"])
    shown = [text for text, _ in drawn_texts(plots.chunk_timeline(summary)) if text.startswith("save ")]
    assert 5 <= len(shown) < 30 and shown[0] == "save 1"


# --- colours ------------------------------------------------------------------------------------

# Machado, Oliveira & Fernandes (2009): full protanopia, deuteranopia and
# tritanopia as matrices on linear RGB.
DEFICIENCIES = {
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]],
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602], [0.004733, 0.691367, 0.303900]],
}
DISTINCT = 20.0  # CIELAB distance between two colours for a reader of normal vision
DISTINCT_DEFICIENT = 10.0  # ... and for one with a full deficiency (2.3 is a just-noticeable difference)


def _lab(colour: str, vision: str) -> np.ndarray:
    rgb = np.array(to_rgb(colour))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    if vision in DEFICIENCIES:
        linear = np.clip(np.array(DEFICIENCIES[vision]) @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    f = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(f > 216 / 24389, np.cbrt(f), (24389 / 27 * f + 16) / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize("vision", ["normal", *DEFICIENCIES])
def test_every_two_components_differ_for_every_reader(vision):
    """No two parts alike (the start-up phases were five near-identical reds),
    for readers of normal vision and with each colour-vision deficiency."""
    least = DISTINCT if vision == "normal" else DISTINCT_DEFICIENT
    names = list(plots.COLOURS)
    close = [(a, b, round(float(np.linalg.norm(_lab(plots.COLOURS[a], vision) - _lab(plots.COLOURS[b], vision)))))
             for i, a in enumerate(names) for b in names[i + 1:]]
    assert not [c for c in close if c[2] < least], sorted(close, key=lambda c: c[2])[:5]


def _colour_of(patch) -> tuple:
    return tuple(np.round(patch.get_facecolor()[:3], 3))


def test_a_component_has_one_colour_in_every_plot(tmp_path_factory):
    """The save decomposition, the chunk timeline and the waterfall colour a
    part alike, "other" included."""
    _, summary = forkserver_run(tmp_path_factory)
    decomposition = plots.save_decomposition({"forkserver": [summary]})
    in_bars = {bar.get_gid(): _colour_of(bar) for bar in decomposition.axes[0].patches if bar.get_gid()}
    timeline = plots.chunk_timeline(summary)
    legend = {t.get_text(): _colour_of(h) for t, h in zip(timeline.axes[0].get_legend().get_texts(),
                                                          timeline.axes[0].get_legend().legend_handles)}
    comparison = {"a": {"mean_save_s": 0.2, "name": "A"}, "b": {"mean_save_s": 0.5, "name": "B"},
                  "difference_s": 0.3, "unexplained_s": 0.0, "throughput": {},
                  "components": [{"name": "startup:main_rerun", "diff_s": 0.29},
                                 {"name": "close", "diff_s": 0.0001}, {"name": "write", "diff_s": 0.0099}]}
    waterfall = {bar.get_gid(): _colour_of(bar) for bar in plots.compare_waterfall(comparison).axes[0].patches
                 if bar.get_gid()}
    assert "other" in in_bars and "other" in waterfall
    for key in ("startup:main_rerun", "write", "other"):
        assert in_bars[key] == waterfall[key] == tuple(np.round(to_rgb(plots.COLOURS[key]), 3)), key
    for key in ("startup:main_rerun", "write", "generation", "fsync"):
        assert legend[plots.NAMES[key]] == in_bars[key], key


# --- the save decomposition's legend --------------------------------------------------------------

def test_save_decomposition_legend_lists_only_the_parts_one_can_see(tmp_path_factory):
    """close (15 µs a save), bootstrap and the others under a pixel are one
    "other" entry; parts zero everywhere none; the bars still add up."""
    _, summary = forkserver_run(tmp_path_factory)
    fig = plots.save_decomposition({"forkserver": [summary]})
    (ax,) = fig.axes
    bars = [p for p in ax.patches if isinstance(p, Rectangle) and p.get_gid()]
    tallest = max(s["duration_s"] for s in summary["saves"])
    entries = legend_texts(fig)
    by_part: dict = {}
    for bar in bars:
        by_part.setdefault(bar.get_gid(), []).append(bar.get_height())
    for part, heights in by_part.items():
        if part != "other":
            assert max(heights) >= MIN_VISIBLE_SHARE * tallest, part
            assert plots.NAMES[part] in entries, part
    assert "close" not in entries and "fadvise" not in entries and "start-up: bootstrap" not in entries
    assert any(e.startswith("other (") for e in entries)
    assert len(entries) == len(by_part) < 12
    totals: dict = {}
    for bar in bars:
        x = round(bar.get_x() + bar.get_width() / 2)
        totals[x] = totals.get(x, 0) + bar.get_height()
    assert [totals[i] for i in range(3)] == pytest.approx([s["duration_s"] for s in summary["saves"]], abs=1e-6)


def test_chunk_timeline_legend_lists_only_the_phases_one_can_see(tmp_path_factory):
    """Bootstrap (0.2 ms a writer) and close (15 µs) are slivers of a 1.7 s
    axis: drawn, but no legend entry; the re-run (0.3 s) has one."""
    _, summary = forkserver_run(tmp_path_factory)
    entries = legend_texts(plots.chunk_timeline(summary))
    assert "start-up: __main__ re-run" in entries and "write" in entries
    assert "start-up: bootstrap" not in entries and "close" not in entries


# --- the affinity timeline -------------------------------------------------------------------------

ONE_NODE = dict(SMALL, nodes=1, start_method="forkserver")


def test_affinity_timeline_is_left_out_on_one_node_saying_why(tmp_path_factory):
    _, summary = recorded(tmp_path_factory, **ONE_NODE)
    assert "affinity_timeline" not in plots.report_figures(summary)
    why = plots.left_out(summary)["affinity_timeline"]
    assert "one NUMA node" in why
    doc = html.report_html(summary, plots.report_figures(summary))
    assert 'id="affinity_timeline-left-out"' in doc and html._e(why) in doc
    assert 'alt="affinity_timeline"' not in doc


def test_affinity_timeline_is_drawn_where_affinity_changed_or_nodes_are_many(tmp_path_factory):
    _, pinned = recorded(tmp_path_factory, **dict(ONE_NODE, writer_cpus="0-3"))  # the writers pin themselves
    assert "affinity_timeline" in plots.report_figures(pinned) and not plots.left_out(pinned)
    _, two_nodes = forkserver_run(tmp_path_factory)
    assert "affinity_timeline" in plots.report_figures(two_nodes) and not plots.left_out(two_nodes)


def test_plot_command_leaves_the_affinity_timeline_out_and_says_why(tmp_path_factory, tmp_path):
    """`writerprof plot` on a one-node run: three plots written, one line on stderr on the fourth."""
    from test_plots import _cache

    recorded(tmp_path_factory, **ONE_NODE)
    run_dir = _cache[repr(sorted(ONE_NODE.items()))][0].path
    # From tmp_path: `-m writerprof` in a checkout would import its source, not the installed package.
    done = subprocess.run([sys.executable, "-m", "writerprof", "plot", str(run_dir), "-o", str(tmp_path / "p")],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "MPLBACKEND": "Agg"},
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(p.stem for p in (tmp_path / "p").iterdir()) == sorted(
        ["buffer_placement", "chunk_timeline", "save_decomposition"] * 2)
    assert "affinity_timeline left out: every host has one NUMA node" in done.stderr


def _markers(ax) -> tuple[int, int]:
    """(readings drawn busy, drawn idle) in one process's row."""
    busy = idle = 0
    for points in (c for c in ax.collections if isinstance(c, PathCollection)):
        count = len(points.get_offsets())
        if tuple(points.get_facecolor()[0][:3]) == to_rgb(IDLE):
            idle += count
        else:
            busy += count
    return busy, idle


def test_idle_daemons_are_drawn_idle(tmp_path_factory):
    """The forkserver and the resource tracker work at their start, then
    sleep: their readings after it are small grey dots, not node-coloured
    squares as the writers' are."""
    _, summary = forkserver_run(tmp_path_factory)
    fig = plots.affinity_timeline(summary)
    rows = {ax.get_ylabel().split()[0]: ax for ax in fig.axes}
    for daemon in ("forkserver", "resource_tracker"):
        busy, idle = _markers(rows[daemon])
        assert idle > 5 * busy, (daemon, busy, idle)
    busy, idle = _markers(next(ax for ax in fig.axes if ax.get_ylabel().startswith("writer")))
    assert busy > 5 * idle
    assert "idle" in legend_texts(fig)


def test_idle_daemons_hold_no_share_of_the_nodes_at_scale(tmp_path_factory):
    """Per (host, role), the node shares are of busy readings: the daemons'
    rows are blank once they sleep (in most of their life), the writers' are not."""
    from writerprof.analysis.affinity import bin_shares

    _, summary = scale_run(tmp_path_factory)
    found = summary["affinity"]
    filled = {(g["host"], g["role"]): bin_shares(g["counts"], len(found["centres"])).sum(axis=0) > 0
              for g in found["groups"]}
    alive = {(g["host"], g["role"]): np.array(g["alive"]) > 0 for g in found["groups"]}
    for key in filled:
        share = filled[key][alive[key]].mean()
        if key[1] in ("forkserver", "resource_tracker"):
            assert share < 0.2, (key, share)
        elif key[1] == "writer":
            assert share > 0.5, (key, share)


# --- the chunk timeline ------------------------------------------------------------------------------

def test_chunk_timeline_says_when_the_producers_generation_is_not_hooked(tmp_path_factory):
    _, summary = recorded(tmp_path_factory, **LEGIBLE["gen not hooked"])
    (ax,) = plots.chunk_timeline(summary).axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["producer rank 0\ngen not hooked", "writers of rank 0"]
    _, hooked = forkserver_run(tmp_path_factory)
    (ax,) = plots.chunk_timeline(hooked).axes
    assert "not hooked" not in ax.get_yticklabels()[0].get_text()
