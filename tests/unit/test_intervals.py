"""The bootstrap intervals (analysis.intervals) and the noise arithmetic
(analysis.noise) on known cases."""

from __future__ import annotations

import numpy as np
import pytest

from writerprof.analysis import intervals, noise


def column(values) -> np.ndarray:
    return np.array(values, dtype=float).reshape(-1, 1)


def test_the_same_saves_give_the_same_interval_every_time():
    rng = np.random.default_rng(1)
    a, b = [column(rng.normal(1, 0.1, 8))], [column(rng.normal(1.2, 0.1, 8))]
    assert intervals.difference_intervals(a, b) == intervals.difference_intervals(a, b)


def test_constant_saves_have_a_zero_width_interval_at_their_difference():
    (ci,) = intervals.difference_intervals([column([1.0] * 5)], [column([1.5] * 5)])
    assert ci == pytest.approx((0.5, 0.5)) and intervals.excludes_zero(ci)


def test_one_save_a_side_has_no_interval():
    assert intervals.difference_intervals([column([1.0])], [column([2.0, 2.1])]) == [None]
    assert intervals.excludes_zero(None) is None


def test_identical_sides_straddle_zero_and_a_large_shift_does_not():
    values = list(np.linspace(0.8, 1.2, 10))
    (same,) = intervals.difference_intervals([column(values)], [column(values)])
    assert same[0] < 0 < same[1] and same[0] == pytest.approx(-same[1], abs=0.02)
    (shifted,) = intervals.difference_intervals([column(values)], [column([v + 1 for v in values])])
    assert intervals.excludes_zero(shifted) and shifted[0] == pytest.approx(1 - 1.96 * np.std(values, ddof=1)
                                                                           * np.sqrt(2 / 10), abs=0.03)


def test_the_resampled_means_spread_as_the_mean_does_with_the_small_sample_correction():
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    means = intervals.resampled_means([column(x)], resamples=20000)[:, 0]
    assert means.std() == pytest.approx(x.std(ddof=1) / np.sqrt(len(x)), rel=0.05)
    assert means.mean() == pytest.approx(x.mean(), abs=0.02)


def test_repeats_that_disagree_widen_the_interval_beyond_their_saves_spread():
    # Two repeats, each of steady saves, one 1 s slower: the repeats are the noise.
    repeats = [column([1.0, 1.01, 0.99]), column([2.0, 2.01, 1.99])]
    means = intervals.resampled_means(repeats)[:, 0]
    pooled = intervals.resampled_means([np.concatenate(repeats)])[:, 0]
    assert means.std() > pooled.std() and means.min() < 1.1 and means.max() > 1.9


def test_the_repeats_needed_follow_the_two_sample_formula():
    # n = 2 * ((1.96 + 0.84) * sd / d) ** 2
    assert noise.needed(1.0, 1.0) == 16
    assert noise.needed(0.1, 1.0) == 2  # never fewer than two
    assert noise.needed(0.5, -0.25) == 63 and noise.needed(1.0, 0.0) is None
    # Within 2% of ((2 * 1.96 * sd) / d) ** 2 before rounding up.
    assert noise.needed(3.0, 1.0) == pytest.approx((2 * 1.96 * 3.0) ** 2, rel=0.03)


def test_a_spread_is_the_cv_and_range_of_the_units_throughput():
    spread = noise.spread([1.0, 2.0, 3.0], [3.0, 1.5, 1.0])
    assert spread["count"] == 3 and spread["cv"] == pytest.approx(0.5)
    assert (spread["min_gib_s"], spread["max_gib_s"]) == (1.0, 3.0)
    assert spread["sd_s"] == pytest.approx(np.std([3.0, 1.5, 1.0], ddof=1))


def test_columns_read_together_hold_at_once_and_a_constant_one_keeps_its_value():
    # Twenty parts of two equal sides: alone, about one in twenty is clear of zero by chance.
    rng = np.random.default_rng(3)
    a, b = [rng.normal(1, 0.1, (8, 20))], [rng.normal(1, 0.1, (8, 20))]
    a[0][:, 0], b[0][:, 0] = 1.0, 1.5  # a part that never varies: no test, its value
    alone = intervals.difference_intervals(a, b)
    together = intervals.difference_intervals(a, b, together=list(range(20)))
    assert together[0] == alone[0] == pytest.approx((0.5, 0.5))
    assert sum(intervals.excludes_zero(ci) for ci in alone[1:]) >= 1
    assert not any(intervals.excludes_zero(ci) for ci in together[1:])
    assert all(t[0] <= s[0] and s[1] <= t[1] for s, t in zip(alone[1:], together[1:]))


def test_a_median_s_interval_is_two_order_statistics_at_their_binomial_coverage():
    from writerprof.analysis.intervals import median_interval

    # 10 values: the 2nd smallest and 2nd largest, 1 - 2 (1 + 10) / 2^10 of the time around the median.
    assert median_interval(range(10)) == (1.0, 8.0, 1 - 2 * 11 / 1024)
    assert median_interval([1.0] * 9 + [100.0])[:2] == (1.0, 1.0)  # one outlier stays out
    # Too few values for 95%: their range, at the coverage it has.
    assert median_interval([0.3, 0.1, 0.2]) == (0.1, 0.3, 0.75)
    assert median_interval([5]) == (5.0, 5.0, 0.0)
    low, high, coverage = median_interval(range(200))
    assert coverage >= 0.95 and 85 <= low < 99.5 < high <= 114
