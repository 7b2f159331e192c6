"""The `writerprof` command: one module per subcommand behind a small interface.

Each module in `writerprof.commands` named in COMMANDS provides:
  add_arguments(parser)     its options
  run(args) -> int          the job; raises WriterprofError for a readable failure
  EXAMPLE                   one or two command lines, the end of its --help
and its docstring is its `writerprof NAME --help` description; COMMANDS holds
its line in `writerprof --help`. args.argv is writerprof's argv, args.parser
the subcommand's parser. Only the subcommand that runs is imported
(`writerprof --help` and `--version` import none), and subcommand modules
import their heavy dependencies inside `run`, so that the CLI starts fast.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

from writerprof import __version__, blas, collector, streams
from writerprof.errors import Interrupted, UsageError, WriterprofError

# The last line of defence, for a bug: an exception no command expected is one
# line naming it and where it was raised; WRITERPROF_DEBUG=1 shows the traceback.
INTERNAL_ERROR = "internal error"
DEBUG_ENV = "WRITERPROF_DEBUG"

# Each subcommand and its line in `writerprof --help`.
COMMANDS = {
    "record": "record a command's writer subprocesses into a run directory",
    "report": "explain a run: processes, saves, diagnoses (text, --json, --html, --plots)",
    "compare": "explain why run B is slower (or faster) than run A, in seconds per save by cause",
    "contrast": "record CMD (default: the built-in reproducer) under fork and forkserver, and explain the difference",
    "plot": "draw a run's plots (PNG and SVG): affinity, placement, chunks, save decomposition",
    "flame": "draw flamegraphs (SVG and PNG) of a run's Python stacks, or of two runs' difference",
    "export": "write a run in another tool's format (Perfetto / Chrome trace, speedscope)",
    "merge": "merge the per-host parts of a recording made without a shared run directory",
    "repro": "run the built-in streaming-checkpoint reproducer",
}


# Commands whose process ends holding a loaded run: millions of small
# objects, whose teardown (freed one by one, then the cyclic collector's
# last pass over them) writes nothing and took 0.9 s of a 1M-chunk run's
# 7.4 s `report --json`; record's, numpy and the ~250 modules loaded for its
# summary, ~0.015 CPU s of every recording. Their console script leaves without it (entry).
LEAVE_WITHOUT_TEARDOWN = frozenset({"record", "report", "compare", "plot", "flame", "export"})
# Those of them that start no program of the user's: their numpy at one BLAS
# thread, for all of them (record's summary sets it for itself, not for CMD).
ONE_BLAS_THREAD = LEAVE_WITHOUT_TEARDOWN - {"record"}


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, not a usage dump."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')", prog=self.prog)

    def parse_args(self, args=None, namespace=None):
        args, extra = self.parse_known_args(args, namespace)
        if extra:
            self.reject(extra)
        return args

    def reject(self, words: list[str]) -> None:
        """argparse's error for words it did not recognize, with the option
        meant where a word is close to one of this parser's (a typo)."""
        known = [option for option in self._option_string_actions if option.startswith("--")]
        meant = {}
        for word in words:
            close = _close(word.partition("=")[0], known) if word.startswith("--") else None
            if close:
                meant[word] = close
        hint = ", ".join(repr(option) if len(words) == 1 else f"{option!r} (for {word!r})"
                         for word, option in meant.items())
        self.error(f"unrecognized arguments: {' '.join(words)}" + (f"; did you mean {hint}?" if hint else ""))


def build_parser(command: str | None = None) -> Parser:
    """The parser of every subcommand; given a command, only that one's
    options (its module imported), the others listed by name and help line."""
    parser = Parser(
        prog="writerprof",
        description="Profile and diagnose the writer subprocesses of checkpoint benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"writerprof {__version__}")
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, help_line in COMMANDS.items():
        sub = subcommands.add_parser(name, help=help_line, formatter_class=argparse.RawDescriptionHelpFormatter)
        if command in (None, name):
            with collector.collector_paused():  # the import's objects are for good: no passes over them (~1.5 ms of record's)
                module = importlib.import_module(f"writerprof.commands.{name}")
            sub.description = module.__doc__
            sub.epilog = "example:\n" + "".join(f"  {line}\n" for line in module.EXAMPLE.strip().splitlines())
            module.add_arguments(sub)
            sub.set_defaults(run=module.run, parser=sub)
    return parser


def _command(argv: list[str]) -> str:
    """The subcommand named in argv: its first word that is no option
    (writerprof's own options take no value); "" if there is none."""
    return next((word for word in argv if not word.startswith("-")), "")


def main(argv: list[str] | None = None) -> int:
    prog = "writerprof"
    _bytes_out(sys.stdout)
    try:
        argv = sys.argv[1:] if argv is None else argv
        command = _command(argv)
        if command and command not in COMMANDS:
            raise UsageError(_unknown_command(command), prog=prog)
        args, extra = build_parser(command).parse_known_args(argv)
        prog = f"writerprof {args.command}"
        if extra:  # name the subcommand whose options were wrong, not writerprof's
            args.parser.reject(extra)
        args.argv = argv
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
        import traceback  # only here: record's process goes without it (numpy does not import it either)

        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"{prog}: {INTERNAL_ERROR}: {type(exc).__name__}: {_first_line(exc)} (at {where.filename}:{where.lineno}; "
              f"please report it, with {DEBUG_ENV}=1 for the traceback)", file=sys.stderr)
        return 1


def entry() -> None:
    """The console script and `python -m writerprof`: main(), and out. After
    a command of LEAVE_WITHOUT_TEARDOWN, once its output is flushed, by
    os._exit, its run's objects unfreed (collector.keep_until_exit): none
    of them leaves work to exit handlers (they reap their plot workers and
    close their files themselves; record has stopped its sampler and
    py-spys, and finished run.json, before its summary). Where the flush fails
    (a full disk), the usual exit, which says so. A closed standard stream,
    or a pipe whose reader has gone, is no failure (writerprof.streams)."""
    streams.hold_closed()
    argv = sys.argv[1:]
    command = _command(argv)
    leave = command in LEAVE_WITHOUT_TEARDOWN
    if leave:
        collector.leaving_without_teardown()
    with blas.one_thread() if command in ONE_BLAS_THREAD else contextlib.nullcontext():
        code = main(argv)
    if leave:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            sys.exit(code)
        os._exit(code)
    sys.exit(code)


def _bytes_out(stream) -> None:
    """Non-UTF-8 bytes of argv and paths (surrogates, in Python) printed as
    the bytes they were, as the output files hold them, whatever
    PYTHONIOENCODING or the locale asked: never a UnicodeEncodeError."""
    if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
        utf8 = (getattr(stream, "encoding", "") or "").lower().replace("-", "") == "utf8"
        stream.reconfigure(errors="surrogateescape" if utf8 else "backslashreplace")


def _unknown_command(word: str) -> str:
    close = _close(word, list(COMMANDS))
    return f"unknown command {word!r}; " + (f"did you mean {close!r}?" if close else
                                             f"the commands: {', '.join(COMMANDS)}")


def _close(word: str, known: list[str]) -> str | None:
    """The one of known that word is likely a typo of, if any: difflib's
    closest, but one with the same letters first, since difflib scores two
    letters swapped below one dropped ('reprot': 'repro' 0.91, 'report' 0.83)."""
    import difflib  # here: only a mistyped word pays for its import

    close = difflib.get_close_matches(word, known, n=len(known))
    swapped = [option for option in close if sorted(option) == sorted(word)]
    return (swapped or close or [None])[0]


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [""])[0]
