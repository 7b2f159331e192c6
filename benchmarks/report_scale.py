"""How long `writerprof report --json` takes, and how much memory, on large
runs: synthetic run directories (writerprof.synthetic) of many ranks, saves
and chunks, each reported by a fresh `writerprof report --json` process.

    python benchmarks/report_scale.py                 # the two shapes below
    python benchmarks/report_scale.py --shape 8x10x100 --repeat 3

Targets: 64 ranks x 10 saves x 400 chunks (256k chunks) in 3 s or less, and
1024 x 10 x 100 (1M chunks) in 15 s or less, peak RSS 1.5 GiB or less.
A "chunk" is one buffer's trip through the pipeline: its gen, put, get and
write records, four hooked calls.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from writerprof.run.load import CHUNK_DTYPE
from writerprof.synthetic import Scenario, write_run

SHAPES = {"64x10x400": (3.0,), "1024x10x100": (15.0,)}
RSS_TARGET_GIB = 1.5
RANKS_PER_HOST = 8  # an 8-rank client, as the benchmark runs


def writerprof() -> list[str]:
    script = Path(sys.executable).with_name("writerprof")
    return [str(script)] if script.exists() else [sys.executable, "-m", "writerprof"]


def shape(text: str) -> tuple[int, int, int]:
    ranks, saves, chunks = (int(x) for x in text.split("x"))
    return ranks, saves, chunks


def report_once(run: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in GiB and output bytes of one `report --json`."""
    with tempfile.TemporaryFile() as out:
        t0 = time.perf_counter()
        child = subprocess.Popen(writerprof() + ["report", "--json", str(run)], stdout=out)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            raise SystemExit(f"writerprof report exited {child.returncode}")
        return wall, usage.ru_maxrss / 2**20, out.tell()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", action="append", metavar="RANKSxSAVESxCHUNKS",
                        help="run shape (repeatable; default: 64x10x400 and 1024x10x100)")
    parser.add_argument("--repeat", type=int, default=3, help="reports per shape (default: 3)")
    args = parser.parse_args()
    shapes = args.shape or list(SHAPES)
    print(f"writerprof report --json on synthetic runs ({RANKS_PER_HOST} ranks a host; best and worst of "
          f"{args.repeat}); peak RSS target {RSS_TARGET_GIB} GiB")
    print(f"{'shape':<14} {'chunks':>9} {'records':>9} {'run dir':>9} {'write':>7} {'report best':>11} "
          f"{'worst':>7} {'target':>7} {'peak RSS':>9} {'json':>8}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="writerprof-scale-") as tmp:
        for name in shapes:
            ranks, saves, chunks = shape(name)
            scenario = Scenario(hosts=max(1, ranks // RANKS_PER_HOST), ranks_per_host=min(ranks, RANKS_PER_HOST),
                                saves=saves, chunks_per_save=chunks, chunk_size=1 << 20, write_s=0.002,
                                gen_s=0.001, fsync_s=0.05, jitter=0.1)
            run = Path(tmp) / name
            t0 = time.perf_counter()
            write_run(run, scenario)
            made = time.perf_counter() - t0
            size = sum(f.stat().st_size for f in run.rglob("*") if f.is_file())
            records = sum(f.stat().st_size for f in run.rglob("*.chunks.bin")) // CHUNK_DTYPE.itemsize
            results = [report_once(run) for _ in range(args.repeat)]
            walls = sorted(r[0] for r in results)
            rss = max(r[1] for r in results)
            target = SHAPES.get(name, (None,))[0]
            ok = (target is None or walls[0] <= target) and rss <= RSS_TARGET_GIB
            failed |= not ok
            print(f"{name:<14} {ranks * saves * chunks:>9} {records:>9} {size / 2**20:>7.0f}Mi {made:>6.1f}s "
                  f"{walls[0]:>10.2f}s {walls[-1]:>6.2f}s {(f'{target:.0f}s' if target else '-'):>7} "
                  f"{rss:>7.2f}Gi {results[0][2] / 2**20:>6.1f}Mi{'' if ok else '  MISSED'}")
    print(f"(this machine: {os.cpu_count()} CPUs; {resource.getpagesize()} B pages)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
