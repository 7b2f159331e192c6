"""95% intervals for the difference of two sides' per-save means, by the
bootstrap: each side is resampled on its own (its repeats with replacement,
then the saves within each repeat drawn with replacement), the per-save mean
of every column recomputed, and B's minus A's taken; the interval is the 2.5th
to 97.5th percentile of those differences.

A percentile bootstrap of n values is too narrow for small n (it resamples
the values' spread with divisor n, not n - 1): each side's resampled means are
spread about its mean by sqrt(n / (n - 1)) (n: the side's saves, or its
repeats when it has several), the usual correction, so that three saves per
side do not look surer than they are.

The seed is fixed: the same runs give the same intervals every time.
"""

from __future__ import annotations

from math import comb

import numpy as np

SEED = 14
RESAMPLES = 2000
_BATCH = 250  # resamples drawn at once (memory: batch x saves x columns)


def resampled_means(groups: list[np.ndarray], resamples: int = RESAMPLES,
                    rng: np.random.Generator | None = None) -> np.ndarray:
    """groups: one (saves x columns) array per repeat. The pooled per-save
    mean of every column in each of `resamples` bootstrap resamples
    (resamples x columns), widened by the small-sample correction."""
    rng = rng if rng is not None else np.random.default_rng(SEED)
    groups = [np.asarray(g, dtype=float) for g in groups if len(g)]
    if not groups:
        raise ValueError("no saves to resample")
    columns = groups[0].shape[1]
    sizes = np.array([len(g) for g in groups])
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pooled = np.concatenate(groups)
    point = pooled.mean(axis=0)
    out = np.empty((resamples, columns))
    widest = int(sizes.max())
    for start in range(0, resamples, _BATCH):
        n = min(_BATCH, resamples - start)
        picked = rng.integers(0, len(groups), (n, len(groups)))  # repeats, with replacement
        size, offset = sizes[picked], offsets[picked]
        within = (rng.random((n, len(groups), widest)) * size[..., None]).astype(int)
        taken = np.arange(widest) < size[..., None]  # a repeat of fewer saves uses fewer draws
        rows = np.where(taken, offset[..., None] + within, 0)
        sums = (pooled[rows] * taken[..., None]).sum(axis=(1, 2))
        out[start:start + n] = sums / taken.sum(axis=(1, 2))[:, None]
    units = len(groups) if len(groups) > 1 else len(pooled)
    return point + (out - point) * np.sqrt(units / (units - 1)) if units > 1 else out


def difference_intervals(a: list[np.ndarray], b: list[np.ndarray], level: float = 0.95,
                         resamples: int = RESAMPLES, seed: int = SEED,
                         together: list[int] | None = None) -> list[tuple[float, float] | None]:
    """Per column, the interval of B's per-save mean minus A's; None for every
    column when a side has a single save (nothing to resample).

    together: columns whose intervals must hold at `level` all at once (the
    parts of one difference, each read as a cause or not): theirs are
    Bonferroni's, each at 1 - (1 - level) / m for the m of them that vary.
    Else one column in twenty of a comparison of two equal sides would come
    out clear of zero."""
    if sum(len(g) for g in a) < 2 or sum(len(g) for g in b) < 2:
        columns = np.asarray(a[0] if a else b[0]).shape[1]
        return [None] * columns
    rng = np.random.default_rng(seed)
    diffs = resampled_means(b, resamples, rng) - resampled_means(a, resamples, rng)
    out = _percentiles(diffs, level)
    varying = [i for i in together or [] if out[i][0] != out[i][1]]  # a constant column tests nothing
    if len(varying) > 1:
        joint = _percentiles(diffs[:, varying], 1 - (1 - level) / len(varying))
        for i, interval in zip(varying, joint):
            out[i] = interval
    return out


def _percentiles(diffs: np.ndarray, level: float) -> list[tuple[float, float]]:
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(diffs, [tail, 100 - tail], axis=0)
    return [(float(x), float(y)) for x, y in zip(lo, hi)]


def excludes_zero(interval: tuple[float, float] | None) -> bool | None:
    """Whether the interval lies wholly on one side of zero (None: no interval)."""
    if interval is None:
        return None
    return interval[0] > 0 or interval[1] < 0


def median_interval(values, level: float = 0.95) -> tuple[float, float, float]:
    """The median's distribution-free interval, (low, high, coverage): the
    j-th smallest and j-th largest of the n values, the median between them
    with probability 1 - 2 P(Bin(n, 1/2) <= j - 1) whatever the values'
    distribution, for the largest j that keeps that at `level` or more. Too
    few values for `level` (under 6 at 95%) give the whole range, at the
    coverage it has. One outlier moves neither end far, as it moves a mean."""
    x = sorted(float(v) for v in values)
    n = len(x)
    if not n:
        raise ValueError("no values for a median")
    j, below = 1, 1 / 2 ** n  # below: P(Bin(n, 1/2) <= j - 1)
    while 2 * (j + 1) <= n + 1:
        wider = below + comb(n, j) / 2 ** n
        if wider > (1 - level) / 2:
            break
        j, below = j + 1, wider
    return x[j - 1], x[n - j], 1 - 2 * below
