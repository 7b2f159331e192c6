"""The probe's cost per hooked call in instructions: steady where a shared
machine's timings are not (benchmarks/probe_overhead.py --calls-only times
the same calls in thread CPU time, which the load of other processes on the
same cores inflates).

    python benchmarks/probe_instructions.py [--calls 10000] [--python PYTHON ...]

Per --python, under valgrind (cachegrind, no cache simulation): a child that
makes --calls calls, and one that makes none, for the spec hook around a
function that does nothing and for the os.write hook on a 1-byte write to a
regular file, each with a bytes-like argument and with a memoryview, hooked
and bare; prints the instructions per hooked call over
the bare call ((hooked - none) - (bare - none), over --calls). The children
run with PYTHONHASHSEED=0: the same count on every run.

Under valgrind a program runs ~50x slower, so the probe's time-based readings
(its CPU every CPU_READ_NS, the faults of calls of FAULT_READ_MIN_NS or
longer, a batch FLUSH_NS after the last) would come ~50x as often per call:
the child scales those intervals by 100, to count what a full-speed run does.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

SLOWDOWN = 100


def child(kind: str, hooked: bool, count: int, scratch: str) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "probes"))
    from writerprof_probe import calls, format, journal as journal_module, osio

    format.CPU_READ_NS *= SLOWDOWN
    format.FAULT_READ_MIN_NS *= SLOWDOWN
    journal_module._FLUSH_NS *= SLOWDOWN
    journal = journal_module.Journal(scratch, "bench")
    journal.open(os.getpid(), time.monotonic_ns())
    calls.journal = journal

    def nothing(data):
        return None

    view = kind.endswith("-view")  # a memoryview argument, as a writer passes its buffer
    if kind.startswith("spec"):
        bare, args = nothing, (memoryview(bytearray(1)) if view else bytearray(1),)
        hook = calls.Hook("bench:nothing=bench", 40, calls.describe_args)
    else:
        fd = os.open(os.path.join(scratch, "writes.bin"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        bare, args = os.write, (fd, memoryview(b"x") if view else b"x")
        hook = calls.Hook("os:write=write", format.PHASES["write"], osio._describe_write, osio._accept_write)
    fn = calls.timed(bare, hook) if hooked else bare
    for _ in range(2):  # the thread's state, made at the first call, is in every count
        fn(*args)
    for _ in range(count):
        fn(*args)


def instructions(python: str, kind: str, hooked: bool, count: int, valgrind: bool = True) -> int:
    """The child's instructions, under valgrind; without it (the count
    unknown: 0), a warm-up: the first probed process compiles the probe's
    wrappers (calls._compiled) and later ones load them, so that a first
    child would count a compile the others do not."""
    tool = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"] if valgrind else []
    with tempfile.TemporaryDirectory(prefix="writerprof-instructions-", dir="/dev/shm") as scratch:
        done = subprocess.run(
            [*tool, python, os.path.abspath(__file__), "--child", kind, "hooked" if hooked else "bare", str(count),
             scratch], capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    return int(re.search(r"I\s+refs:\s+([\d,]+)", done.stderr).group(1).replace(",", "")) if valgrind else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--python", action="append", dest="pythons", metavar="PYTHON")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, mode, count, scratch = args.child
        child(kind, mode == "hooked", int(count), scratch)
        return
    print(f"instructions per hooked call over the bare call ({args.calls} calls, valgrind)")
    print(f"{'':>8} {'spec hook':>21} {'':>8} {'os.write file':>21}")
    print(f"{'python':>8} {'bytearray':>10} {'view':>10} {'(bare)':>8} {'bytes':>10} {'view':>10} {'(bare)':>8}")
    for python in args.pythons or [sys.executable]:
        version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        row = []
        for kind in ("spec", "spec-view", "write", "write-view"):
            instructions(python, kind, True, 0, valgrind=False)
            counts = {(hooked, n): instructions(python, kind, hooked, n)
                      for hooked in (True, False) for n in (0, args.calls)}
            bare = counts[False, args.calls] - counts[False, 0]
            hooked = counts[True, args.calls] - counts[True, 0]
            row += [(hooked - bare) / args.calls, bare / args.calls]
        print(f"{version:>8} {row[0]:>10.0f} {row[2]:>10.0f} {row[1]:>8.0f} {row[4]:>10.0f} {row[6]:>10.0f} "
              f"{row[5]:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
