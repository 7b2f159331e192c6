"""Explain why run B's saves take a different time from run A's: the
difference in mean save time cut into the parts of a save's critical path
(start-up phases, generation, queue, write, fsync, ...), which add up to it
with the unexplained remainder shown; then the differences in placement and
in the kernel's counts, per save matched by order, and a verdict.

Several runs a side are pooled: `compare A1 A2 -- B1 B2`, or a pattern per
side, quoted so that the shell leaves it to writerprof:
`compare 'runs/fork-*' 'runs/forkserver-*'`. With one run a side no cause is
named within the run-to-run spread its saves show; the verdict then says how
many runs a side would resolve the difference.

--json prints "schema": "writerprof.compare/1".
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from pathlib import Path

from writerprof.errors import UsageError, WriterprofError

# Between A's runs and B's. argparse drops a "--" from a list of positionals,
# so the runs are its REMAINDER (which keeps it) and the options among them
# are parsed again (sides).
SEPARATOR = "--"

EXAMPLE = """
writerprof compare run-fork run-forkserver
writerprof compare 'runs/fork-*' 'runs/forkserver-*' --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "%(prog)s [-h] [--json] A [A ...] [-- B [B ...]]"
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("runs", nargs=argparse.REMAINDER, metavar="A [A ...] -- B [B ...]",
                        help="the reference run directories, then the runs to explain (A B: one of each); "
                             "each may be a quoted pattern ('runs/fork-*')")


def sides(args: argparse.Namespace) -> tuple[list[Path], list[Path]]:
    """A's and B's run directories, from `A B` or `A... -- B...`, patterns
    expanded; options among the words (`A B --json`) set on args."""
    words = list(args.runs)
    options = [w for w in words if w.startswith("-") and w != SEPARATOR]
    if options:
        args.parser.parse_args(options, namespace=args)
    words = [w for w in words if w not in options]
    if words.count(SEPARATOR) > 1:
        raise UsageError(f"{SEPARATOR} twice: one {SEPARATOR} goes between A's runs and B's")
    if SEPARATOR in words:
        at = words.index(SEPARATOR)
        a, b = words[:at], words[at + 1:]
    elif len(words) == 2:
        a, b = words[:1], words[1:]
    elif len(words) > 2:
        raise UsageError(f"{len(words)} runs and no {SEPARATOR}: put {SEPARATOR} between A's runs and B's "
                         f"(compare A1 A2 {SEPARATOR} B1 B2)")
    else:
        a, b = words, []
    for name, side in (("A", a), ("B", b)):
        if not side:
            raise UsageError(f"no run for {name}: compare A B, or several a side: compare A1 A2 {SEPARATOR} B1 B2")
    return _runs(a, "A"), _runs(b, "B")


def _runs(words: list[str], name: str) -> list[Path]:
    """The run directories of one side: each word a run directory or a pattern naming some."""
    from writerprof.run.meta import read_meta

    paths: list[Path] = []
    for word in words:
        # A path that exists is itself, whatever its characters ("run[1]").
        found = sorted(glob.glob(word)) if glob.has_magic(word) and not os.path.lexists(word) else [word]
        if not found:
            raise UsageError(f"{word} ({name}): the pattern matches no run directory")
        for path in map(Path, found):
            if path in paths:
                raise UsageError(f"{path} is named twice for {name}")
            read_meta(path)  # a readable error for what is not a run, before any is loaded
            paths.append(path)
    return paths


def run(args: argparse.Namespace) -> int:
    from writerprof import allocator
    from writerprof.analysis.compare import compare
    from writerprof.analysis.ending import complete
    from writerprof.collector import collector_paused, keep_until_exit
    from writerprof.analysis.summary import summarize
    from writerprof.render import terminal
    from writerprof.render.table import terminal_width
    from writerprof.run import load

    runs_a, runs_b = sides(args)
    allocator.for_big_arrays()
    with collector_paused():
        a, b = [summarize(load(p)) for p in runs_a], [summarize(load(p)) for p in runs_b]
    keep_until_exit(a, b)
    for name, side in (("A", a), ("B", b)):
        for summary in side:
            if not complete(summary["saves"]):
                why = ("its run was cut short before any save completed" if summary["saves"]
                       else "no probed process started a writer")
                raise WriterprofError(f"{summary['run']['path']} ({name}) has no saves: {why} "
                                      f"(see 'writerprof report {summary['run']['path']}')")
    comparison = compare(a, b)
    if args.json:
        from writerprof import jsonout  # (orjson imports uuid, dataclasses, ...: only here)

        jsonout.write_stdout(comparison)
    else:
        sys.stdout.write(terminal.compare_text(comparison, terminal_width()))
    return 0
