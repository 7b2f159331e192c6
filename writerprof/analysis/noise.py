"""How much the two sides of a comparison vary by themselves, and whether
that is enough to hide a difference of the size found.

The unit is the repeat when both sides have several (contrast), else the save
(two single runs). Each side's spread is the coefficient of variation of the
units' throughput, with its min and max. The repeats (or saves) a side needs
to resolve an effect d at the observed spread sd (of the units' mean save
time, pooled over the two sides) are the usual two-sample count for a 95%
two-sided test with 80% power:

    n = 2 * ((Z + Z_POWER) * sd / d) ** 2      (Z = 1.96, Z_POWER = 0.84)

which is ((2 * 1.96 * sd) / d) ** 2 within 2%. The spread hides the effect
when n exceeds the units each side has.
"""

from __future__ import annotations

import math

import numpy as np

from writerprof.analysis.shapes import Noise, Spread

Z = 1.96  # 95%, two-sided
Z_POWER = 0.84  # 80% power


def needed(sd: float, effect: float) -> int | None:
    """Units per side to resolve an effect of this size at this spread
    (None: no effect to resolve)."""
    if not effect:
        return None
    return max(2, math.ceil(2 * ((Z + Z_POWER) * sd / effect) ** 2))


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
    saves = [s for summary in summaries for s in summary["saves"]]
    return [s["gib_s"] for s in saves], [s["duration_s"] for s in saves]


def noise(a: list[dict], b: list[dict], effect: float, names: tuple[str, str]) -> Noise:
    """a, b: each side's run summaries; effect: B's mean save time minus A's."""
    unit = "repeat" if len(a) > 1 and len(b) > 1 else "save"
    (rates_a, means_a), (rates_b, means_b) = units(a, unit), units(b, unit)
    side_a, side_b = spread(rates_a, means_a), spread(rates_b, means_b)
    sds = [s["sd_s"] for s in (side_a, side_b) if s["sd_s"] is not None]
    sd = float(np.sqrt(np.mean(np.square(sds)))) if sds else None
    need = needed(sd, effect) if sd is not None else None
    have = min(side_a["count"], side_b["count"])
    hides = need is not None and need > have
    message = None
    if hides:
        message = (f"{_said(names[0], unit, side_a)}; {_said(names[1], unit, side_b)}: at this spread "
                   f"(sd {sd:.3f} s between the {unit}s' {'mean save times' if unit == 'repeat' else 'times'}) a difference of {abs(effect):.3f} s per save needs "
                   f"about {need} {unit}s of each to resolve (95%, 80% power); there are {have}")
    return {"unit": unit, "a": side_a, "b": side_b, "sd_s": sd, "effect_s": effect, "have": have,
            "needed": need, "hides": hides, "message": message}


def _said(name: str, unit: str, side: Spread) -> str:
    if side["cv"] is None:
        return f"{name}: {side['count']} {unit}{'s' * (side['count'] != 1)}, no spread to measure"
    return (f"{name} {unit}s ranged {side['min_gib_s']:.2f}–{side['max_gib_s']:.2f} GiB/s "
            f"(CV {side['cv']:.0%}, {side['count']} {unit}s)")
