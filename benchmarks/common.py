"""What every benchmark here needs: the writerprof to run, and the CPU
seconds its children used. The scripts run as `python benchmarks/NAME.py`,
so this directory is on their path."""

from __future__ import annotations

import os
import random
import resource
import statistics
import sys


def writerprof() -> list[str]:
    """The console script beside this interpreter, else `python -m writerprof`."""
    script = os.path.join(os.path.dirname(sys.executable), "writerprof")
    return [script] if os.path.exists(script) else [sys.executable, "-m", "writerprof"]


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
