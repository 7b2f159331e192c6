"""Making and rendering a report's figures in forked workers, started before
the summary they draw exists: the first worker imports matplotlib and the
plot modules (half a second) while the caller loads and analyses the run,
then draws from the summary it is sent (send). matplotlib's cost is per
figure (layout, ticks, text, Agg), in Python, so there is one worker per free
CPU (CPUs this process may use, less the other tasks runnable), at least one: the
first forks the others once it has the summary, and each takes the next
figure off a shared queue when it is free (the costliest figure, first in
the report, does not hold the others up). The caller only waits: it never
imports matplotlib.

A worker sends its figures' images (one per requested format and dpi) back
over a pipe; a figure that fails in a worker, or those of a worker that
failed or could not be forked, are made and rendered in the caller instead.
The images are the bytes the same figure would save in this process: a
Rendered stands in for the Figure where it is saved
(markup.figure_data_uri, plots.save_figures)."""

from __future__ import annotations

import io
import os
import pickle
import sys
import threading

from writerprof import forked


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


def _images(make, summary, formats) -> dict[tuple[str, int], bytes] | None:
    """A figure's images; None for a figure its maker leaves out."""
    figure = make(summary)
    if figure is None:
        return None
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


def _warm() -> None:
    """What the figures need, loaded once before the summary comes (and
    before the other workers fork): matplotlib, the Agg canvas, the plot
    modules, the default font."""
    _without_property_docs()
    from matplotlib import font_manager
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401

    from writerprof.render.plots import affinity, chunks, placement, saves  # noqa: F401

    font_manager.get_font(font_manager.findfont(font_manager.FontProperties()))


def _without_property_docs() -> None:
    """matplotlib's import writes, for every Artist class it defines, a
    docstring of its settable properties (matplotlib.artist.kwdoc): ~0.18 of
    the ~0.75 CPU s the import took here, on the way to a report's first
    figure. Nothing reads a docstring in a worker, a process of writerprof's
    own (never the caller's, whose matplotlib stays as it is): here kwdoc
    writes none. The figures are the same."""
    from matplotlib import artist

    if callable(getattr(artist, "kwdoc", None)):
        artist.kwdoc = lambda *args, **kwargs: ""


def _draw_queued(makers: dict, queue: int, summary, formats) -> dict[str, dict[tuple[str, int], bytes]]:
    """The figures this worker takes off the queue (one byte per figure: its
    index in makers), one at a time until it is empty."""
    names, done = list(makers), {}
    while index := os.read(queue, 1):
        try:
            done[names[index[0]]] = _images(makers[names[index[0]]], summary, formats)
        except Exception:  # noqa: BLE001 (the caller makes it again, and says why if it fails there too)
            pass
    return done


def _first_worker(makers: dict, workers: int, formats, summary_fd: int, callers_end: int) -> bytes:
    """The first worker: matplotlib imported while the summary is read, the
    other workers forked, their images and its own."""
    os.close(callers_end)  # else the summary's pipe never ends
    received = {}
    reader = threading.Thread(target=lambda: received.update(data=forked.read_all(summary_fd)))
    reader.start()  # drained at once, so that the caller's send never waits for the import
    _warm()
    reader.join()
    summary = pickle.loads(received["data"])
    queue, queued = os.pipe()
    os.write(queued, bytes(range(len(makers))))
    os.close(queued)
    others = [forked.fork(lambda: forked.dumps(_draw_queued(makers, queue, summary, formats)))
              for _ in range(workers - 1)]
    done = _draw_queued(makers, queue, summary, formats)
    for worker in others:
        if worker is not None:
            done.update(forked.collect(*worker, {}))
    return forked.dumps(done)


class Pending:
    """Figures whose workers are started: send(summary) hands them what to
    draw; collect() waits for them and makes here whatever they did not.
    As a context manager it ends the workers of a caller that failed."""

    def __init__(self, makers: dict, formats, worker: tuple[int, int] | None, summary_fd: int | None):
        self.makers, self.formats, self.worker, self.summary_fd = makers, formats, worker, summary_fd
        self.summary = None

    def send(self, summary) -> None:
        self.summary = summary
        if self.summary_fd is not None:
            fd, self.summary_fd = self.summary_fd, None
            try:
                forked.write_all(fd, forked.dumps(summary))
            except OSError:  # the worker died: collect() makes its figures here
                pass

    def collect(self) -> dict[str, Rendered | None]:
        """Every figure's images, None for one its maker left out."""
        self._unsent()
        worker, self.worker = self.worker, None
        done = forked.collect(*worker, {}) if worker else {}
        images = {name: done[name] if name in done else _images(make, self.summary, self.formats)
                  for name, make in self.makers.items()}
        return {name: None if found is None else Rendered(found) for name, found in images.items()}

    def close(self) -> None:
        """End a worker that will not be collected (the caller failed)."""
        self._unsent()
        if self.worker:
            worker, self.worker = self.worker, None
            forked.discard(*worker)

    def _unsent(self) -> None:
        """No summary will come: the worker reads the end of its pipe, not a wait for ever."""
        if self.summary_fd is not None:
            os.close(self.summary_fd)
            self.summary_fd = None

    def __enter__(self) -> Pending:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def start(makers: dict, formats: list[tuple[str, int]], cpus: int | None = None) -> Pending:
    """Start the workers that will make {name: make(summary) -> Figure} (at
    most 255 figures), each rendered in every (format, dpi) of `formats`, on
    `cpus` CPUs (default: forked.free_cpus(); at least one worker); `summary` is
    whatever the makers take (a run's summary, a contrast's sides), sent
    later with Pending.send."""
    workers = min(len(makers), max(1, forked.free_cpus() if cpus is None else cpus))
    if not workers:
        return Pending(makers, formats, None, None)
    summary_read, summary_write = os.pipe()
    sys.stdout.flush()  # nothing buffered twice
    sys.stderr.flush()
    worker = forked.fork(lambda: _first_worker(makers, workers, formats, summary_read, summary_write))
    os.close(summary_read)
    if worker is None:
        os.close(summary_write)
        return Pending(makers, formats, None, None)
    return Pending(makers, formats, worker, summary_write)


def render(makers: dict, summary, formats: list[tuple[str, int]], cpus: int | None = None) -> dict[str, Rendered]:
    """{name: Rendered}: start(...), send(summary), collect()."""
    with start(makers, formats, cpus) as pending:
        pending.send(summary)
        return pending.collect()
