"""The reproducer's own figures for each start method, with and without a heavy
main module: what writerprof will later have to explain.

    python benchmarks/repro_start_methods.py [--saves 4] [--size 1GiB] [--methods ...]

Runs `writerprof repro --json` once per (method, main imports) and prints one
row each from its summary: mean throughput, mean writer start-up, mean save
time. Extra arguments after `--` go to every run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from common import writerprof

HEAVY = "numpy,matplotlib.pyplot"


def summary(method: str, main_imports: str, saves: int, size: str, extra: list[str]) -> dict:
    done = subprocess.run(
        writerprof() + ["repro", "--json", "--start-method", method, "--saves", str(saves),
                        "--size", size, "--main-imports", main_imports, *extra],
        capture_output=True, text=True, check=True,
    )
    records = [json.loads(line) for line in done.stdout.splitlines()]
    return next(r for r in records if r["record"] == "summary")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=4)
    parser.add_argument("--size", default="1GiB")
    parser.add_argument("--methods", default="fork,forkserver,spawn")
    parser.add_argument("extra", nargs="*", help="more `writerprof repro` arguments, after --")
    args = parser.parse_args()
    print(f"{args.saves} saves of {args.size} each, Python {sys.version.split()[0]}")
    print(f"{'method':<11} {'main imports':<24} {'GiB/s':>7} {'start-up s':>11} {'save s':>8}")
    for method in args.methods.split(","):
        for main_imports in ("", HEAVY):
            row = summary(method, main_imports, args.saves, args.size, args.extra)
            print(f"{method:<11} {main_imports or '-':<24} {row['mean_throughput_gib_s']:>7.3f}"
                  f" {row['mean_writer_startup_s']:>11.3f} {row['mean_total_s']:>8.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
