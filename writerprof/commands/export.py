"""Write a run directory in another tool's format.

--perfetto FILE: Chrome trace-event JSON for the Perfetto UI (ui.perfetto.dev,
which opens it offline once loaded) and chrome://tracing: a track per process
named by role, rank and pid; start-up phases and every hooked call as slices;
CPU, NUMA node and page faults as counters.

--speedscope FILE: the Python stacks record took, as a speedscope
file (speedscope.app): one sampled profile per process, named by role, rank
and pid (and "3 threads added up" where it had several), weighted in
milliseconds of wall-clock time; --threads split: one per thread of each.
writerprof's own probe frames are folded out (each removed, its callees on
its caller); --probe-frames keeps them.

Both may be given at once; the run is read once, and each file is written
on its own: one that cannot be written (--speedscope of a run without
stacks) is a line saying why, the other is written, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from writerprof.commands.common import check_outputs, write_json
from writerprof.errors import UsageError, WriterprofError

EXAMPLE = """
writerprof export run1 --perfetto run1.trace.json --speedscope run1.speedscope.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN", help="run directory made by writerprof record")
    parser.add_argument("--perfetto", type=Path, metavar="FILE",
                        help="Chrome trace-event JSON, for the Perfetto UI and chrome://tracing")
    parser.add_argument("--speedscope", type=Path, metavar="FILE",
                        help="the Python stacks as a speedscope file, a profile per process")
    parser.add_argument("--probe-frames", action="store_true",
                        help="keep writerprof's own probe frames in the --speedscope stacks (folded out by default)")
    parser.add_argument("--threads", choices=("sum", "split"), default="sum",
                        help="--speedscope: a profile per process, its threads added up (sum, the default), "
                             "or per thread (split)")


def run(args: argparse.Namespace) -> int:
    if args.perfetto is None and args.speedscope is None:
        raise UsageError("say what to write: --perfetto FILE and/or --speedscope FILE")
    check_outputs([args.run_dir], [("--perfetto", args.perfetto), ("--speedscope", args.speedscope)])
    from writerprof.collector import keep_until_exit
    from writerprof.run import load

    recorded = load(args.run_dir)
    keep_until_exit(recorded)
    # Each output on its own: one that cannot be written (a run without
    # stacks has no speedscope file) is a line, and the others are written.
    failed = 0
    outputs = ((args.perfetto, _perfetto),
               (args.speedscope, lambda r, p: _speedscope(r, p, args.probe_frames, args.threads == "split")))
    for path, write in outputs:
        if path is None:
            continue
        try:
            print(f"writerprof export: {write(recorded, path)}", file=sys.stderr)
        except WriterprofError as exc:
            print(f"writerprof export: {path} not written: {exc}", file=sys.stderr)
            failed += 1
    for loss in recorded.losses:
        print(f"writerprof export: note: {loss}", file=sys.stderr)
    return 1 if failed else 0


def _perfetto(recorded, path: Path) -> str:
    from writerprof.exports import perfetto

    trace = perfetto.trace(recorded)
    write_json(path, trace, "Perfetto trace")
    slices = sum(e["ph"] == "X" for e in trace["traceEvents"])
    return (f"{path}: {len(recorded.processes)} processes, {slices} slices "
            f"({path.stat().st_size / (1 << 20):.1f} MiB)")


def _speedscope(recorded, path: Path, probe_frames: bool = False, threads: bool = False) -> str:
    from writerprof.exports import speedscope
    from writerprof.run.stacks import require_stacks

    stacks = require_stacks(recorded, probe_frames)
    profile = speedscope.document(recorded, stacks, threads)
    write_json(path, profile, "speedscope file")
    return (f"{path}: {len(profile['profiles'])} profiles, {sum(s.total for s in stacks)} samples, "
            f"{len(profile['shared']['frames'])} frames ({path.stat().st_size / (1 << 20):.1f} MiB)")
