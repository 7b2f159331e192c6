"""What recording costs the recorded: the reproducer with and without
`writerprof record`, and the probe's cost per hooked call.

    python benchmarks/probe_overhead.py [--pairs 9] [--saves 4] [--size 1GiB] [--tmpfs] [-- REPRO ARGS]

Throughput: `writerprof repro --json` alone and under `writerprof record`,
interleaved in pairs whose order alternates (plain first, then recorded
first), so that drift of the machine falls on both alike. Prints each pair,
the median of recorded/plain throughput ratios and their spread. The
reproducer runs with its defaults (fsync, files in a temporary directory on
disk); --tmpfs writes to tmpfs without fsync instead: the fastest save, so
the worst case for the probe's and the sampler's share of the CPU.

Per hooked call: in this process, the probe's timing wrapper around a function
that does nothing, and the probe's os.write hook on a 1-byte write to a regular
file, against the bare calls; best of several rounds, in microseconds.
Targets (the recording issue): <= 2 us per hooked call, median loss < 1%.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import writerprof.probes

sys.path.insert(0, os.path.dirname(writerprof.probes.__file__))
from writerprof_probe import calls, osio  # noqa: E402  (the probe, as targets import it)
from writerprof_probe.journal import Journal  # noqa: E402


def writerprof() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "writerprof")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "writerprof"]


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def throughput(recorded: bool, args, scratch: str) -> tuple[float, float]:
    """Mean per-save GiB/s, and the CPU seconds of the run: the reproducer's
    processes, and writerprof record's own (its sampler) when recorded."""
    where = ["--no-fsync", "--dir", scratch] if args.tmpfs else []
    command = writerprof() + ["repro", "--json", "--saves", str(args.saves), "--size", args.size, *where,
                              *args.extra]
    if recorded:
        run = tempfile.mkdtemp(prefix="run-", dir=scratch)
        command = writerprof() + ["record", "-o", run, "--"] + command
    cpu = _cpu_s()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    cpu = _cpu_s() - cpu
    records = [json.loads(line) for line in done.stdout.splitlines()]
    return next(r for r in records if r["record"] == "summary")["mean_throughput_gib_s"], cpu


def per_call_us(fn, *args, calls_per_round=200_000, rounds=7) -> float:
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls_per_round):
            fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best / calls_per_round * 1e6


def hook_costs(scratch: str) -> tuple[float, float]:
    """(spec hook, os.write hook) cost per call in us, over the bare call."""
    journal = Journal(scratch, "bench")
    journal.open(os.getpid(), time.monotonic_ns())
    calls.journal = journal

    def nothing(data):
        return None

    hooked = calls.timed(nothing, calls.Hook("bench:nothing=bench", 40, calls.describe_args))
    data = bytearray(1)
    spec_us = per_call_us(hooked, data) - per_call_us(nothing, data)

    bare_write = os.write
    fd = os.open(os.path.join(scratch, "writes.bin"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    bare_us = per_call_us(bare_write, fd, b"x")
    osio.install(lambda *status: None)
    try:
        write_us = per_call_us(os.write, fd, b"x") - bare_us
    finally:
        for name in dir(os):  # put the bare os functions back
            fn = getattr(os, name)
            if hasattr(fn, "__wrapped__") and callable(fn):
                setattr(os, name, fn.__wrapped__)
        os.close(fd)
    return spec_us, write_us


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--saves", type=int, default=4)
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--tmpfs", action="store_true", help="no fsync, files on tmpfs: the worst case")
    parser.add_argument("extra", nargs="*", help="more `writerprof repro` arguments, after --")
    args = parser.parse_args()
    if args.pairs < 5:
        parser.error("at least 5 pairs")
    with tempfile.TemporaryDirectory(prefix="writerprof-overhead-", dir="/dev/shm") as scratch:
        spec_us, write_us = hook_costs(scratch)
        print(f"per hooked call: spec hook {spec_us:.2f} us, os.write hook {write_us:.2f} us "
              f"(target <= 2 us)", flush=True)
        where = "no fsync, tmpfs" if args.tmpfs else "fsync, disk"
        print(f"{args.pairs} pairs of `writerprof repro --saves {args.saves} --size {args.size} "
              f"{' '.join(args.extra)}` ({where}), Python {sys.version.split()[0]}")
        print(f"{'pair':>4} {'plain GiB/s':>12} {'recorded GiB/s':>15} {'ratio':>7} "
              f"{'plain CPU s':>12} {'recorded CPU s':>15}")
        ratios, extra_cpu = [], []
        for pair in range(args.pairs):
            order = (False, True) if pair % 2 == 0 else (True, False)
            runs = {recorded: throughput(recorded, args, scratch) for recorded in order}
            (plain, plain_cpu), (recorded, recorded_cpu) = runs[False], runs[True]
            ratios.append(recorded / plain)
            extra_cpu.append(recorded_cpu / plain_cpu - 1)
            print(f"{pair + 1:>4} {plain:>12.3f} {recorded:>15.3f} {ratios[-1]:>7.3f} "
                  f"{plain_cpu:>12.2f} {recorded_cpu:>15.2f}", flush=True)
    median = statistics.median(ratios)
    quartiles = statistics.quantiles(ratios, n=4)
    print(f"median ratio {median:.3f} (loss {100 * (1 - median):.1f}%), "
          f"range {min(ratios):.3f}-{max(ratios):.3f}, interquartile {quartiles[0]:.3f}-{quartiles[2]:.3f} "
          f"(target: median loss < 1%)")
    print(f"CPU time of a recorded run (reproducer, probe, writerprof record and its sampler) over a plain "
          f"one: median {100 * statistics.median(extra_cpu):+.1f}%")


if __name__ == "__main__":
    main()
