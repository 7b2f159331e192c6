"""The `writerprof` command: one module per subcommand behind a small interface.

Each module in `writerprof.commands` named in COMMANDS provides:
  HELP                      one line for `writerprof --help`
  add_arguments(parser)     its options
  run(args) -> int          the job; raises WriterprofError for a readable failure
Subcommand modules import their heavy dependencies inside `run`, so that the
CLI starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from writerprof import __version__
from writerprof.errors import Interrupted, UsageError, WriterprofError

COMMANDS = ("record", "report", "compare", "contrast", "plot", "flame", "export", "merge", "repro")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, not a usage dump."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')", prog=self.prog)


def build_parser() -> Parser:
    parser = Parser(
        prog="writerprof",
        description="Profile and diagnose the writer subprocesses of checkpoint benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"writerprof {__version__}")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        module = importlib.import_module(f"writerprof.commands.{name}")
        sub = subcommands.add_parser(
            name,
            help=module.HELP,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(run=module.run, parser=sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    prog = "writerprof"
    try:
        args, extra = build_parser().parse_known_args(argv)
        prog = f"writerprof {args.command}"
        if extra:  # name the subcommand whose options were wrong, not writerprof's
            args.parser.error(f"unrecognized arguments: {' '.join(extra)}")
        return args.run(args)
    except UsageError as exc:
        print(f"{exc.prog or prog}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except WriterprofError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.exit_code
    except (KeyboardInterrupt, Interrupted) as exc:
        print(f"{prog}: interrupted", file=sys.stderr)
        return getattr(exc, "exit_code", 130)
