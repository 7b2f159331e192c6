"""How much the two sides of a comparison vary by themselves, and whether
that is enough to hide a difference of the size found.

The unit is the repeat when both sides have several runs (contrast's
repeats, or `compare A1 A2 -- B1 B2`), else the run. Each side's spread is
the coefficient of variation of its units' throughput (a side of one run:
of its saves'), with its min and max.

A run's mean save time moves from run to run with what carries over between
runs (the page cache, the device's state) as much as with the saves' own
variation, and one run a side shows nothing of the first: a side of one run
is taken to vary from run to run as much as one of its saves varies within
it (run_sd: the standard deviation of its saves about the mean of their
size, so that saves of different sizes add nothing; a part of the save at
least as much, relative to its mean, as the whole save), and by at least
RUN_CV_FLOOR of its mean save time. Its intervals
(run_intervals) are the difference ± z * sqrt(sd_A² / runs_A + sd_B² / runs_B),
a side of several runs bringing the standard deviation of its runs' means.

The repeats (or runs) a side needs to resolve an effect d at the observed
spread sd (the sides' pooled) are the usual two-sample count for a 95%
two-sided test with 80% power:

    n = 2 * ((Z + Z_POWER) * sd / d) ** 2      (Z = 1.96, Z_POWER = 0.84)

which is ((2 * 1.96 * sd) / d) ** 2 within 2%. Over repeats the spread hides
the effect when n exceeds the repeats each side has; with one run a side,
when the difference's interval includes zero.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from writerprof.analysis.ending import complete
from writerprof.analysis.intervals import excludes_zero

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes import Noise, Spread

Z = 1.96  # 95%, two-sided
Z_POWER = 0.84  # 80% power
# A side of one run varies from run to run by at least this share of its mean
# save time, however steady its saves are within it: other programs' load
# changes between runs and a run's saves all feel it. Measured: the
# throughput's coefficient of variation over the repeats of 60 contrast sides
# recorded on this project's shared 2-CPU machine, quartiles 0.077, 0.148 and
# 0.296; two fork runs of the same saves differed by 29% under such load.
RUN_CV_FLOOR = 0.10


def needed(sd: float, effect: float, z: float = Z) -> int | None:
    """Units per side to resolve an effect of this size at this spread
    (None: no effect to resolve); z: the interval's (a Bonferroni one's for a
    part read with others)."""
    if not effect:
        return None
    return max(2, math.ceil(2 * ((z + Z_POWER) * sd / effect) ** 2))


def spread(rates: list[float | None], means: list[float]) -> Spread:
    """rates: each unit's throughput (GiB/s); means: each unit's mean save time."""
    known = np.array([r for r in rates if r is not None], dtype=float)
    cv = float(known.std(ddof=1) / known.mean()) if len(known) > 1 and known.mean() else None
    return {"count": len(means), "gib_s": [float(r) for r in known],
            "cv": cv, "min_gib_s": float(known.min()) if len(known) else None,
            "max_gib_s": float(known.max()) if len(known) else None,
            "sd_s": float(np.std(means, ddof=1)) if len(means) > 1 else None}


def units(summaries: list[dict], unit: str) -> tuple[list[float | None], list[float]]:
    """A side's units (its repeats, or its saves pooled): their throughputs and mean save times."""
    if unit == "repeat":
        return ([s["throughput"]["gib_s"] for s in summaries],
                [s["throughput"]["mean_save_s"] or 0.0 for s in summaries])
    saves = [s for summary in summaries for s in complete(summary["saves"])]
    return [s["gib_s"] for s in saves], [s["duration_s"] for s in saves]


def run_sd(runs: list[np.ndarray], sizes: list[np.ndarray], whole: int) -> np.ndarray:
    """One side's run-to-run standard deviation of each column's per-save
    mean (nan: nothing to tell it by). runs: one (saves x columns) array per
    run; sizes: each run's saves' bytes; whole: the column of the save's
    time. Several runs: the standard deviation of their means. One run: that
    of its saves about the mean of their size (each size's squared deviations
    pooled over the saves less one a size), at least RUN_CV_FLOOR of the
    whole save's mean, and for a part at least the whole save's relative
    spread times the part's mean: what carries over
    between runs slows every part of a save, and a part steady within a run
    (a final fsync, to the millisecond) still moves with its run."""
    if len(runs) > 1:
        return np.std([r.mean(axis=0) for r in runs], axis=0, ddof=1)
    x, size = runs[0], np.asarray(sizes[0])
    squares, freedom = np.zeros(x.shape[1]), 0
    for one in np.unique(size):
        same = x[size == one]
        squares += ((same - same.mean(axis=0)) ** 2).sum(axis=0)
        freedom += len(same) - 1
    if not freedom:
        return np.full(x.shape[1], np.nan)
    sd, mean = np.sqrt(squares / freedom), x.mean(axis=0)
    relative = max(sd[whole] / mean[whole], RUN_CV_FLOOR) if mean[whole] else 0.0
    return np.maximum(sd, relative * np.abs(mean))


def run_intervals(a: list[np.ndarray], a_sizes: list[np.ndarray], b: list[np.ndarray],
                  b_sizes: list[np.ndarray], whole: int, together: list[int] | None = None) -> list[dict | None]:
    """Per column, the 95% interval of B's per-save mean minus A's from the
    sides' run-to-run spread (run_sd; whole: the column of the save's
    time): {"ci95_s", "z", "sd_a_s", "sd_b_s"}; None where a side's spread
    cannot be told. together: the columns read at once (the parts of one
    difference): theirs hold at 95% together, Bonferroni's over the ones
    that vary, as in intervals.difference_intervals."""
    a, a_sizes = _with_saves(a, a_sizes)
    b, b_sizes = _with_saves(b, b_sizes)
    diff = np.concatenate(b).mean(axis=0) - np.concatenate(a).mean(axis=0)
    sd_a, sd_b = run_sd(a, a_sizes, whole), run_sd(b, b_sizes, whole)
    half = np.sqrt(sd_a ** 2 / len(a) + sd_b ** 2 / len(b))
    z = np.full(len(diff), Z)
    varying = [i for i in together or [] if half[i] > 0]  # a constant column tests nothing
    if len(varying) > 1:
        z[varying] = NormalDist().inv_cdf(1 - 0.05 / 2 / len(varying))
    half *= z
    return [None if math.isnan(h) else {"ci95_s": (float(d - h), float(d + h)), "z": float(zz),
                                        "sd_a_s": float(sa), "sd_b_s": float(sb)}
            for d, h, zz, sa, sb in zip(diff, half, z, sd_a, sd_b)]


def _with_saves(runs: list[np.ndarray], sizes: list[np.ndarray]) -> tuple[list, list]:
    kept = [(r, size) for r, size in zip(runs, sizes) if len(r)]
    return [r for r, _ in kept], [size for _, size in kept]


def pooled(sds) -> float | None:
    """The sides' standard deviations pooled (their root mean square); None if neither is known."""
    known = [sd for sd in sds if sd is not None]
    return float(np.sqrt(np.mean(np.square(known)))) if known else None


def noise(a: list[dict], b: list[dict], effect: float, names: tuple[str, str],
          total: dict | None = None) -> Noise:
    """a, b: each side's run summaries; effect: B's mean save time minus A's;
    total: run_intervals' entry of the save time, where a side has one run."""
    unit = "repeat" if len(a) > 1 and len(b) > 1 else "run"
    sides = [spread(*units(s, "repeat" if len(s) > 1 else "save")) for s in (a, b)]
    if unit == "run":  # the sides' run-to-run spread, a side of one run's from its saves
        for side, key in zip(sides, ("sd_a_s", "sd_b_s")):
            side["sd_s"] = total[key] if total is not None else None
    sd = pooled(s["sd_s"] for s in sides)
    need = needed(sd, effect) if sd is not None else None
    if unit == "repeat":
        have = min(sides[0]["count"], sides[1]["count"])
        hides = need is not None and need > have
    else:
        have = min(len(a), len(b))
        hides = total is None or not excludes_zero(total["ci95_s"])
    message = None
    if hides and unit == "repeat":
        message = (f"{_said(names[0], unit, sides[0])}; {_said(names[1], unit, sides[1])}: at this spread "
                   f"(sd {sd:.3f} s between the repeats' mean save times) a difference of {abs(effect):.3f} s "
                   f"per save needs about {need} repeats of each to resolve (95%, 80% power); there are {have}")
    elif hides and total is None:
        message = ("more runs are needed: with one run a side, no two saves of one size on a side tell how "
                   "much a run varies; record several runs a side (compare A1 A2 -- B1 B2)")
    elif hides:
        lo, hi = total["ci95_s"]
        message = (f"more runs are needed: {abs(effect):.3f} s per save is within the run-to-run spread "
                   f"(95% interval {lo:+.3f} to {hi:+.3f} s; sd {sd:.3f} s from run to run, a single run's "
                   f"from its saves of one size); about {need} runs a side would resolve it (95%, 80% power)")
    return {"unit": unit, "a": sides[0], "b": sides[1], "sd_s": sd, "effect_s": effect, "have": have,
            "needed": need, "hides": hides, "message": message}


def _said(name: str, unit: str, side: Spread) -> str:
    if side["cv"] is None:
        return f"{name}: {side['count']} {unit}{'s' * (side['count'] != 1)}, no spread to measure"
    return (f"{name} {unit}s ranged {side['min_gib_s']:.2f}–{side['max_gib_s']:.2f} GiB/s "
            f"(CV {side['cv']:.0%}, {side['count']} {unit}s)")
