"""The plots and the HTML reports of real recordings of the reproducer, under
fork and under forkserver with a heavy __main__."""

import re

import pytest
from helpers import run_writerprof

from writerprof.analysis.compare import compare
from writerprof.analysis.summary import summarize
from writerprof.render import html, plots
from writerprof.run import load

SAVES = 2
REPRO = ["repro", "--saves", str(SAVES), "--size", "128MiB"]  # 4 chunks of 32 MiB, 4 buffers, a save


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """{method: (run, summary)}: one short recording each."""
    out = {}
    for method, extra in (("fork", []), ("forkserver", ["--main-imports", "numpy,matplotlib.pyplot"])):
        run_dir = tmp_path_factory.mktemp("render") / method
        run_writerprof("record", "-o", run_dir, "--", "writerprof", *REPRO, "--start-method", method, *extra)
        run = load(run_dir)
        out[method] = run, summarize(run)
    return out


def test_report_figures_of_a_real_recording(recordings, tmp_path):
    run, summary = recordings["forkserver"]
    figures = plots.report_figures(summary)
    # Affinity: a row per process (producer, resource tracker, forkserver, a writer a save).
    roles = sorted(p["role"] for p in summary["processes"] if p["samples"] or p["role"] in ("producer", "writer"))
    assert roles == sorted(["producer", "resource_tracker", "forkserver"] + ["writer"] * SAVES)
    # The plot of a host of one NUMA node where no affinity changed is left out of the run's plots.
    assert ("affinity_timeline" in figures) == ("affinity_timeline" not in plots.left_out(summary))
    affinity = plots.affinity_timeline(summary)
    assert len(affinity.axes) == len(roles)
    assert sorted(ax.get_ylabel().split()[0] for ax in affinity.axes) == roles
    # Placement: 4 buffers a save, all their pages on a node by the end of the writer's loop.
    (placement,) = figures["buffer_placement"].axes
    buffers = [b for b in placement.patches if b.get_height() > 0]
    assert len(buffers) == 4 * SAVES
    assert [t.get_text() for t in placement.get_xticklabels()] == [f"save {i + 1}" for i in range(SAVES)]
    # Chunks: the producer's and the writers' lanes, the __main__ re-run drawn.
    (chunks,) = figures["chunk_timeline"].axes
    assert [t.get_text().split()[0] for t in chunks.get_yticklabels()] == ["producer", "writers"]
    drawn = {tuple(c.get_facecolor()[0][:3]) for c in chunks.collections}
    from matplotlib.colors import to_rgb
    assert tuple(to_rgb(plots.colour("main_rerun"))) in drawn
    assert tuple(to_rgb(plots.colour("write"))) in drawn
    # Decomposition: a bar per save.
    (decomposition,) = figures["save_decomposition"].axes
    assert [t.get_text() for t in decomposition.get_xticklabels()] == [str(i + 1) for i in range(SAVES)]
    written = plots.save_figures(figures, tmp_path / "plots")
    assert len(written) == 2 * len(figures)
    assert all(path.stat().st_size > 1000 for path in written)


def test_report_html_of_a_real_recording(recordings):
    run, summary = recordings["forkserver"]
    doc = html.report_html(summary, plots.report_figures(summary))
    assert not re.search(r"src=\"http|<link|<script", doc)
    assert doc.count('src="data:image/png;base64,') == 4 - len(plots.left_out(summary))
    assert {"writer-startup", "main-reimport"} & {d["code"] for d in summary["diagnoses"]}
    for diagnosis in summary["diagnoses"]:
        assert f"<code>{diagnosis['code']}</code>" in doc
    assert html._e(" ".join(summary["run"]["command"])) in doc


def test_contrast_of_two_real_recordings(recordings):
    (_, a), (_, b) = recordings["fork"], recordings["forkserver"]
    comparison = compare([a], [b])
    waterfall = plots.compare_waterfall(comparison)
    (ax,) = waterfall.axes
    end = next(bar for bar in ax.patches if bar.get_gid() == "end")
    assert end.get_height() == pytest.approx(comparison["b"]["mean_save_s"])
    (closing,) = [line for line in ax.lines if line.get_gid() == "closing"]
    assert closing.get_ydata()[0] == pytest.approx(comparison["b"]["mean_save_s"], abs=1e-9)
    sides = {"fork": [a], "forkserver": [b]}
    doc = html.contrast_html(comparison, sides, {"save_decomposition": plots.save_decomposition(sides),
                                                 "compare_waterfall": waterfall})
    assert html.verdict_html(comparison["verdict"]) in doc
    assert not re.search(r"src=\"http|<link|<script", doc)
    assert doc.count("<img ") == 2


def test_writerprof_report_writes_the_html_and_the_plots(recordings, tmp_path):
    run, _ = recordings["fork"]
    run_writerprof("report", run.path, "--html", tmp_path / "report.html", "--plots", tmp_path / "plots")
    doc = (tmp_path / "report.html").read_text()
    left_out = plots.left_out(summarize(run))  # the affinity timeline, on a host of one NUMA node
    assert doc.startswith("<!DOCTYPE html>") and doc.count("<img ") == 4 - len(left_out)
    assert all(f'id="{name}-left-out"' in doc for name in left_out)
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == sorted(f"{n}.{ext}" for n in ("affinity_timeline", "buffer_placement", "chunk_timeline",
                                                 "save_decomposition") if n not in left_out for ext in ("png", "svg"))
