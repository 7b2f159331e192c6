"""What every benchmark here needs: the writerprof to run (and another to
time beside it), and the CPU seconds its children used. The scripts run as
`python benchmarks/NAME.py`, so this directory is on their path."""

from __future__ import annotations

import os
import random
import resource
import shlex
import statistics
import subprocess
import sys


def writerprof() -> list[str]:
    """The console script beside this interpreter, else `python -m writerprof`."""
    script = os.path.join(os.path.dirname(sys.executable), "writerprof")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "writerprof"]


BASELINE_HELP = ("another writerprof to time in turns with this one: its command, split as a shell would "
                 "(another environment's bin/writerprof; `env PYTHONPATH=SRC python -m writerprof` for a "
                 "checkout built in place)")


def baseline(text: str) -> list[str]:
    """A --baseline's command, checked: it must answer --version (it says
    which writerprof it is); else the benchmark exits with one line."""
    command = shlex.split(text)
    try:
        done = subprocess.run(command + ["--version"], capture_output=True, text=True, timeout=60)
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        raise SystemExit(f"--baseline {text}: {exc}") from None
    if done.returncode:
        raise SystemExit(f"--baseline {text}: --version exited {done.returncode}: "
                         f"{(done.stderr.strip().splitlines() or ['(no message)'])[-1]}")
    print(f"baseline: {text} ({done.stdout.strip()})", flush=True)
    return command


def children_cpu_s() -> float:
    """User + system seconds of the children waited for so far."""
    user, system, _ = children_usage()
    return user + system


def children_usage() -> tuple[float, float, int]:
    """User seconds, system seconds and minor page faults of the children waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime, usage.ru_minflt


def bootstrap_median(values: list[float], resamples: int = 10_000, seed: int = 31) -> tuple[float, float]:
    """The 95% interval of the median of values, by the percentile bootstrap:
    the median of as many draws with replacement, resampled many times. A
    fixed seed, so that the same figures print the same interval."""
    if len(values) < 2:
        return values[0], values[0]
    draw = random.Random(seed)
    medians = sorted(statistics.median(draw.choices(values, k=len(values))) for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]
