"""work_windows finds every save's spans at once (columnar, a block of saves
at a time): the searches it makes of each process's sorted times for many
(process, time) at once are np.searchsorted's within each process, however
far apart the times; blocks of one save find what one block of them all finds."""

from __future__ import annotations

import numpy as np
import pytest

from writerprof.analysis import saves, work_windows
from writerprof.analysis.work_windows import _Sorted
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run


def grouped(rng, n_groups: int, spread: int):
    groups = rng.integers(0, n_groups, 400)
    times = rng.integers(-spread, spread, 400) + groups * spread // 2  # groups' times overlapping
    return groups, times


def expected(groups, times, n_groups, query_groups, query_times, side):
    out = []
    for g, t in zip(query_groups.tolist(), query_times.tolist()):
        mine = np.sort(times[groups == g])
        out.append(int(np.searchsorted(groups, g)) + int(np.searchsorted(mine, t, side)))
    return out


@pytest.mark.parametrize("side", ["left", "right"])
def test_a_search_is_searchsorted_within_the_group(side):
    rng = np.random.default_rng(7)
    n_groups = 12  # some empty, with 400 times over 12 groups drawn from 0-9
    groups, times = grouped(rng, 10, 1000)
    found = _Sorted.of(groups, times, n_groups)
    query_groups = rng.integers(0, n_groups + 1, 300)  # n_groups: the empty one of unknowns
    query_times = rng.integers(-3000, 9000, 300)
    sorted_groups = np.sort(groups)
    want = expected(sorted_groups, times[np.argsort(groups, kind="stable")], n_groups + 1, query_groups,
                    query_times, side)
    assert found.search(query_groups, query_times, side).tolist() == want


def test_times_far_apart_are_searched_within_their_group():
    times = np.array([-2**62, 0, 2**62, 5, 9], np.int64)
    found = _Sorted.of(np.array([0, 0, 0, 1, 1]), times, 2)
    assert found.search(np.array([0, 0, 1, 1]), np.array([1, 2**62, 0, 6])).tolist() == [2, 2, 3, 4]
    assert found.search(np.array([0, 1]), np.array([2**62, 9]), "right").tolist() == [3, 5]


def test_the_first_time_inside_a_window_else_the_default():
    found = _Sorted.of(np.array([1, 0, 1, 1]), np.array([30, 5, 10, 20]), 2)
    groups, a, b = np.array([1, 1, 1, 0, 2]), np.array([11, 0, 31, 0, 0]), np.array([25, 9, 40, 4, 99])
    assert found.first_inside(groups, a, b, np.full(5, -1)).tolist() == [20, -1, -1, -1, -1]


def test_a_save_a_block_finds_what_one_block_finds(tmp_path, monkeypatch):
    write_run(tmp_path / "run", Scenario(ranks_per_host=2, saves=3, chunks_per_save=8))
    run = load(tmp_path / "run")
    found = saves.find(run)
    whole = joined(work_windows.spans(run, found))
    monkeypatch.setattr(work_windows, "BLOCK_RECORDS", 1)  # a block of one save
    blocks = work_windows.spans(run, found)
    assert len(blocks) == 4 * len(found) and len(whole) >= 2 * len(found) * 8  # 2 pieces each of writes and fill
    assert joined(blocks) == whole


def joined(spans) -> list[tuple[int, int, int]]:
    return sorted(zip(*(np.concatenate(column).tolist() for column in zip(*spans))))


def test_a_column_of_calls_is_read_when_indexed_its_index_in_4_bytes():
    calls = work_windows.taken(np.array([10, 20, 30, 40], np.int64), np.array([3, 1]))
    assert calls.index.dtype == np.int32
    assert calls[np.array([1])].tolist() == [20] and np.asarray(calls).tolist() == [40, 20]
