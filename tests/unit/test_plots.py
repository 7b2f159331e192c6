"""writerprof.render.plots on synthetic runs: what each figure shows (titles,
labels, legends, bars), that the waterfall closes on B's mean save time, that
files are written, and that a 64-rank run stays a bounded, legible figure."""

import subprocess
import sys

import numpy as np
import pytest
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from writerprof.analysis.clocks import host_offsets
from writerprof.analysis.compare import compare
from writerprof.analysis.saves import COMPONENTS
from writerprof.analysis.summary import summarize
from writerprof.render import plots
from writerprof.run import load
from writerprof.synthetic import MIB, Scenario, write_run

# Small saves, so that the recordings are quick to make; the shapes are what count.
SMALL = dict(hosts=1, ranks_per_host=1, saves=3, chunks_per_save=8, chunk_size=4 * MIB, buffers=4, gen_s=0.004,
             write_s=0.008, fsync_s=0.05, interval_s=0.01)
SCALE = dict(hosts=2, ranks_per_host=32, saves=10, chunks_per_save=4, start_method="forkserver", main_rerun_s=0.4,
             buffer_node=0, writer_run_node=1, remote_factor=1.5, jitter=0.1)

_cache: dict = {}


def recorded(tmp_path_factory, **scenario) -> tuple:
    """(run, summary) of a synthetic run, made once per test session."""
    key = repr(sorted(scenario.items()))
    if key not in _cache:
        run = load(write_run(tmp_path_factory.mktemp("synthetic"), Scenario(**scenario)))
        _cache[key] = run, summarize(run)
    return _cache[key]


def fork_run(tmp_path_factory):
    return recorded(tmp_path_factory, **SMALL, start_method="fork")


def forkserver_run(tmp_path_factory):
    return recorded(tmp_path_factory, **SMALL, start_method="forkserver", main_rerun_s=0.3)


def scale_run(tmp_path_factory):
    return recorded(tmp_path_factory, **SCALE)


def ylabels(fig: Figure) -> list[str]:
    return [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]


def legend_texts(fig: Figure) -> list[str]:
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes if ax.get_legend()]
    return [t.get_text() for legend in legends for t in legend.get_texts()]


def titles(fig: Figure) -> str:
    found = [ax.get_title(loc) for ax in fig.axes for loc in ("left", "center", "right")]
    found.append(fig._suptitle.get_text() if fig._suptitle else "")
    return " ".join(t.replace("\n", " ") for t in found if t)


def artists(fig: Figure) -> int:
    return sum(len(ax.get_children()) for ax in fig.axes)


def bars(ax) -> list[Rectangle]:
    """The bars of an axes (not its background patch)."""
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def test_one_colour_per_component_phase_and_node():
    for name in (*COMPONENTS, "unexplained", "put-wait", "get-wait"):
        assert name in plots.COLOURS
    assert len(set(plots.COLOURS.values())) == len(plots.COLOURS)  # no two things alike
    assert plots.colour("gen") == plots.COLOURS["generation"]
    assert plots.colour("main_rerun") == plots.COLOURS["startup:main_rerun"]
    assert plots.colour("write") == plots.COLOURS["write"]
    assert plots.node_colour(0) != plots.node_colour(1)
    assert plots.node_colour(None) == plots.NO_NODE


def test_affinity_timeline_has_a_row_per_process(tmp_path_factory):
    run, summary = forkserver_run(tmp_path_factory)
    fig = plots.affinity_timeline(summary)
    shown = [p for p in summary["processes"] if p["samples"] or p["role"] in ("producer", "writer")]
    assert len(fig.axes) == len(shown)
    labels = ylabels(fig)
    assert sum(label.startswith("producer") for label in labels) == 1
    assert sum(label.startswith("writer") for label in labels) == 3
    assert any("save 3" in label for label in labels)
    assert "Where each process ran" in titles(fig)
    assert {"node 0 (CPUs 0-3,8-11)", "node 1 (CPUs 4-7,12-15)", "writer alive"} <= set(legend_texts(fig))
    # Every sampler tick of each process is one marker in its row (busy and idle ones).
    producer_ax = fig.axes[labels.index(next(label for label in labels if label.startswith("producer")))]
    scatters = [c for c in producer_ax.collections if isinstance(c, PathCollection)]
    assert sum(len(points.get_offsets()) for points in scatters) == summary["processes"][0]["samples"]


def test_affinity_timeline_at_scale_is_one_row_per_host_and_role(tmp_path_factory):
    run, summary = scale_run(tmp_path_factory)
    fig = plots.affinity_timeline(summary)
    labels = ylabels(fig)
    rows = [label for label in labels if " on host" in label]
    assert len(rows) == 8  # 2 hosts x producer, writer, forkserver, resource tracker
    assert any(label.startswith("writer on host0\n320 processes") for label in rows)
    assert len(fig.axes) <= 2 * len(rows)  # each row and its "processes alive" axis
    assert artists(fig) < 400
    assert "by host and role" in titles(fig)


def test_affinity_timeline_of_hundreds_of_groups_draws_the_capped_few_most_spread(tmp_path_factory):
    """A 1024-rank run has hundreds of (host, role) groups: at most
    MAX_PLOTTED_GROUPS are drawn, those whose readings are most spread over
    nodes, and the title says how many of how many."""
    from writerprof.render.plots.affinity import MAX_PLOTTED_GROUPS

    run, summary = scale_run(tmp_path_factory)
    found = summary["affinity"]
    lanes, bins = len(found["nodes"]) + 1, len(found["centres"])
    one_node = [[5] * bins] + [[] for _ in range(lanes - 1)]
    groups = [{**found["groups"][0], "host": f"h{i:03d}", "counts": one_node} for i in range(100)]
    # Two groups read half off their main node: drawn, however late in the order.
    for i in (57, 93):
        groups[i] = {**groups[i], "counts": [[5] * bins, [5] * bins] + [[] for _ in range(lanes - 2)]}
    fig = plots.affinity_timeline({**summary, "affinity": {**found, "groups": groups}})
    rows = [label for label in ylabels(fig) if " on h" in label]
    assert len(rows) == MAX_PLOTTED_GROUPS < len(groups)
    assert any(" on h057\n" in r for r in rows) and any(" on h093\n" in r for r in rows)
    assert rows[0].split("\n")[0].endswith("on h000")  # the rest in the summary's order
    assert f"100 groups; the {MAX_PLOTTED_GROUPS} most spread over nodes shown" in titles(fig)


def test_affinity_timeline_puts_every_host_on_the_recording_clock(tmp_path_factory):
    """host1's CLOCK_MONOTONIC is an hour off host0's: the plot aligns them."""
    run, summary = scale_run(tmp_path_factory)
    offsets = host_offsets(run)
    assert offsets["host0"] == 0 and abs(offsets["host1"]) > 3_000e9
    fig = plots.affinity_timeline(summary)
    low, high = fig.axes[0].get_xlim()
    assert high - low < 60  # a 10 s run, not an hour and 10 s


def test_buffer_placement_has_a_bar_per_buffer_and_the_writers_node(tmp_path_factory):
    run, summary = recorded(tmp_path_factory, **SMALL, start_method="forkserver", buffer_node=0,
                            writer_run_node=1)
    fig = plots.buffer_placement(summary)
    (ax,) = fig.axes
    assert len(bars(ax)) == 3 * 4  # 3 saves of 4 buffers, each wholly on one node
    assert {round(b.get_height()) for b in bars(ax)} == {4 * MIB // 4096}  # pages of a 4 MiB buffer
    assert {b.get_facecolor()[:3] for b in bars(ax)} == {_rgb(plots.node_colour(0))}
    texts = [t.get_text() for t in ax.texts]
    assert texts.count("writer: node 1 (100%)") == 3
    assert [t.get_text() for t in ax.get_xticklabels()] == ["save 1", "save 2", "save 3"]
    assert "node 0 (CPUs 0-3,8-11)" in legend_texts(fig)


def test_buffer_placement_without_the_buffers_readings_uses_the_summarys_shares(tmp_path_factory):
    _, summary = fork_run(tmp_path_factory)
    fig = plots.buffer_placement({k: v for k, v in summary.items() if k != "buffer_placement"})
    (ax,) = fig.axes
    assert len(bars(ax)) == 3  # a bar per writer's buffers
    assert ax.get_ylabel() == "share of pages"


def test_buffer_placement_at_scale_is_one_bar_per_host_and_writer_node(tmp_path_factory):
    run, summary = scale_run(tmp_path_factory)
    fig = plots.buffer_placement(summary)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["host0\nwriters on\nnode 1", "host1\nwriters on\nnode 1"]
    assert [t.get_text() for t in ax.texts] == ["320 saves\n0% local"] * 2  # every page on the other node
    assert len(bars(ax)) == 2
    assert "at scale" in titles(fig)


def test_chunk_timeline_lanes_phases_and_startup(tmp_path_factory):
    run, summary = forkserver_run(tmp_path_factory)
    fig = plots.chunk_timeline(summary)
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["producer rank 0", "writers of rank 0"]
    drawn = {tuple(np.round(c.get_facecolor()[0][:3], 3)) for c in ax.collections}
    for phase in ("gen", "put", "write", "fsync", "main_rerun", "unpickle"):
        assert tuple(np.round(_rgb(plots.colour(phase)), 3)) in drawn, phase
    legend = legend_texts(fig)
    assert {"gen", "put-wait (producer blocked)", "write", "fsync", "start-up: __main__ re-run"} <= set(legend)
    from test_plots_legible import drawn_texts

    assert [text for text, _ in drawn_texts(fig) if text.startswith("save ")] == ["save 1", "save 2", "save 3"]
    # The re-run bars are as long as the journal says.
    rerun = next(c for c in ax.collections if tuple(c.get_facecolor()[0][:3]) == _rgb(plots.colour("main_rerun")))
    widths = [p.get_extents().width for p in rerun.get_paths()]
    assert len(widths) == 3


def test_chunk_timeline_at_scale_shows_the_slowest_median_and_fastest_rank(tmp_path_factory):
    run, summary = scale_run(tmp_path_factory)
    fig = plots.chunk_timeline(summary)
    (ax,) = fig.axes
    title = titles(fig)
    assert "3 of 64 producers" in title and "slowest rank" in title and "fastest rank" in title
    assert len(ax.get_yticklabels()) == 6
    assert artists(fig) < 200


def test_save_decomposition_stacks_each_saves_critical_path(tmp_path_factory):
    _, a = fork_run(tmp_path_factory)
    _, b = forkserver_run(tmp_path_factory)
    fig = plots.save_decomposition({"fork": [a], "forkserver": [b]})
    assert len(fig.axes) == 2
    assert fig.axes[0].get_title().startswith("fork\n") and fig.axes[1].get_title().startswith("forkserver\n")
    for ax, summary in zip(fig.axes, (a, b)):
        heights: dict = {}
        for bar in bars(ax):
            x = round(bar.get_x() + bar.get_width() / 2)
            heights[x] = heights.get(x, 0) + bar.get_height()
        assert len(heights) == 3  # one bar per save
        assert [heights[i] for i in range(3)] == pytest.approx([s["duration_s"] for s in summary["saves"]], abs=1e-6)
    assert "start-up: __main__ re-run" in legend_texts(fig)
    assert "one bar per save" in titles(fig)
    # The re-run is only on the forkserver side.
    rerun = _rgb(plots.COLOURS["startup:main_rerun"])
    assert not any(bar.get_facecolor()[:3] == rerun for bar in bars(fig.axes[0]))
    assert any(bar.get_facecolor()[:3] == rerun for bar in bars(fig.axes[1]))


def test_save_decomposition_at_scale_is_the_mean_per_save_index(tmp_path_factory):
    _, summary = scale_run(tmp_path_factory)
    fig = plots.save_decomposition({"forkserver": [summary]})
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(i) for i in range(1, 11)]
    assert "mean per save index over 64 producers" in titles(fig)
    assert len(bars(ax)) <= 10 * (len(COMPONENTS) + 1)


def test_waterfall_runs_from_a_to_b_and_closes(tmp_path_factory):
    _, a = fork_run(tmp_path_factory)
    _, b = forkserver_run(tmp_path_factory)
    comparison = compare([a], [b])
    fig = plots.compare_waterfall(comparison)
    (ax,) = fig.axes
    by_gid = {bar.get_gid(): bar for bar in bars(ax)}
    assert by_gid["start"].get_height() == pytest.approx(comparison["a"]["mean_save_s"])
    assert by_gid["end"].get_height() == pytest.approx(comparison["b"]["mean_save_s"])
    # The running total after the last step (the line into the end bar) is B's mean save time.
    (closing,) = [line for line in ax.lines if line.get_gid() == "closing"]
    assert closing.get_ydata()[0] == pytest.approx(comparison["b"]["mean_save_s"], abs=1e-9)
    assert "unexplained" in by_gid
    assert "startup:main_rerun" in by_gid
    rerun = next(c for c in comparison["components"] if c["name"] == "startup:main_rerun")
    assert f"{rerun['diff_s']:+.3f} s" in [t.get_text() for t in ax.texts]
    # The near-zero components are pooled, not drawn one by one.
    assert "fadvise" not in by_gid
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "fork\nmean save" and labels[-1] == "forkserver\nmean save"
    assert any(label.startswith("other") for label in labels)
    assert "fork → forkserver" in titles(fig)


def test_save_figures_writes_png_and_svg(tmp_path_factory, tmp_path):
    run, summary = fork_run(tmp_path_factory)
    figures = plots.report_figures(summary)
    assert list(figures) == ["affinity_timeline", "buffer_placement", "chunk_timeline", "save_decomposition"]
    written = plots.save_figures({"chunk_timeline": figures["chunk_timeline"]}, tmp_path / "plots")
    assert [p.name for p in written] == ["chunk_timeline.png", "chunk_timeline.svg"]
    for path in written:
        assert path.stat().st_size > 1000
    assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in written[1].read_bytes()[:2000]


def test_a_run_without_samples_or_saves_still_gives_figures(tmp_path_factory):
    run, summary = fork_run(tmp_path_factory)
    empty = dict(summary, saves=[], processes=[], affinity=None, chunk_timeline=None,
                 buffer_placement={"unit": "pages", "saves": []})
    assert "no saves" in plots.chunk_timeline(empty).axes[0].texts[0].get_text()
    assert "no placement" in plots.buffer_placement(empty).axes[0].texts[0].get_text()
    assert "no sampler" in plots.affinity_timeline(empty).axes[0].texts[0].get_text()


def test_plots_leave_pyplot_alone(tmp_path):
    """Importing and drawing never loads pyplot: a caller's figures and backend are untouched."""
    code = ("import sys; from writerprof.render import plots; from matplotlib.figure import Figure; "
            "plots.empty('t', 'w').savefig(__import__('io').BytesIO(), format='png'); "
            "print('matplotlib.pyplot' in sys.modules)")
    assert _printed_by_fresh_python(code, tmp_path) == "False"


def _printed_by_fresh_python(code: str, cwd) -> str:
    # Not from the checkout: `-c` puts the working directory first on sys.path.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_what_a_report_runs_in_its_own_process_does_not_import_matplotlib(tmp_path):
    """The report's process reaches the plots, the workers and the page without
    matplotlib (its workers import it while it loads the run); the first
    plot asked for imports it."""
    code = ("import sys; from writerprof.render import html, plots; from writerprof.render.plots import parallel; "
            "from writerprof.commands import report; names = list(plots.REPORT_FIGURES); plots.FILE_DPI; "
            "print('matplotlib' in sys.modules, end=' '); plots.chunk_timeline; print('matplotlib' in sys.modules)")
    assert _printed_by_fresh_python(code, tmp_path) == "False True"


def _rgb(colour: str) -> tuple:
    from matplotlib.colors import to_rgb

    return tuple(to_rgb(colour))
