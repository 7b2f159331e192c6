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
import os
import sys
import traceback

from writerprof import __version__
from writerprof.errors import Interrupted, UsageError, WriterprofError

# The last line of defence, for a bug: an exception no command expected is one
# line naming it and where it was raised; WRITERPROF_DEBUG=1 shows the traceback.
INTERNAL_ERROR = "internal error"
DEBUG_ENV = "WRITERPROF_DEBUG"

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
    _bytes_out(sys.stdout)
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
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            raise
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"{prog}: {INTERNAL_ERROR}: {type(exc).__name__}: {_first_line(exc)} (at {where.filename}:{where.lineno}; "
              f"please report it, with {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
        return 1


def _bytes_out(stream) -> None:
    """Non-UTF-8 bytes of argv and paths (surrogates, in Python) printed as
    the bytes they were, as the output files hold them, whatever
    PYTHONIOENCODING or the locale asked: never a UnicodeEncodeError."""
    if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
        utf8 = (getattr(stream, "encoding", "") or "").lower().replace("-", "") == "utf8"
        stream.reconfigure(errors="surrogateescape" if utf8 else "backslashreplace")


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [""])[0]
