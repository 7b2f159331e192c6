"""How long `writerprof contrast` takes with its defaults, and where the time goes.

    python benchmarks/contrast_time.py [--runs 1] [-- CMD ...]

Runs `writerprof contrast -o TMP` (with `-- CMD` when given: e.g. the default
reproducer at another --size) --runs times and prints, per run: the wall
time; the CPU seconds of contrast and everything under it; the recordings'
share (each recording's start to end, from its run.json) and contrast's own
(start-up, summaries, contrast.json, contrast.html: the rest); and the
verdict, which a faster default must not weaken. Then the worst wall time and
the load average. Target (issue 16): the default <= 40 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import children_cpu_s, writerprof

TARGET_S = 40.0


def recordings_s(out: Path) -> tuple[int, float]:
    """How many recordings, and their seconds from start to end."""
    spans = []
    for run in sorted((out / "runs").iterdir()):
        meta = json.loads((run / "run.json").read_text())
        spans.append((meta["ended_ns"] - meta["started_ns"]) / 1e9)
    return len(spans), sum(spans)


def one(command: list[str], scratch: str, index: int) -> float:
    out = Path(scratch) / f"contrast-{index}"
    cpu, t0 = children_cpu_s(), time.perf_counter()
    done = subprocess.run(writerprof() + ["contrast", "-o", str(out), *(["--", *command] if command else [])],
                          capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu_s() - cpu
    if done.returncode != 0:
        sys.exit(f"writerprof contrast failed ({done.returncode}):\n{done.stderr[-2000:]}")
    count, recorded = recordings_s(out)
    verdict = done.stdout[done.stdout.find("Verdict:"):].split("\n\n")[0]
    print(f"run {index}: {wall:.1f} s wall, {cpu:.1f} s CPU; {count} recordings {recorded:.1f} s "
          f"({100 * recorded / wall:.0f}%), contrast's own {wall - recorded:.1f} s; "
          f"load {os.getloadavg()[0]:.2f}\n  {verdict}", flush=True)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("command", nargs="*", help="the command to contrast, after -- (default: contrast's own)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="writerprof-contrast-time-") as scratch:
        walls = [one(args.command, scratch, i + 1) for i in range(args.runs)]
    worst = max(walls)
    print(f"contrast {'default' if not args.command else ' '.join(args.command)}: worst of {len(walls)} "
          f"{worst:.1f} s (target <= {TARGET_S:.0f} s: {'met' if worst <= TARGET_S else 'NOT met'}); "
          f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
