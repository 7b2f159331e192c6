"""The compiled interval kernels (writerprof/analysis/native/kernels.c) against
their definitions written out in plain Python, on intervals and times of
every arrangement: touching, nested, overlapping, times on the edges, in
order and out of it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from writerprof.analysis import kernels, threads
from writerprof.errors import WriterprofError

times = st.integers(min_value=-50, max_value=50)


@st.composite
def disjoint(draw):
    """Sorted, disjoint intervals (some touching, some empty), as two arrays."""
    edges = sorted(draw(st.lists(times, max_size=12)))
    edges = edges[: len(edges) // 2 * 2]
    return np.array(edges[0::2], dtype=np.int64), np.array(edges[1::2], dtype=np.int64)


def inside_by_definition(starts, ends, t) -> int:
    """The time of [start, end) intervals before t, one by one."""
    return sum(max(0, min(end, t) - start) for start, end in zip(starts.tolist(), ends.tolist()))


@given(disjoint(), st.lists(times, max_size=12), st.booleans())
@settings(max_examples=400, deadline=None)
def test_time_inside_is_the_time_of_the_intervals_before_each_time(intervals, queries, in_order):
    starts, ends = intervals
    t = np.array(sorted(queries) if in_order else queries, dtype=np.int64)
    expected = [inside_by_definition(starts, ends, x) for x in t.tolist()]
    assert kernels.time_inside(starts, ends, t).tolist() == expected
    assert threads.time_inside(starts, ends, t).tolist() == expected


def test_time_inside_gallops_over_many_intervals_and_searches_back_for_an_earlier_time():
    starts = np.arange(0, 10_000, 10, dtype=np.int64)
    ends = starts + 4
    t = np.array([3, 9_995, 15, 15, 9_999, 20_000, -5, 5_002], dtype=np.int64)
    assert kernels.time_inside(starts, ends, t).tolist() == [3, 4000, 8, 8, 4000, 4000, 0, 2002]


def union_by_definition(starts, ends) -> list[tuple[int, int]]:
    """In order of start (stably): a new interval where one starts after all before it ended."""
    out = []
    for start, end in sorted(zip(starts.tolist(), ends.tolist()), key=lambda pair: pair[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


@given(st.lists(st.tuples(times, st.integers(min_value=0, max_value=20)), max_size=12))
@settings(max_examples=400, deadline=None)
def test_merged_is_the_union_in_order_of_start(pairs):
    starts = np.array([s for s, _ in pairs], dtype=np.int64)
    ends = np.array([s + length for s, length in pairs], dtype=np.int64)
    order = np.argsort(starts, kind="stable")
    expected = union_by_definition(starts, ends)
    for found in (kernels.merged(starts[order], ends[order]), kernels.merged(starts, ends, order)):
        assert list(zip(*(a.tolist() for a in found))) == expected
    if (np.diff(starts) >= 0).all() and (starts[1:] >= ends[:-1]).all():  # disjoint already: as given
        assert [a.tolist() for a in threads.merged(starts, ends)] == [starts.tolist(), ends.tolist()]
    else:
        assert list(zip(*(a.tolist() for a in threads.merged(starts, ends)))) == expected


@pytest.mark.parametrize("times", [np.array([2.5]), np.array([2**63], dtype=np.uint64)], ids=["float", "uint64"])
def test_times_int64_cannot_hold_are_refused_not_cut_or_wrapped(times):
    with pytest.raises(TypeError, match="integer times"):
        kernels.time_inside(np.array([0]), np.array([10]), times)
    assert kernels.time_inside(np.array([0], np.int32), np.array([10], np.uint32), np.array([], float)).tolist() == []


def test_a_missing_library_says_how_to_build_it(monkeypatch):
    monkeypatch.setattr(kernels, "LIBRARY", "libwriterprof_kernels_missing.so")
    monkeypatch.setattr(kernels, "_loaded", [])
    with pytest.raises(WriterprofError, match=r"pip install \."):
        kernels.time_inside(np.array([0]), np.array([10]), np.array([5]))
