"""Write a run directory in another tool's format.

--perfetto FILE: Chrome trace-event JSON for the Perfetto UI (ui.perfetto.dev,
which opens it offline once loaded) and chrome://tracing: a track per process
named by role, rank and pid; start-up phases and every hooked call as slices;
CPU, NUMA node and page faults as counters.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from writerprof.errors import UsageError, WriterprofError

HELP = "write a run in another tool's format (Perfetto / Chrome trace)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="run directory made by writerprof record")
    parser.add_argument("--perfetto", type=Path, metavar="FILE",
                        help="Chrome trace-event JSON, for the Perfetto UI and chrome://tracing")


def run(args: argparse.Namespace) -> int:
    if args.perfetto is None:
        raise UsageError("say what to write: --perfetto FILE")
    from writerprof.exports import perfetto
    from writerprof.run import load

    recorded = load(args.run_dir)
    trace = perfetto.trace(recorded)
    try:
        with open(args.perfetto, "w") as f:
            f.write(json.dumps(trace, separators=(",", ":")))  # dumps: json's C encoder
    except OSError as exc:
        raise WriterprofError(f"cannot write {args.perfetto}: {exc.strerror}") from None
    slices = sum(e["ph"] == "X" for e in trace["traceEvents"])
    print(f"writerprof export: {args.perfetto}: {len(recorded.processes)} processes, {slices} slices "
          f"({args.perfetto.stat().st_size / (1 << 20):.1f} MiB)", file=sys.stderr)
    for loss in recorded.losses:
        print(f"writerprof export: note: {loss}", file=sys.stderr)
    return 0
