"""Draw a run's plots, PNG and SVG each: the affinity timeline (which CPU
each process ran on, coloured by NUMA node, allowed CPUs shaded), buffer
placement (pages per node per buffer, with the writer's node), the chunk
timeline (gen / put-wait / get-wait / write / fsync per producer and writer,
start-up phases first) and the save decomposition (the critical path of
each save). Many ranks are aggregated by host and role. The affinity
timeline is left out where every host has one NUMA node and no process's
allowed CPUs changed (said on stderr).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXAMPLE = """
writerprof plot run1 -o run1-plots
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="run directory made by writerprof record")
    parser.add_argument("-o", "--output", type=Path, metavar="DIR",
                        help="where to write them (default: RUN/plots)")


def run(args: argparse.Namespace) -> int:
    from writerprof.collector import collector_paused, keep_until_exit
    from writerprof.analysis.summary import summarize
    from writerprof.commands.common import check_outputs, output_directory
    from writerprof.render import plots
    from writerprof.run import load

    chosen = args.output or args.run_dir / "plots"
    check_outputs([args.run_dir], [("-o" if args.output else "the default", chosen)])
    with collector_paused():
        recorded = load(args.run_dir)
        summary = summarize(recorded)
    keep_until_exit(recorded, summary)
    out = output_directory(chosen, "plots directory")
    written = plots.save_figures(plots.report_figures(summary), out)
    for path in written:
        print(path)
    print(f"writerprof plot: {len(written)} files in {out}", file=sys.stderr)
    for name, why in plots.left_out(summary).items():
        print(f"writerprof plot: {name} {why}", file=sys.stderr)
    return 0
