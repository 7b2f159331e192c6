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
    rendered = parallel.render({"line": _line, "bars": _bars}, summary, FORMATS, cpus=2)
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
    rendered = parallel.render({"fails": _fails_in_a_worker, "bars": _bars}, summary, FORMATS, cpus=2)
    assert rendered["fails"].images == parallel._images(_line, summary, FORMATS)
    assert set(rendered["bars"].images) == set(FORMATS)


def test_figures_are_dealt_to_the_free_cpus_and_the_last_group_made_here(monkeypatch):
    made_in = {}

    def where(name):
        def make(summary):
            made_in[name] = os.getpid() == PARENT
            return _line(summary)
        return make

    makers = {name: where(name) for name in "abcde"}
    rendered = parallel.render(makers, {"y": [1]}, FORMATS, cpus=3)
    # Groups a,d | b,e | c: the first two in workers (their record stays there), c here.
    assert made_in == {"c": True} and set(rendered) == set("abcde")
    made_in.clear()
    parallel.render(makers, {"y": [1]}, FORMATS, cpus=1)  # a busy machine: all here
    assert made_in == dict.fromkeys("abcde", True)
    monkeypatch.setattr(os, "getloadavg", lambda: (len(os.sched_getaffinity(0)) + 1.0, 0.0, 0.0))
    assert parallel.free_cpus() == 0
