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

Per hooked call (first; alone with --calls-only): in a fresh interpreter per
--python, the probe's timing wrapper around a function that does nothing, and
the probe's os.write hook on a 1-byte write to a regular file, each with a
bytes-like argument and with a memoryview (a writer's view of its buffer,
whose buffer index the hook looks up), against the bare calls: ns per call over the bare call, median of --rounds rounds timed
in thread CPU time (steady on a loaded machine).
Targets (issue 16): <= 1000 ns per hooked call, median loss < 1%.
benchmarks/probe_instructions.py counts the same calls' instructions: steady
where the load of a shared machine inflates even thread CPU time.

    python benchmarks/probe_overhead.py --calls-only --python python3.11 --python python3.12
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import children_cpu_s, writerprof


def throughput(recorded: bool, args, scratch: str) -> tuple[float, float]:
    """Mean per-save GiB/s, and the CPU seconds of the run: the reproducer's
    processes, and writerprof record's own (its sampler) when recorded."""
    where = ["--no-fsync", "--dir", scratch] if args.tmpfs else []
    command = writerprof() + ["repro", "--json", "--saves", str(args.saves), "--size", args.size, *where,
                              *args.extra]
    if recorded:
        run = tempfile.mkdtemp(prefix="run-", dir=scratch)
        command = writerprof() + ["record", "-o", run, "--"] + command
    cpu = children_cpu_s()
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    cpu = children_cpu_s() - cpu
    records = [json.loads(line) for line in done.stdout.splitlines()]
    return next(r for r in records if r["record"] == "summary")["mean_throughput_gib_s"], cpu


def _probe_dir() -> str:
    """The probe's package directory, without importing writerprof: the
    per-call child may be an interpreter that has no writerprof installed."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "probes")


def _round_ns(fn, args, count: int) -> int:
    """CPU ns of this thread for `count` calls: what the load of a shared
    machine takes away (preemption) does not count, the call's syscalls do."""
    clock = time.thread_time_ns
    t0 = clock()
    for _ in range(count):
        fn(*args)
    return clock() - t0


def _per_call_ns(hooked, bare, args, count: int, rounds: int) -> tuple[float, float]:
    """Median over `rounds` of (hooked - bare) ns per call, and of bare ns per
    call; each round times the bare call right before the hooked one, so that
    the two see the same state of the machine."""
    extra, plain = [], []
    for _ in range(rounds):
        bare_ns = _round_ns(bare, args, count)
        hooked_ns = _round_ns(hooked, args, count)
        extra.append((hooked_ns - bare_ns) / count)
        plain.append(bare_ns / count)
    return statistics.median(extra), statistics.median(plain)


def per_call_child(scratch: str, count: int, rounds: int) -> dict:
    """In this interpreter: the probe's cost per hooked call over the bare
    call, for a spec hook around a function that does nothing (with a buffer
    argument, as a writer's write_chunk has) and for the os.write hook on a
    1-byte write to a regular file. Every call makes a CHUNK record; the
    journal's batched appends (to `scratch`) are part of the cost."""
    sys.path.insert(0, _probe_dir())
    from writerprof_probe import calls, osio
    from writerprof_probe.journal import Journal

    journal = Journal(scratch, "bench")
    journal.open(os.getpid(), time.monotonic_ns())
    calls.journal = journal

    def nothing(data):
        return None

    hooked = calls.timed(nothing, calls.Hook("bench:nothing=bench", 40, calls.describe_args))
    spec_ns, nothing_ns = _per_call_ns(hooked, nothing, (bytearray(1),), count, rounds)
    spec_view_ns, _ = _per_call_ns(hooked, nothing, (memoryview(bytearray(1)),), count, rounds)
    bare_write = os.write
    fd = os.open(os.path.join(scratch, "writes.bin"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    osio.install(lambda *status: None)
    try:
        write_ns, bare_write_ns = _per_call_ns(os.write, bare_write, (fd, b"x"), count, rounds)
        # What a writer passes: a view of its buffer (a SharedMemory's), not bytes.
        write_view_ns, _ = _per_call_ns(os.write, bare_write, (fd, memoryview(b"x")), count, rounds)
    finally:
        for name in dir(os):  # put the bare os functions back
            fn = getattr(os, name)
            if hasattr(fn, "__wrapped__") and callable(fn):
                setattr(os, name, fn.__wrapped__)
        os.close(fd)
    journal.flush()
    return {"python": sys.version.split()[0], "spec_ns": spec_ns, "spec_view_ns": spec_view_ns,
            "nothing_ns": nothing_ns, "write_ns": write_ns, "write_view_ns": write_view_ns,
            "bare_write_ns": bare_write_ns}


def hook_costs(pythons: list[str], count: int, rounds: int) -> list[dict]:
    """per_call_child in a fresh interpreter per Python (the probe runs on
    3.9-3.13; the hot path's cost differs between versions)."""
    results = []
    for python in pythons:
        with tempfile.TemporaryDirectory(prefix="writerprof-calls-", dir="/dev/shm") as scratch:
            done = subprocess.run([python, os.path.abspath(__file__), "--per-call-child", scratch,
                                   "--calls", str(count), "--rounds", str(rounds)],
                                  capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout))
    return results


def print_hook_costs(results: list[dict], count: int, rounds: int) -> None:
    print(f"per hooked call, ns over the bare call (median of {rounds} rounds of {count} calls, "
          f"thread CPU time; target <= 1000 ns); load {os.getloadavg()[0]:.2f}")
    print(f"{'':>8} {'spec hook':>21} {'':>8} {'os.write file':>21}")
    print(f"{'python':>8} {'bytearray':>10} {'view':>10} {'(bare)':>8} {'bytes':>10} {'view':>10} {'(bare)':>8}")
    for r in results:
        print(f"{r['python']:>8} {r['spec_ns']:>10.0f} {r['spec_view_ns']:>10.0f} {r['nothing_ns']:>8.0f} "
              f"{r['write_ns']:>10.0f} {r['write_view_ns']:>10.0f} {r['bare_write_ns']:>8.0f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--saves", type=int, default=4)
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--tmpfs", action="store_true", help="no fsync, files on tmpfs: the worst case")
    parser.add_argument("--python", action="append", dest="pythons", metavar="PYTHON",
                        help="measure the per-call cost under this interpreter too (repeatable; "
                             "default: this one)")
    parser.add_argument("--calls", type=int, default=100_000, help="hooked calls per round")
    parser.add_argument("--rounds", type=int, default=9, help="rounds per call cost (their median)")
    parser.add_argument("--calls-only", action="store_true", help="the per-call costs only")
    parser.add_argument("--per-call-child", metavar="SCRATCH", help=argparse.SUPPRESS)
    parser.add_argument("extra", nargs="*", help="more `writerprof repro` arguments, after --")
    args = parser.parse_args()
    if args.per_call_child:
        print(json.dumps(per_call_child(args.per_call_child, args.calls, args.rounds)))
        return
    if args.pairs < 5:
        parser.error("at least 5 pairs")
    print_hook_costs(hook_costs(args.pythons or [sys.executable], args.calls, args.rounds), args.calls, args.rounds)
    if args.calls_only:
        return
    with tempfile.TemporaryDirectory(prefix="writerprof-overhead-", dir="/dev/shm") as scratch:
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
