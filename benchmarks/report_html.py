"""How long `writerprof report RUN --html FILE` takes on a 4-save run.

    python benchmarks/report_html.py [--run RUN] [--repeats 3] [--size 64MiB] [--baseline CMD]

Without --run, records one first: `writerprof record -- writerprof repro
--saves 4 --size 64MiB` into a temporary directory (the reproducer's files on
disk, its buffers in /dev/shm as always). Then runs the report --repeats
times, one warm-up before (the page cache and matplotlib's font cache, as
they are on a second report), and prints each run's wall and CPU seconds (the
report and its render workers), the worst wall time, and the load average.
Target (issue 16): worst of 3 <= 1 s. Last, the same figures for
`writerprof --help`, which imports no subcommand. --baseline CMD: another
writerprof's reports of the same run, taking turns with this one's, and the
ratio of the medians (only such turns compare two versions on a machine
whose speed varies).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import statistics
import tempfile
import time

from common import BASELINE_HELP, baseline, children_cpu_s, writerprof

TARGET_S = 1.0


def record(run: str, size: str) -> None:
    subprocess.run(writerprof() + ["record", "-o", run, "--", *writerprof(), "repro", "--saves", "4",
                                   "--size", size], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def timed(args: list[str], command: list[str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of `writerprof ARGS` (its workers' CPU included), by command (default: this one)."""
    cpu, t0 = children_cpu_s(), time.perf_counter()
    subprocess.run((command or writerprof()) + args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, children_cpu_s() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", help="an existing run directory (default: record a 4-save one)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", default="64MiB", help="the recorded reproducer's --size")
    parser.add_argument("--baseline", metavar="CMD", help=BASELINE_HELP)
    args = parser.parse_args()
    other = args.baseline and baseline(args.baseline)
    with tempfile.TemporaryDirectory(prefix="writerprof-report-html-") as scratch:
        run = args.run or os.path.join(scratch, "run")
        if not args.run:
            record(run, args.size)
        page, their_page = os.path.join(scratch, "report.html"), os.path.join(scratch, "baseline.html")
        timed(["report", run, "--html", page])  # warm-up
        if other:
            timed(["report", run, "--html", their_page], other)
        walls, theirs = [], []
        for i in range(args.repeats):
            wall, cpu = timed(["report", run, "--html", page])
            walls.append(wall)
            print(f"run {i + 1}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
            if other:
                theirs.append(timed(["report", run, "--html", their_page], other))
                print(f"  baseline: {theirs[-1][0]:.2f} s wall, {theirs[-1][1]:.2f} s CPU", flush=True)
        size = os.path.getsize(page)
    worst = max(walls)
    print(f"report --html on {run if args.run else 'a 4-save run'}: worst of {args.repeats} {worst:.2f} s, "
          f"best {min(walls):.2f} s (target <= {TARGET_S:.0f} s: {'met' if worst <= TARGET_S else 'NOT met'}); "
          f"page {size / 1024:.0f} KiB; load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    if other:
        print(f"baseline: worst of {args.repeats} {max(w for w, _ in theirs):.2f} s, best "
              f"{min(w for w, _ in theirs):.2f} s; this / baseline: wall "
              f"{statistics.median(walls) / statistics.median(w for w, _ in theirs):.2f} (medians)")
    wall, cpu = max(timed(["--help"]) for _ in range(args.repeats))
    print(f"writerprof --help: worst of {args.repeats} {wall:.2f} s wall, {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()
