"""Explain why run B's saves take a different time from run A's: the
difference in mean save time cut into the parts of a save's critical path
(start-up phases, generation, queue, write, fsync, ...), which add up to it
with the unexplained remainder shown; then the differences in placement and
in the kernel's counts, per save matched by order, and a verdict.

--json prints "schema": "writerprof.compare/1".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from writerprof.errors import WriterprofError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", type=Path, metavar="A", help="the reference run directory")
    parser.add_argument("run_b", type=Path, metavar="B", help="the run to explain")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")


def run(args: argparse.Namespace) -> int:
    from writerprof import allocator
    from writerprof.analysis.compare import compare
    from writerprof.collector import collector_paused, keep_until_exit
    from writerprof.analysis.summary import summarize
    from writerprof.render import terminal
    from writerprof.run import load

    allocator.for_big_arrays()
    with collector_paused():
        a, b = summarize(load(args.run_a)), summarize(load(args.run_b))
    keep_until_exit(a, b)
    for name, summary in (("A", a), ("B", b)):
        if not summary["saves"]:
            raise WriterprofError(f"{summary['run']['path']} ({name}) has no saves: no probed process "
                                  f"started a writer (see 'writerprof report {summary['run']['path']}')")
    comparison = compare([a], [b])
    if args.json:
        sys.stdout.write(json.dumps(comparison, separators=(",", ":")) + "\n")
    else:
        sys.stdout.write(terminal.compare_text(comparison))
    return 0
