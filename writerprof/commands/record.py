"""Run CMD with every Python process it starts probed (fork, forkserver and
spawn children, at any depth), sample them all from /proc, and leave a run
directory for `writerprof report`.

record's options go before CMD: every word after CMD's first is CMD's (record
says so when one of them is an option of its own, and CMD still gets it).

The probe reaches CMD's Python processes through PYTHONPATH: a Python
started with -E, -I or -S, or by a CMD that replaces PYTHONPATH, goes
unprobed (still sampled from /proc; the summary counts it, with what to do).
The probe also samples each process's Python stacks from inside it; with
--stacks-by py-spy (and for --native), py-spy samples them from outside: if it
is missing or may not attach (ptrace), record says so in one line and goes on
without.

CMD's output passes through untouched, and CMD gets the terminal (Ctrl-C,
Ctrl-Z) and the signals sent to record (SIGTERM, SIGUSR1, ...), as a shell's
job would. While CMD runs, record writes nothing to the terminal: its notes
and summary come after CMD ended. record exits with CMD's exit status (128+N
if a signal N killed it). The run directory is complete and loadable however
CMD ended; if its disk filled up or it vanished, run.json says what is
missing ("incomplete") as far as it can.

When no save makes progress for --stall's time (30 s; 0: never) while CMD
runs, record takes one snapshot of every process it follows (stacks, system
calls, wait channels, CPU) into the run and goes on: the report names the
wait.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from writerprof.commands import misplaced
from writerprof.errors import UsageError
from writerprof.probes.writerprof_probe import specs
from writerprof.record import session, stackoptions, stall
from writerprof.record.stackoptions import StackOptions
from writerprof.probes.writerprof_probe.format import FULL_RATE_STARTS
from writerprof.units import parse_duration

EXAMPLE = """
writerprof record -o run1 -- python train.py --epochs 1
writerprof record -o run2 --stacks-by py-spy -- writerprof repro --saves 2 --start-method forkserver
"""


def _duration(text):
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_duration.__name__ = "duration"


def _interval(text):
    value = _duration(text)
    if value < session.MIN_INTERVAL_NS:  # the sampler thread would spin on a CPU of its own
        raise argparse.ArgumentTypeError(f"{text!r} is shorter than the shortest sampling interval, 1ms")
    return value


_interval.__name__ = "interval"


def _rate(text):
    value = int(text) if text.strip().isdigit() else 0
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a rate in Hz from 1 to 10000")
    return value


_rate.__name__ = "rate"


def _stall(text):
    if text.strip() in ("0", "0s"):
        return 0
    value = _duration(text)
    if value < stall.MIN_STALL_NS:  # a pause between two writes would be one
        raise argparse.ArgumentTypeError(f"{text!r}: a stall is 1s or longer (0: none)")
    return value


_stall.__name__ = "stall time"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", type=Path, metavar="RUN",
                        help="run directory, new or empty (default: writerprof-YYYYmmdd-HHMMSS here)")
    parser.add_argument("--interval", type=_interval, default=session.INTERVAL_NS,
                        metavar="TIME", help="sampling interval, 1ms or longer (default: 100ms)")
    parser.add_argument("--probe", action="append", default=[], metavar="MODULE:QUALNAME=PHASE",
                        help="also time this callable as PHASE (repeatable)")
    parser.add_argument("--save-files", action="append", default=[], metavar="GLOB",
                        help="the checkpoint files: the written files whose path matches, and the uploads whose "
                        "key does (repeatable; default: every file of 1 MiB or more written between its open and "
                        "close, every upload of 1 MiB or more)")
    parser.add_argument("--no-sampler", action="store_true",
                        help="journal from inside the processes only; no /proc sampling")
    parser.add_argument("--stacks-by", choices=("probe", "py-spy"), default=None,
                        help="who samples the Python stacks: the probe inside each process (default), or a py-spy "
                        "per process from outside (the default with --native or --busy-stack-rate)")
    parser.add_argument("--stack-rate", type=_rate, default=stackoptions.RATE_HZ, metavar="HZ",
                        help=f"stack samples per second of the first {FULL_RATE_STARTS} writers of each parent "
                        "(processes a Python process of CMD started) in their start-up "
                        f"(default: {stackoptions.RATE_HZ})")
    parser.add_argument("--sparse-stack-rate", type=_rate, default=stackoptions.SPARSE_RATE_HZ, metavar="HZ",
                        help="stack samples per second of the rest (CMD, MPI ranks, later writers; "
                        f"multiprocessing's daemons at {stackoptions.DAEMON_RATE_HZ} at most) and of the writers after their "
                        "start-up; at --stack-rate or above, every process is sampled at --stack-rate "
                        f"(default: {stackoptions.SPARSE_RATE_HZ})")
    parser.add_argument("--busy-stack-rate", type=_rate, default=None, metavar="HZ",
                        help="py-spy's --stack-rate for a process that starts while the host's CPUs have under a "
                        "quarter of their time free (/proc/stat) (default: --stack-rate always)")
    parser.add_argument("--native", action="store_true",
                        help="py-spy also samples native frames (C, C++, Cython)")
    parser.add_argument("--no-stacks", action="store_true", help="take no Python stacks")
    parser.add_argument("--stall", type=_stall, default=stall.STALL_NS, metavar="SECONDS",
                        help="when no save makes progress for this long while CMD runs, take one snapshot of every "
                        "process (threads' stacks, system calls, wait channels, CPU) and go on; 0: never "
                        f"(default: {stall.STALL_NS // 10**9}s)")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                        help="the command to record; every word after it is its own")


def run(args: argparse.Namespace) -> int:
    command = session.resolve(args.cmd)
    for spec in args.probe:
        try:
            specs.parse(spec)
        except specs.SpecError as exc:
            raise UsageError(f"--probe {exc}") from None
    by_py_spy = args.native or args.busy_stack_rate is not None
    if args.stacks_by == "probe" and by_py_spy:
        raise UsageError(f"{'--native' if args.native else '--busy-stack-rate'} is py-spy's: "
                         "record with --stacks-by py-spy (or without --stacks-by)")
    by = args.stacks_by or ("py-spy" if by_py_spy else "probe")
    stacks = StackOptions(enabled=not args.no_stacks, by=by, rate_hz=args.stack_rate, native=args.native,
                          sparse_rate_hz=args.sparse_stack_rate, busy_rate_hz=args.busy_stack_rate)
    misplaced.warn(args.parser, args.argv, args.cmd)
    return session.run(args.output, command, interval_ns=args.interval, probes=args.probe,
                       sampler=not args.no_sampler, stacks=stacks, save_files=args.save_files, stall_ns=args.stall)
