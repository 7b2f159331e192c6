"""Turn a run directory into an answer: a process table (who ran where, where
their buffers are), a save table (start-up, generation, waits, write, fsync,
throughput, bottleneck) and the diagnoses that apply, most costly first,
each with the numbers it was computed from. An MPI job's ranks and hosts
come first (analysis.world): a run that lacks some of them says PARTIAL in
its first line, and its figures say they are over the ranks recorded.

--json prints the summary ("schema": "writerprof.summary/1"); --html FILE
writes one self-contained HTML report with the plots; --plots DIR writes the
plots as PNG and SVG.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

EXAMPLE = """
writerprof report run1
writerprof report run1 --html run1.html --plots run1-plots
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="run directory made by writerprof record")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON instead of text")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML report")
    parser.add_argument("--plots", type=Path, metavar="DIR", help="also write the plots (PNG and SVG) here")


def run(args: argparse.Namespace) -> int:
    from writerprof.commands.common import check_outputs, output_directory, write_markup

    check_outputs([args.run_dir], [("--html", args.html), ("--plots", args.plots)])
    # Imported before the plot workers fork, which then share them (numpy, the analysis).
    from writerprof import allocator
    from writerprof.collector import collector_paused, keep_until_exit
    from writerprof.analysis.summary import summarize
    from writerprof.render import terminal
    from writerprof.render.table import terminal_width
    from writerprof.run import load

    with _plot_workers(args) as pending:
        allocator.for_big_arrays()  # after the plot workers forked: theirs as it was
        with collector_paused():
            recorded = load(args.run_dir)
            summary = summarize(recorded)
        keep_until_exit(recorded, summary)
        if pending:
            pending.send(summary)
        if args.json:
            from writerprof import jsonout  # (orjson imports uuid, dataclasses, ...: only here)

            jsonout.write_stdout(summary)
        else:
            sys.stdout.write(terminal.report_text(summary, terminal_width()))
        if not pending:
            return 0
        if args.html:  # the flamegraphs, while the workers draw
            from writerprof.render import flame
            from writerprof.run.stacks import load_stacks, recorded_s

            flames = flame.role_graphs(load_stacks(recorded), Path(recorded.path).resolve().name,
                                       recorded_s(recorded))
        figures = pending.collect()
    if args.plots:
        from writerprof.render import plots

        written = plots.save_figures(figures, output_directory(args.plots, "plots directory"))
        print(f"writerprof report: {len(written)} plot files in {args.plots}", file=sys.stderr)
        for name, why in plots.left_out(summary).items():
            print(f"writerprof report: {name} {why}", file=sys.stderr)
    if args.html:
        from writerprof.render import html

        write_markup(args.html, html.report_html(summary, figures, flames=flames), "HTML report")
        print(f"writerprof report: {args.html}", file=sys.stderr)
    return 0


def _plot_workers(args: argparse.Namespace):
    """The workers that make and render each figure once, in every format
    asked for, started before the run is loaded: they import matplotlib
    meanwhile. Nothing for a text or JSON report."""
    if not (args.html or args.plots):
        return contextlib.nullcontext()
    from writerprof.render import plots
    from writerprof.render.markup import HTML_DPI
    from writerprof.render.plots import parallel

    formats = ([("png", HTML_DPI)] if args.html else []) + (
        [("png", plots.FILE_DPI), ("svg", plots.FILE_DPI)] if args.plots else [])
    return parallel.start(plots.REPORT_FIGURES, formats)
