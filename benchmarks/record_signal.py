"""How fast `writerprof record` does its own part of an end a signal asks
for: from the SIGTERM sent to record until run.json holds it (what a SIGKILL
a second later can no longer take away), while CMD, which ignores SIGTERM
for its grace period, goes on. Under Slurm that second is all record gets.

    python benchmarks/record_signal.py [--repeat N] [--grace S]

Prints each repeat's latency and the median and worst, in ms."""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import writerprof

# CMD: ready, then SIGTERM ignored for its grace period, then gone.
CMD = ("import signal, sys, time\nsignal.signal(signal.SIGTERM, lambda *_: None)\nprint('ready', flush=True)\n"
       "time.sleep(float(sys.argv[1]))\n")


def once(directory: Path, grace_s: float) -> float:
    run = directory / f"run-{time.monotonic_ns()}"
    recorder = subprocess.Popen([*writerprof(), "record", "-o", str(run), "--", sys.executable, "-c", CMD,
                                 str(grace_s)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert recorder.stdout.readline() == "ready\n"
        sent = time.monotonic()
        recorder.send_signal(signal.SIGTERM)
        while True:
            try:
                if json.loads((run / "run.json").read_text()).get("signals"):
                    return time.monotonic() - sent
            except (OSError, ValueError):
                pass  # (replaced meanwhile)
            if time.monotonic() - sent > grace_s:
                raise SystemExit("record never wrote the signal into run.json")
            time.sleep(0.0005)
    finally:
        recorder.wait(timeout=grace_s + 60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--grace", type=float, default=1.0, help="CMD's time after the SIGTERM (s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        latencies = [once(Path(directory), args.grace) * 1e3 for _ in range(args.repeat)]
    print("SIGTERM to run.json holding it, ms: " + " ".join(f"{v:.1f}" for v in latencies))
    print(f"median {statistics.median(latencies):.1f} ms, worst {max(latencies):.1f} ms "
          f"({args.repeat} recordings, {os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
