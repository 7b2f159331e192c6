"""Figures made and rendered in forked workers: the same bytes as here, and
here after all where a worker fails."""

import io
import os

import matplotlib
import pytest
from matplotlib.figure import Figure

from writerprof.render.plots import parallel

PARENT = os.getpid()
FORMATS = [("png", 40), ("svg", 40)]


def _line(summary):
    fig = Figure(figsize=(2, 1))
    fig.add_subplot().plot(summary["y"])
    return fig


def _bars(summary):
    fig = Figure(figsize=(2, 1))
    fig.add_subplot().bar(range(len(summary["y"])), summary["y"])
    return fig


def _fails_in_a_worker(summary):
    if os.getpid() != PARENT:
        raise RuntimeError("worker")
    return _line(summary)


@pytest.fixture(autouse=True)
def fixed_svg_ids():
    with matplotlib.rc_context({"svg.hashsalt": "test"}):  # else an SVG's clip ids are random
        yield


def test_the_workers_images_are_those_rendered_here(tmp_path):
    summary = {"y": [3, 1, 2]}
    rendered = parallel.render({"line": _line, "bars": _bars}, summary, FORMATS)
    for name, make in {"line": _line, "bars": _bars}.items():
        assert rendered[name].images == parallel._images(make, summary, FORMATS)
    assert rendered["line"].images[("png", 40)].startswith(b"\x89PNG")
    for name, make in {"line": _line, "bars": _bars}.items():  # and those savefig makes
        for fmt, dpi in FORMATS:
            saved = io.BytesIO()
            make(summary).savefig(saved, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else {})
            assert rendered[name].images[(fmt, dpi)] == saved.getvalue()
    rendered["bars"].savefig(tmp_path / "bars.svg", format="svg", dpi=40)  # as save_figures does
    assert (tmp_path / "bars.svg").read_bytes() == rendered["bars"].images[("svg", 40)]


def test_a_figure_whose_worker_fails_is_rendered_here():
    summary = {"y": [1, 2]}
    rendered = parallel.render({"fails": _fails_in_a_worker, "bars": _bars}, summary, FORMATS)
    assert rendered["fails"].images == parallel._images(_line, summary, FORMATS)
    assert set(rendered["bars"].images) == set(FORMATS)
