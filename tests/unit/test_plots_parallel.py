"""Figures made and rendered in forked workers, started before their summary
is sent: the same bytes as here, here after all where a worker fails, and
no worker left behind by a caller that failed."""

import io
import os
import subprocess
import sys
import textwrap

import matplotlib
import pytest
from matplotlib.figure import Figure

from writerprof import forked
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


def _made_in(summary):
    """A figure whose title is the pid that made it."""
    fig = _line(summary)
    fig.suptitle(f"pid {os.getpid()}")
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


def test_a_worker_imports_matplotlib_without_its_property_docs_and_draws_the_same(tmp_path):
    """The first worker, not the caller, imports matplotlib, and without the
    docstrings of its Artists' properties (the import's costliest part): its
    image is the one the caller renders with them, and the caller's
    matplotlib keeps them. In a fresh interpreter: this one imported matplotlib."""
    code = textwrap.dedent("""
        import os, sys
        from writerprof.render.plots import parallel

        def make(summary):  # says, in a file named by its pid, whether Line2D.set lists Line2D's properties
            from matplotlib.figure import Figure
            from matplotlib.lines import Line2D
            with open(os.path.join(sys.argv[1], str(os.getpid())), "w") as out:
                out.write(str("drawstyle" in Line2D.set.__doc__))
            figure = Figure(figsize=(2, 1))
            figure.add_subplot().plot(summary)
            return figure

        formats = [("png", 40)]
        rendered = parallel.render({"line": make}, [3, 1, 2], formats, cpus=1)
        drawn_here = "matplotlib" in sys.modules
        print(os.getpid(), drawn_here, rendered["line"].images == parallel._images(make, [3, 1, 2], formats))
    """)
    said_in = tmp_path / "said"
    said_in.mkdir()
    # (Not from the checkout: `-c` puts the working directory first on sys.path.)
    done = subprocess.run([sys.executable, "-c", code, str(said_in)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    caller, drawn_here, same = done.stdout.split()
    assert (drawn_here, same) == ("False", "True")  # drawn by the worker alone; the same image here
    said = {f.name: f.read_text() for f in said_in.iterdir()}
    assert said.pop(caller) == "True" and list(said.values()) == ["False"]  # the caller's docs, the worker's none


def test_a_figure_whose_worker_fails_is_rendered_here():
    summary = {"y": [1, 2]}
    rendered = parallel.render({"fails": _fails_in_a_worker, "bars": _bars}, summary, FORMATS, cpus=2)
    assert rendered["fails"].images == parallel._images(_line, summary, FORMATS)
    assert set(rendered["bars"].images) == set(FORMATS)


def test_figures_are_dealt_to_the_free_cpus_and_none_made_here():
    made_in = {}

    def where(name):
        def make(summary):
            made_in[name] = os.getpid()
            return _line(summary)
        return make

    makers = {name: where(name) for name in "abcde"}
    with parallel.start(makers, FORMATS, cpus=3) as pending:
        assert os.waitpid(pending.worker[0], os.WNOHANG) == (0, 0)  # under way before the summary exists
        pending.send({"y": [1]})
        rendered = pending.collect()
    assert made_in == {} and set(rendered) == set("abcde")  # made in the workers: their record stays there


def test_each_figure_is_made_once_by_one_of_at_most_one_worker_per_cpu():
    for cpus, most in ((3, 3), (0, 1)):  # 0: a busy machine, still one worker
        rendered = parallel.render(dict.fromkeys("abcde", _made_in), {"y": [1]}, [("svg", 40)], cpus=cpus)
        made_by = {name: _title(r.images[("svg", 40)]) for name, r in rendered.items()}
        assert set(made_by) == set("abcde") and str(PARENT) not in made_by.values()
        assert 1 <= len(set(made_by.values())) <= most


def _title(svg: bytes) -> str:
    import re

    return re.search(rb"<!-- pid (\d+) -->", svg).group(1).decode()


def test_a_caller_that_fails_leaves_no_worker():
    pending = parallel.start({"line": _line, "bars": _bars}, FORMATS, cpus=2)
    pid = pending.worker[0]
    with pytest.raises(RuntimeError), pending:
        raise RuntimeError("the run could not be loaded")
    with pytest.raises(ChildProcessError):  # reaped, not a zombie
        os.waitpid(pid, os.WNOHANG)


def test_a_caller_interrupted_while_it_collects_leaves_no_worker(monkeypatch):
    pending = parallel.start({"line": _line, "bars": _bars}, FORMATS, cpus=2)
    pid = pending.worker[0]
    pending.send({"y": [1, 2]})

    def interrupted(fd):
        os.close(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(forked, "read_all", interrupted)  # here only: the worker forked before
    with pytest.raises(KeyboardInterrupt), pending:
        pending.collect()
    with pytest.raises(ChildProcessError):  # killed and reaped
        os.waitpid(pid, os.WNOHANG)
