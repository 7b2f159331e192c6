"""Making and rendering a report's figures in forked workers, one per figure:
matplotlib's cost is per figure (layout, ticks, text, Agg), in Python, so
forked after matplotlib is imported the figures of a report take the time of
the slowest one on a machine with free CPUs, not the sum.

A worker sends its figure's images (one per requested format and dpi) back
over a pipe; a figure whose worker fails, or every figure where fork is not
to be had, is made and rendered here instead. The images are the bytes the
same figure would save in this process: a Rendered stands in for the Figure
where it is saved (markup.figure_data_uri, plots.save_figures)."""

from __future__ import annotations

import io
import os
import pickle
import sys

# Fewer figures than this: not worth a fork.
MIN_PARALLEL = 2


class Rendered:
    """A figure's images, {(format, dpi): bytes}, with the part of Figure's
    interface that saving uses."""

    def __init__(self, images: dict[tuple[str, int], bytes]):
        self.images = images

    def savefig(self, target, format: str, dpi: int, metadata=None) -> None:  # noqa: A002 (Figure's name)
        data = self.images[(format, dpi)]
        if isinstance(target, (str, os.PathLike)):
            with open(target, "wb") as out:
                out.write(data)
        else:
            target.write(data)


def _images(make, summary, formats) -> dict[tuple[str, int], bytes]:
    figure = make(summary)
    out = {}
    for fmt, dpi in formats:
        buffer = io.BytesIO()
        if fmt == "png":
            # The Agg canvas's print_png draws once, its layout included; savefig
            # draws twice (a dry run for the layout first): the same bytes.
            from matplotlib.backends.backend_agg import FigureCanvasAgg

            figure.dpi = dpi
            FigureCanvasAgg(figure).print_png(buffer)
        else:  # No date in an SVG: the same run gives the same bytes.
            figure.savefig(buffer, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else {})
        out[(fmt, dpi)] = buffer.getvalue()
    return out


def _warm_fonts() -> None:
    """Load the default font once, before forking: else every worker reads it."""
    from matplotlib import font_manager

    font_manager.get_font(font_manager.findfont(font_manager.FontProperties()))


def _fork(make, summary, formats) -> tuple[int, int] | None:
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the worker: its images or nothing, then out without the parent's exit handlers
        status = 1
        try:
            os.close(read_end)
            data = pickle.dumps(_images(make, summary, formats), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
            status = 0
        except BaseException:  # noqa: BLE001 (the parent renders it instead)
            pass
        finally:
            os._exit(status)
    os.close(write_end)
    return pid, read_end


def _collect(pid: int, read_end: int):
    with os.fdopen(read_end, "rb") as source:
        data = source.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001 (cut short: rendered here instead)
        return None


class Pending:
    """Figures under way in their workers; collect() waits for them."""

    def __init__(self, makers: dict, summary, formats, workers: dict):
        self.makers, self.summary, self.formats, self.workers = makers, summary, formats, workers

    def collect(self) -> dict[str, Rendered]:
        out = {}
        for name, make in self.makers.items():
            images = _collect(*self.workers[name]) if name in self.workers else None
            out[name] = Rendered(images if images is not None else _images(make, self.summary, self.formats))
        return out


def start(makers: dict, summary, formats: list[tuple[str, int]]) -> Pending:
    """Start making {name: make(summary) -> Figure}, each rendered in every
    (format, dpi) of `formats`; `summary` is whatever the makers take (a
    run's summary, a contrast's sides). The caller may do other work before
    collecting."""
    workers = {}
    if len(makers) >= MIN_PARALLEL and hasattr(os, "fork") and len(os.sched_getaffinity(0)) > 1:
        _warm_fonts()
        sys.stdout.flush()  # nothing buffered twice
        sys.stderr.flush()
        for name, make in makers.items():
            started = _fork(make, summary, formats)
            if started is not None:
                workers[name] = started
    return Pending(makers, summary, formats, workers)


def render(makers: dict, summary, formats: list[tuple[str, int]]) -> dict[str, Rendered]:
    """{name: Rendered}: start(...).collect()."""
    return start(makers, summary, formats).collect()
