"""Making and rendering a report's figures on the CPUs that are free:
matplotlib's cost is per figure (layout, ticks, text, Agg), in Python, so
the figures are dealt round-robin into one group per free CPU (CPUs this
process may use, less the load average), each group but the last made in a
worker forked after matplotlib is imported, the last here. On a busy machine
(one free CPU or none) everything is made here: a fork then only costs.

A worker sends its figures' images (one per requested format and dpi) back
over a pipe; the figures of a worker that fails, or of one that could not
be forked, are made and rendered here instead. The images are the bytes the
same figure would save in this process: a Rendered stands in for the Figure
where it is saved (markup.figure_data_uri, plots.save_figures)."""

from __future__ import annotations

import io
import os
import pickle
import sys

# Fewer figures than this: not worth a fork.
MIN_PARALLEL = 2


def free_cpus() -> int:
    """CPUs of this process's affinity that the load average leaves free."""
    return max(0, round(len(os.sched_getaffinity(0)) - os.getloadavg()[0]))


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


def _group_images(group, summary, formats) -> dict[str, dict[tuple[str, int], bytes]]:
    return {name: _images(make, summary, formats) for name, make in group}


def _fork(group, summary, formats) -> tuple[int, int] | None:
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
            data = pickle.dumps(_group_images(group, summary, formats), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write_end, "wb") as out:
                out.write(data)
            status = 0
        except BaseException:  # noqa: BLE001 (the parent renders them instead)
            pass
        finally:
            os._exit(status)
    os.close(write_end)
    return pid, read_end


def _collect(pid: int, read_end: int) -> dict:
    with os.fdopen(read_end, "rb") as source:
        data = source.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return {}
    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001 (cut short: rendered here instead)
        return {}


class Pending:
    """Figures under way in their workers; collect() makes the rest here and
    waits for the workers."""

    def __init__(self, makers: dict, summary, formats, workers: list):
        self.makers, self.summary, self.formats, self.workers = makers, summary, formats, workers

    def collect(self) -> dict[str, Rendered]:
        done = {}
        for name, make in self.makers.items():  # this process's group first, while the workers run
            if not any(name in names for names, _ in self.workers):
                done[name] = _images(make, self.summary, self.formats)
        for names, worker in self.workers:
            done.update({name: images for name, images in _collect(*worker).items() if name in names})
        return {name: Rendered(done[name] if name in done else _images(make, self.summary, self.formats))
                for name, make in self.makers.items()}


def start(makers: dict, summary, formats: list[tuple[str, int]], cpus: int | None = None) -> Pending:
    """Start making {name: make(summary) -> Figure}, each rendered in every
    (format, dpi) of `formats`, on `cpus` CPUs (default: free_cpus());
    `summary` is whatever the makers take (a run's summary, a contrast's
    sides). The caller may do other work before collecting."""
    cpus = free_cpus() if cpus is None else cpus
    groups = [list(makers.items())[i::cpus] for i in range(cpus)] if cpus > 1 else []
    workers = []
    if len(makers) >= MIN_PARALLEL and len(groups) > 1 and hasattr(os, "fork"):
        _warm_fonts()
        sys.stdout.flush()  # nothing buffered twice
        sys.stderr.flush()
        for group in groups[:-1]:  # the last one is this process's
            started = _fork(group, summary, formats) if group else None
            if started is not None:
                workers.append(({name for name, _ in group}, started))
    return Pending(makers, summary, formats, workers)


def render(makers: dict, summary, formats: list[tuple[str, int]], cpus: int | None = None) -> dict[str, Rendered]:
    """{name: Rendered}: start(...).collect()."""
    return start(makers, summary, formats, cpus).collect()
