"""Saves' critical paths add up to their time, comparisons add up to the
difference, and the text reports say so within 100 columns: on synthetic runs."""

from __future__ import annotations

import numpy as np
import pytest

from writerprof.analysis import compare, saves
from writerprof.analysis.summary import summarize
from writerprof.render import terminal
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run


def _summary(path, **fields) -> dict:
    write_run(path, Scenario(**fields))
    return summarize(load(path))


@pytest.fixture(scope="module")
def fork_and_forkserver(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    return (_summary(root / "fork", jitter=0.2, seed=1),
            _summary(root / "forkserver", start_method="forkserver", main_rerun_s=0.5, jitter=0.2, seed=2))


def test_a_saves_critical_path_adds_up_to_its_time(fork_and_forkserver):
    for summary in fork_and_forkserver:
        for save in summary["saves"]:
            assert set(save["critical_path"]) == set(saves.COMPONENTS)
            assert all(v >= 0 for v in save["critical_path"].values()) and save["unexplained_s"] >= 0
            assert sum(save["critical_path"].values()) + save["unexplained_s"] == pytest.approx(save["duration_s"])
            # The start-up is the writer's own phases: its wait for the first chunk is the producer's fill.
            own = {phase: s for phase, s in save["startup"].items() if phase != "first_chunk"}
            assert sum(own.values()) == pytest.approx(save["startup_s"])
            # On the critical path only while the producer had nothing else to do.
            assert save["critical_path"]["startup:main_rerun"] <= save["startup"]["main_rerun"] + 1e-9
            assert save["critical_path"]["generation"] <= save["gen_s"] + 1e-9


def test_the_comparison_adds_up_to_the_difference_and_names_the_re_run(fork_and_forkserver):
    a, b = fork_and_forkserver
    result = compare.compare([a], [b])
    assert result["schema"] == "writerprof.compare/1"
    mean = lambda s: sum(x["duration_s"] for x in s["saves"]) / len(s["saves"])  # noqa: E731
    assert result["difference_s"] == pytest.approx(mean(b) - mean(a))
    total = sum(c["diff_s"] for c in result["components"]) + result["unexplained_s"]
    assert total == pytest.approx(result["difference_s"])
    top = max(result["components"], key=lambda c: c["diff_s"])
    assert top["name"] == "startup:main_rerun" and top["share"] > 0.5
    assert result["verdict"].startswith(f"forkserver saves are {result['difference_s']:.2f} s slower than fork")
    assert "re-running the parent's __main__" in result["verdict"] and "(main.py)" in result["verdict"]
    assert [s["save"] for s in result["per_save"]] == [1, 2, 3]
    assert result["b"]["placement"]["writer_parent"] == ["forkserver"]


def test_a_run_against_itself_takes_the_same_time(fork_and_forkserver):
    a, _ = fork_and_forkserver
    result = compare.compare([a], [a])
    assert result["difference_s"] == 0 and "same time within 1%" in result["verdict"]


def test_pooled_repeats_weigh_every_save(fork_and_forkserver):
    a, b = fork_and_forkserver
    result = compare.compare([a, a], [b])
    assert result["a"]["saves"] == 2 * len(a["saves"]) and result["a"]["runs"] == [a["run"]["path"]] * 2


def test_compare_text_shows_the_components_adding_up(fork_and_forkserver):
    a, b = fork_and_forkserver
    result = compare.compare([a], [b])
    text = terminal.compare_text(result)
    assert max(map(len, text.splitlines())) <= terminal.WIDTH
    total = next(line for line in text.splitlines() if line.strip().startswith("total"))
    assert f"{result['difference_s']:+.3f}" in total.split()  # in its B - A column, its interval after it
    assert "start-up: __main__ re-run" in text and "Verdict: forkserver saves are" in text


def test_report_text_says_a_run_is_synthetic_and_fits_100_columns(fork_and_forkserver):
    _, b = fork_and_forkserver
    text = terminal.report_text(b)
    assert "SYNTHETIC" in text and "main-reimport" in text
    assert max(map(len, text.splitlines())) <= terminal.WIDTH


def test_report_text_aggregates_many_ranks(tmp_path):
    summary = _summary(tmp_path / "wide", ranks_per_host=32, hosts=2, saves=2, chunks_per_save=8)
    text = terminal.report_text(summary)
    lines = text.splitlines()
    assert max(map(len, lines)) <= terminal.WIDTH
    assert len(lines) < 60  # 64 producers, 128 writers: grouped, not listed
    assert "Processes (" in text and "Saves (128 over 64 producers" in text


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    """8 ranks on 2 hosts; rank 5's second save writes 3x slower."""
    path = tmp_path_factory.mktemp("mpi") / "run"
    return _summary(path, hosts=2, ranks_per_host=4, saves=2, jitter=0.2, seed=3,
                    overrides={(5, 1): {"write_s": 0.06}})


def test_the_aggregate_is_the_benchmarks(two_hosts):
    agg = two_hosts["aggregate"]
    for row in agg["saves"]:
        mine = [s for s in two_hosts["saves"] if s["save"] == row["save"]]
        rank0 = next(s for s in mine if s["rank"] == 0)
        assert row["ranks"] == 8 and row["bytes"] == sum(s["bytes"] for s in mine)
        assert row["rank0_s"] == rank0["duration_s"]
        assert row["gib_s"] == pytest.approx(row["bytes"] / rank0["duration_s"] / 2**30)
        assert row["span_s"] >= max(s["duration_s"] for s in mine) - 1e-9
    assert agg["mean_gib_s"] == pytest.approx(sum(r["gib_s"] for r in agg["saves"]) / 2)


def test_the_straggler_and_why(two_hosts):
    (second,) = [s for s in two_hosts["stragglers"] if s["save"] == 2]
    assert (second["rank"], second["host"], second["component"]) == (5, "host1", "write")
    assert second["excess_s"] > 0.5 and second["component_excess_s"] > 0.5


def test_hosts_are_put_on_one_time_line(two_hosts):
    """Each synthetic host's monotonic clock starts elsewhere; aligned by the
    wall-clock anchors, the ranks' first saves start within a second."""
    clocks = two_hosts["clocks"]
    assert clocks["host0"]["offset_ns"] == 0 and abs(clocks["host1"]["offset_ns"]) > 60 * 10**9
    firsts = [s["start_s"] for s in two_hosts["saves"] if s["save"] == 1]
    assert max(firsts) - min(firsts) < 1.0
    assert all(0 <= p["created_s"] < 60 for p in two_hosts["processes"])


def test_rank_tables_in_the_report(two_hosts):
    text = terminal.report_text(two_hosts)
    assert "Ranks (8" in text and "Aggregate, as the benchmark reports it" in text
    assert "save 2   rank 5 on host1" in text and "Placement: the same on every rank" in text
    assert max(map(len, text.splitlines())) <= terminal.WIDTH


def test_interval_pieces_hold_the_latest_interval_begun_and_not_ended():
    """saves._pieces, the critical path's layers, against their definition
    point by point: of the intervals begun at or before a point the latest
    (the later given of equal starts), if the point is before its end; else
    none. The pieces do not overlap."""
    from writerprof.analysis.criticalpath import _pieces

    rng = np.random.default_rng(7)
    for _ in range(200):
        points = np.sort(rng.integers(0, 100, rng.integers(0, 50)))
        starts = rng.integers(0, 100, rng.integers(0, 12))
        ends = starts + rng.integers(-3, 40, len(starts))
        labels = rng.integers(0, 9, len(starts))
        want = []
        for p in points.tolist():
            begun = [i for i in range(len(starts)) if starts[i] <= p]
            latest = max(begun, key=lambda i: (starts[i], i), default=None)
            want.append(int(labels[latest]) if latest is not None and p < ends[latest] else -1)
        start, stop, label = _pieces(starts, ends, labels)
        assert (start[1:] >= stop[:-1]).all() and (stop > start).all()
        assert [next((int(lab) for a, b, lab in zip(start, stop, label) if a <= p < b), -1)
                for p in points.tolist()] == want
