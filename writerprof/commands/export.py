"""Write a run directory in another tool's format.

--perfetto FILE: Chrome trace-event JSON for the Perfetto UI (ui.perfetto.dev,
which opens it offline once loaded) and chrome://tracing: a track per process
named by role, rank and pid; start-up phases and every hooked call as slices;
CPU, NUMA node and page faults as counters.

--speedscope FILE: the Python stacks record took with py-spy, as a speedscope
file (speedscope.app): one sampled profile per process, named by role, rank
and pid, weighted in milliseconds of wall-clock time.

Both may be given at once; the run is read once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from writerprof.commands.common import write_json
from writerprof.errors import UsageError

HELP = "write a run in another tool's format (Perfetto / Chrome trace, speedscope)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="run directory made by writerprof record")
    parser.add_argument("--perfetto", type=Path, metavar="FILE",
                        help="Chrome trace-event JSON, for the Perfetto UI and chrome://tracing")
    parser.add_argument("--speedscope", type=Path, metavar="FILE",
                        help="the Python stacks as a speedscope file, a profile per process")


def run(args: argparse.Namespace) -> int:
    if args.perfetto is None and args.speedscope is None:
        raise UsageError("say what to write: --perfetto FILE and/or --speedscope FILE")
    from writerprof.run import load

    recorded = load(args.run_dir)
    stacks = None
    if args.speedscope is not None:  # before writing anything: a run without stacks is an error
        from writerprof.run.stacks import require_stacks

        stacks = require_stacks(recorded)
    if args.perfetto is not None:
        from writerprof.exports import perfetto

        trace = perfetto.trace(recorded)
        write_json(args.perfetto, trace, "Perfetto trace")
        slices = sum(e["ph"] == "X" for e in trace["traceEvents"])
        print(f"writerprof export: {args.perfetto}: {len(recorded.processes)} processes, {slices} slices "
              f"({args.perfetto.stat().st_size / (1 << 20):.1f} MiB)", file=sys.stderr)
    if stacks is not None:
        from writerprof.exports import speedscope

        profile = speedscope.document(recorded, stacks)
        write_json(args.speedscope, profile, "speedscope file")
        print(f"writerprof export: {args.speedscope}: {len(profile['profiles'])} profiles, "
              f"{sum(s.total for s in stacks)} samples, {len(profile['shared']['frames'])} frames "
              f"({args.speedscope.stat().st_size / (1 << 20):.1f} MiB)", file=sys.stderr)
    for loss in recorded.losses:
        print(f"writerprof export: note: {loss}", file=sys.stderr)
    return 0

