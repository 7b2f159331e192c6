"""Hooked calls inside hooked calls (analysis/nesting.py): a close with an
fsync inside is counted once, its own time less the fsync's."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import nesting


def records(*rows):
    """(proc, tid, depth, start_ns, end_ns) rows, in the order the probe writes them (by end)."""
    rows = sorted(rows, key=lambda r: r[4])
    return {name: np.array([r[i] for r in rows], dtype=np.int64)
            for i, name in enumerate(("proc", "tid", "depth", "start_ns", "end_ns"))}


def test_a_call_inside_another_has_it_as_parent_and_only_on_its_own_thread():
    c = records((0, 1, 0, 100, 200),  # close
                (0, 1, 1, 120, 180),  # fsync inside it
                (0, 2, 1, 130, 140),  # another thread's depth-1 call: not inside the close
                (1, 1, 1, 150, 160),  # another process's
                (0, 1, 0, 300, 400))  # a later call
    parent = nesting.parents(c)
    by_start = {int(s): int(p) for s, p in zip(c["start_ns"], parent)}
    close = int(np.flatnonzero(c["start_ns"] == 100)[0])
    assert by_start == {100: -1, 120: close, 130: -1, 150: -1, 300: -1}
    own = dict(zip(c["start_ns"].tolist(), nesting.own_ns(c, parent).tolist()))
    assert own[100] == 40 and own[120] == 60 and own[300] == 100


def test_three_levels_and_siblings():
    c = records((0, 1, 0, 0, 1000), (0, 1, 1, 100, 400), (0, 1, 2, 150, 250), (0, 1, 1, 500, 900))
    own = dict(zip(c["start_ns"].tolist(), nesting.own_ns(c).tolist()))
    assert own == {0: 1000 - 300 - 400, 100: 300 - 100, 150: 100, 500: 400}


def test_own_spans_cut_the_nested_calls_out():
    c = records((0, 1, 0, 100, 200), (0, 1, 1, 120, 150), (0, 1, 1, 160, 170), (0, 1, 0, 300, 400))
    parent = nesting.parents(c)
    outer = np.flatnonzero(c["depth"] == 0)
    start, end = nesting.own_spans(c, outer, parent)
    assert list(zip(start.tolist(), end.tolist())) == [(100, 120), (150, 160), (170, 200), (300, 400)]
    inner = np.flatnonzero(c["depth"] == 1)
    start, end = nesting.own_spans(c, inner, parent)
    assert list(zip(start.tolist(), end.tolist())) == [(120, 150), (160, 170)]


def test_no_nesting_changes_nothing():
    c = records((0, 1, 1, 0, 10), (0, 1, 1, 20, 35))  # depth 1 with its parent never recorded (os._exit)
    assert nesting.parents(c).tolist() == [-1, -1]
    assert nesting.own_ns(c).tolist() == [10, 15]
