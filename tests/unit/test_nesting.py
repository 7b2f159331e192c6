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


def test_parents_are_those_of_the_definition_on_many_threads_levels_and_ties():
    # Nested calls made by a recursive walk (each thread's calls nest properly,
    # some starting together with their outer call), compared with the
    # definition read directly: the last call one level shallower on the
    # thread begun at or before it (the outer first on a tie), if it spans it.
    rng = np.random.default_rng(3)
    rows = []

    def calls(proc, tid, depth, start, end):
        t = start
        while t < end and len(rows) < 4000:
            a = t if rng.random() < 0.3 else t + int(rng.integers(0, 5))
            b = min(end, a + int(rng.integers(1, 60)))
            if a >= b:
                break
            rows.append((proc, tid, depth, a, b))
            if depth < 3 and rng.random() < 0.6:
                calls(proc, tid, depth + 1, a, b)
            t = b
    for proc in range(4):
        for tid in (7, 9):
            calls(proc, tid, int(rng.integers(0, 2)), 0, 2000)
    c = records(*rows)
    key = list(zip(*(c[name].tolist() for name in ("proc", "tid", "start_ns", "depth"))))
    order = sorted(range(len(key)), key=lambda i: key[i])  # stable: ties in row order
    expected = [-1] * len(key)
    for pos, row in enumerate(order):
        p, t, _, d = key[row]
        before = [r for r in order[:pos] if key[r][:2] == (p, t) and key[r][3] == d - 1]
        if before and c["end_ns"][before[-1]] >= c["end_ns"][row]:
            expected[row] = before[-1]
    assert (np.array(expected) >= 0).sum() > 100
    assert nesting.parents(c).tolist() == expected


def test_given_phases_only_their_calls_are_parents():
    # A save (phase 8) around a gen (1) and a close (7) around its fsync (6):
    # with phases (1, 6, 7) the close is the fsync's parent, the save no one's.
    c = records((0, 1, 0, 0, 1000), (0, 1, 1, 100, 400), (0, 1, 1, 500, 900), (0, 1, 2, 600, 700))
    c["phase"] = np.array([{0: 8, 100: 1, 500: 7, 600: 6}[s] for s in c["start_ns"].tolist()])
    close = int(np.flatnonzero(c["start_ns"] == 500)[0])
    by_start = dict(zip(c["start_ns"].tolist(), nesting.parents(c, phases=[1, 6, 7]).tolist()))
    assert by_start == {0: -1, 100: -1, 500: -1, 600: close}
    own = dict(zip(c["start_ns"].tolist(), nesting.own_ns(c, phases=[1, 6, 7]).tolist()))
    assert own == {0: 1000, 100: 300, 500: 300, 600: 100}
    assert nesting.parents(c).tolist() == nesting.parents(c, phases=[1, 6, 7, 8]).tolist()
