"""How long `writerprof report --json` takes, and how much memory, on large
runs: synthetic run directories (writerprof.synthetic) of many ranks, saves
and chunks, each reported by a fresh `writerprof report --json` process.

    python benchmarks/report_scale.py                 # the three shapes below
    python benchmarks/report_scale.py --quick         # small shapes: does it run, in seconds
    python benchmarks/report_scale.py --shape 8x10x100 --repeat 3
    python benchmarks/report_scale.py --shape 1024x10x100 --html   # report --html instead
    python benchmarks/report_scale.py --shape 1024x10x100 --baseline /opt/old/bin/writerprof

Targets (checked on the worst of the repeats, not the best): 64 ranks x 10
saves x 400 chunks (256k chunks) in 3 s or less; 1024 x 10 x 100 (1M chunks)
in 2 s or less; 1024 x 20 x 470 (9.6M chunks, a 1T-model checkpoint) in 15 s
or less; peak RSS 3 GiB or less. A "chunk" is one buffer's trip through the
pipeline: its gen, put, get and write records, four hooked calls.

Printed per shape: every report's wall seconds, the worst, the target, the
peak RSS (the child's ru_maxrss, from wait4) and its user + system CPU
seconds (steadier than wall time on a shared machine), and the limit they
are measured against: the best of 3 wall seconds to read the processes'
journals into numpy arrays in this process, from the page cache
(read_limit), and the worst as a multiple of it (x limit). --keep DIR
keeps the run directories there and reuses them in the next run (making the
10M one takes about a minute and 2 GiB of disk); a kept run is read once
before its reports, into the page cache as a run just made is. --html
times `report --html FILE` (the summary, the plots and the page) instead of
--json; its target is a minute on every shape, the plots drawn per (host,
role) group at scale.

--baseline CMD times another writerprof beside this one (CMD: its command,
split as a shell would, e.g. another environment's `bin/writerprof`, or
`env PYTHONPATH=/src/old python -m writerprof` for a checkout built in
place): its reports and this one's take turns on each shape, and its row
follows the shape's with the ratios of the medians (this / baseline). On a
machine whose speed varies from day to day, or from minute to minute, only
such turns compare two versions; figures from another day do not.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from writerprof.run.loader import CHUNK_DTYPE
from writerprof.synthetic import Scenario, write_run

from common import BASELINE_HELP, baseline, writerprof

SHAPES = {"64x10x400": 3.0, "1024x10x100": 2.0, "1024x20x470": 15.0}  # shape -> worst wall seconds
HTML_TARGET_S = 60.0  # report --html, any shape
QUICK = {"8x4x50": None, "16x4x100": None}
RSS_TARGET_GIB = 3.0
RANKS_PER_HOST = 8  # an 8-rank client, as the benchmark runs


def shape(text: str) -> tuple[int, int, int]:
    ranks, saves, chunks = (int(x) for x in text.split("x"))
    return ranks, saves, chunks


def report_once(run: Path, html: bool = False, command: list[str] | None = None) -> tuple[float, float, float, int]:
    """Wall seconds, peak RSS in GiB, CPU seconds and output bytes (the JSON,
    or the HTML file) of one `report --json` (or `report --html FILE`), by
    command (a writerprof; default: this environment's)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory(prefix="writerprof-html-") as tmp:
        page = Path(tmp) / "report.html"
        t0 = time.perf_counter()
        output = ["--html", str(page)] if html else ["--json"]
        child = subprocess.Popen((command or writerprof()) + ["report", *output, str(run)], stdout=out, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            err.seek(0)
            raise SystemExit(f"writerprof report exited {child.returncode}: {err.read().decode(errors='replace')}")
        size = page.stat().st_size if html else out.tell()
        return wall, usage.ru_maxrss / 2**20, usage.ru_utime + usage.ru_stime, size


def make_run(run: Path, ranks: int, saves: int, chunks: int) -> float:
    """Seconds to write the run (0 when a kept one is reused)."""
    scenario = Scenario(hosts=max(1, ranks // RANKS_PER_HOST), ranks_per_host=min(ranks, RANKS_PER_HOST),
                        saves=saves, chunks_per_save=chunks, chunk_size=1 << 20, write_s=0.002,
                        gen_s=0.001, fsync_s=0.05, jitter=0.1)
    if (run / "run.json").exists():
        _read_through(run)
        return 0.0
    t0 = time.perf_counter()
    write_run(run, scenario)
    return time.perf_counter() - t0


def read_limit(run: Path) -> float:
    """Wall seconds to read the run's journals into numpy arrays: the chunk
    records of every process into one array of CHUNK_DTYPE, the rest of
    every procs/ file (events, SHM and PLACEMENT records) into one of bytes.
    No report can load the run faster; parsing and analysis come on top."""
    t0 = time.perf_counter()
    files = [f for f in run.glob("hosts/*/procs/*") if f.is_file()]
    chunk_files = [f for f in files if f.name.endswith(".chunks.bin")]
    other = [f for f in files if not f.name.endswith(".chunks.bin")]
    records = np.empty(sum(f.stat().st_size for f in chunk_files) // CHUNK_DTYPE.itemsize, CHUNK_DTYPE)
    _read_into(chunk_files, records.view(np.uint8))
    _read_into(other, np.empty(sum(f.stat().st_size for f in other), np.uint8))
    return time.perf_counter() - t0


def _read_into(files: list[Path], out: np.ndarray) -> None:
    """The files one after another into out (bytes; a chunk file's whole records), each read straight into place."""
    at = 0
    for file in files:
        with open(file, "rb", buffering=0) as source:
            size = os.fstat(source.fileno()).st_size
            size -= size % (CHUNK_DTYPE.itemsize if file.name.endswith(".chunks.bin") else 1)
            at += source.readinto(memoryview(out[at:at + size]))


def _read_through(run: Path) -> None:
    """Every file of a kept run read once: into the page cache, where a run
    just made (or just recorded) is, so that no report of the repeats pays
    for reading it off the disk and the worst is writerprof's, not the disk's."""
    for file in run.rglob("*"):
        if file.is_file():
            with open(file, "rb", buffering=0) as source:
                while source.read(1 << 24):
                    pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", action="append", metavar="RANKSxSAVESxCHUNKS",
                        help="run shape (repeatable; default: 64x10x400, 1024x10x100 and 1024x20x470)")
    parser.add_argument("--quick", action="store_true", help="small shapes only (no targets): a check that it runs")
    parser.add_argument("--repeat", type=int, default=3, help="reports per shape (default: 3)")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the run directories in DIR (and reuse them)")
    parser.add_argument("--html", action="store_true",
                        help=f"time report --html FILE instead of --json (target {HTML_TARGET_S:.0f} s a shape)")
    parser.add_argument("--baseline", metavar="CMD", help=BASELINE_HELP)
    args = parser.parse_args()
    args.baseline = args.baseline and baseline(args.baseline)
    targets = QUICK if args.quick else SHAPES
    shapes = args.shape or list(targets)
    print(f"writerprof report {'--html' if args.html else '--json'} on synthetic runs ({RANKS_PER_HOST} ranks a host; every one of "
          f"{args.repeat} reports, the worst checked); peak RSS target {RSS_TARGET_GIB} GiB")
    print(f"{'shape':<12} {'chunks':>9} {'records':>9} {'run dir':>8} {'write':>6}  {'reports (wall s)':<22} "
          f"{'worst':>6} {'target':>6} {'peak RSS':>8} {'CPU s':>6} {'html' if args.html else 'json':>7} {'limit':>6} "
          f"{'x limit':>7}")
    failed = False
    with tempfile.TemporaryDirectory(prefix="writerprof-scale-") as tmp:
        root = args.keep or Path(tmp)
        for name in shapes:
            ranks, saves, chunks = shape(name)
            run = root / name
            made = make_run(run, ranks, saves, chunks)
            size = sum(f.stat().st_size for f in run.rglob("*") if f.is_file())
            records = sum(f.stat().st_size for f in run.rglob("*.chunks.bin")) // CHUNK_DTYPE.itemsize
            limit = min(read_limit(run) for _ in range(3))
            turns = [(report_once(run, args.html), args.baseline and report_once(run, args.html, args.baseline))
                     for _ in range(args.repeat)]
            results = [mine for mine, _ in turns]
            walls = [r[0] for r in results]
            worst, rss, cpu = max(walls), max(r[1] for r in results), max(r[2] for r in results)
            target = HTML_TARGET_S if args.html else targets.get(name, SHAPES.get(name))
            ok = (target is None or worst <= target) and rss <= RSS_TARGET_GIB
            failed |= not ok
            shown = f"{target:.0f}s" if target else "-"
            print(f"{name:<12} {ranks * saves * chunks:>9} {records:>9} {size / 2**20:>6.0f}Mi {made:>5.0f}s  "
                  f"{' '.join(f'{w:.2f}' for w in walls):<22} {worst:>5.2f}s {shown:>6} "
                  f"{rss:>6.2f}Gi {cpu:>6.1f} {results[0][3] / 2**20:>5.1f}Mi {limit:>5.2f}s {worst / limit:>6.1f}x"
                  f"{'' if ok else '  MISSED'}", flush=True)
            if args.baseline:
                theirs = [b for _, b in turns]
                them = [b[0] for b in theirs]
                print(f"{'  baseline':<12} {'':>9} {'':>9} {'':>8} {'':>6}  {' '.join(f'{w:.2f}' for w in them):<22} "
                      f"{max(them):>5.2f}s {'-':>6} {max(b[1] for b in theirs):>6.2f}Gi "
                      f"{max(b[2] for b in theirs):>6.1f} {theirs[0][3] / 2**20:>5.1f}Mi {limit:>5.2f}s "
                      f"{max(them) / limit:>6.1f}x  this / baseline: wall "
                      f"{statistics.median(walls) / statistics.median(them):.2f}, CPU "
                      f"{statistics.median(r[2] for r in results) / statistics.median(b[2] for b in theirs):.2f}"
                      f" (medians)", flush=True)
    print(f"(this machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; "
          f"{resource.getpagesize()} B pages)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
