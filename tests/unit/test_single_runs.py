"""A compare of one run a side, on synthetic runs whose storage varies from
run to run (a factor of each run's own on its writes and fsync, as the page
cache and the device's state carry over) as much as from save to save
(save_jitter): the saves of one run show the second, not the first. Within
the run-to-run spread no cause is named and the verdict says how many runs a
side would resolve the difference; a difference well above it is named."""

from __future__ import annotations

import numpy as np
import pytest

from writerprof.analysis import noise
from writerprof.analysis.compare import compare
from writerprof.analysis.summary import summarize
from writerprof.render import terminal
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run

RUN_SIGMA = 0.1  # lognormal sigma of a run's storage factor
BASE = dict(start_method="fork", saves=4, chunks_per_save=16, save_jitter=0.1, fsync_s=0.3, write_s=0.02)
PAIRS = 20


def recorded(root, seed: int, **fields) -> dict:
    factor = float(np.exp(np.random.default_rng([seed, 7]).normal(0.0, RUN_SIGMA)))
    path = root / f"run-{seed}"
    write_run(path, Scenario(**{**BASE, "seed": seed, "fsync_s": BASE["fsync_s"] * factor,
                                "write_s": BASE["write_s"] * factor, **fields}))
    return summarize(load(path))


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("single")


@pytest.fixture(scope="module")
def pairs(root):
    return [(recorded(root, 2 * i + 1), recorded(root, 2 * i + 2)) for i in range(PAIRS)]


def test_identical_single_runs_name_no_cause_in_twenty_pairs_either_way(pairs):
    hidden = 0
    for a, b in pairs:
        for result in (compare([a], [b]), compare([b], [a])):
            assert result["causes"] == [] and result["fix"] == [], result["verdict"]
            assert "of that (" not in result["verdict"]
            hidden += result["noise"]["hides"]
    # Mostly the whole difference is within the spread, and the verdict says so in its one line.
    assert hidden >= PAIRS


def test_within_the_spread_the_verdict_is_one_line_saying_how_many_runs_a_side(pairs):
    result = next(r for r in (compare([a], [b]) for a, b in pairs) if r["noise"]["hides"])
    n = result["noise"]
    assert n["unit"] == "run" and n["have"] == 1
    assert n["needed"] == noise.needed(n["sd_s"], result["difference_s"]) and n["needed"] > 1
    assert "more runs are needed" in result["verdict"] and f"about {n['needed']} runs a side" in result["verdict"]
    assert "Not distinguishable" not in result["verdict"] and "clear of the noise" not in result["verdict"]
    assert result["details"] == [{"heading": "Noise", "lines": [n["message"]]}]  # no part told from it
    text = " ".join(terminal.compare_text(result).split())  # unwrapped
    assert text.count(n["message"]) == 1 and "run-to-run spread" in text.split("Verdict")[0]


def test_a_difference_clear_of_the_spread_whose_parts_are_not_names_none_and_says_how_many_runs(pairs):
    # One of the seeded pairs: its runs' storage factors far enough apart for the whole save, not for a part.
    clear = [r for a, b in pairs for r in (compare([a], [b]),) if not r["noise"]["hides"]]
    assert clear
    for result in clear:
        largest = max((c for c in result["components"] if c["diff_s"] * result["difference_s"] > 0),
                      key=lambda c: abs(c["diff_s"]))
        assert result["causes"] == [] and largest["runs_needed"] >= 2
        assert (f"No single part of the save is clear of the run-to-run spread: about {largest['runs_needed']} "
                f"runs a side would resolve the largest, {largest['label']}.") in result["verdict"]


def test_a_difference_well_above_the_spread_is_named(root, pairs):
    a = pairs[0][0]
    b = recorded(root, 99, start_method="forkserver", main_rerun_s=0.6)  # +70%: over the 10% floor
    for result, sign in ((compare([a], [b]), 1), (compare([b], [a]), -1)):
        assert result["causes"][0] == "startup:main_rerun", result["verdict"]
        assert sign * result["total"]["ci95_s"][0] > 0 or sign * result["total"]["ci95_s"][1] < 0
        assert not result["noise"]["hides"] and "more runs" not in result["verdict"]
        assert "re-running the parent's __main__" in result["verdict"]


def test_a_start_up_the_critical_path_moves_between_its_phases_is_named_as_one(root, pairs):
    # The writer's start-up in B: 0.61 s each save, in its __main__ re-run one save and its unpickling the next.
    swap = {(rank, save): {"main_rerun_s": 0.6, "unpickle_s": 0.01} if (save + rank) % 2 else
            {"main_rerun_s": 0.01, "unpickle_s": 0.6} for rank in range(2) for save in range(BASE["saves"])}
    b = recorded(root, 98, start_method="forkserver", overrides=swap)
    result = compare([pairs[0][0]], [b])
    phases = [c for c in result["components"] if c["name"] in ("startup:main_rerun", "startup:unpickle")]
    assert not any(c["significant"] for c in phases)  # each alone swings by 0.6 s from save to save
    assert result["causes"][0] == "startup" and result["writer_startup"]["significant"]
    assert "the writer's start-up, its phases together" in result["verdict"]
    assert "re-run" not in result["verdict"].split("Not distinguishable")[-1]  # its phases not listed as noise
    assert "start-up, its phases together" in terminal.compare_text(result)


def test_the_interval_of_one_run_a_side_is_its_saves_spread_not_that_of_their_mean(pairs):
    a, b = pairs[0]
    result = compare([a], [b])
    sds = [np.std([s["duration_s"] for s in x["saves"]], ddof=1) for x in (a, b)]  # saves all of one size
    half = (result["total"]["ci95_s"][1] - result["total"]["ci95_s"][0]) / 2
    assert half == pytest.approx(noise.Z * np.sqrt(sds[0] ** 2 + sds[1] ** 2), rel=1e-3)
    assert result["noise"]["a"]["sd_s"] == pytest.approx(sds[0])
    assert result["noise"]["a"]["count"] == len(a["saves"])


def test_a_run_varies_as_its_saves_of_one_size_do_and_several_runs_as_their_means():
    # Columns: a part steady within the run, and the save's time. Two sizes, each steady but for
    # ±0.1 s: their difference is no spread.
    run = np.array([[0.5, 1.0], [0.5, 1.3], [0.5, 0.7], [1.5, 3.0], [1.5, 3.3], [1.5, 2.7]])
    sizes = np.array([1, 1, 1, 2, 2, 2])
    sd = noise.run_sd([run], [sizes], whole=1)
    assert sd[1] == pytest.approx(0.3)
    # The steady part moves with its run as the whole save does, relative to its mean.
    assert sd[0] == pytest.approx(0.3 / 2.0 * 1.0)
    # Saves steadier than that: the run still varies by the floor, relative to its mean (2.0 s).
    steady = run.copy()
    steady[:, 1] = [1.0, 1.05, 0.95, 3.0, 3.05, 2.95]
    assert noise.run_sd([steady], [sizes], whole=1) == pytest.approx([noise.RUN_CV_FLOOR * 1.0,
                                                                       noise.RUN_CV_FLOOR * 2.0])
    assert np.isnan(noise.run_sd([run[:2]], [np.array([1, 2])], whole=1)).all()  # no two saves of one size
    means = [np.array([[1.0], [1.2]]), np.array([[2.0], [2.2]]), np.array([[3.0], [3.2]])]
    assert noise.run_sd(means, [np.array([1, 1])] * 3, whole=0)[0] == pytest.approx(1.0)


def test_a_side_of_one_save_names_no_cause_and_asks_for_runs(root):
    one = dict(saves=1, ranks_per_host=1)
    a, b = recorded(root, 201, **one), recorded(root, 202, start_method="forkserver", main_rerun_s=0.3, **one)
    result = compare([a], [b])
    assert result["causes"] == [] and result["total"]["ci95_s"] is None
    assert "no two saves of one size" in result["verdict"] and "several runs a side" in result["verdict"]


def test_one_run_against_several_takes_those_runs_spread_from_their_means(pairs):
    a = pairs[0][0]
    several = [b for _, b in pairs[:3]]
    result = compare([a], several)
    assert result["noise"]["unit"] == "run" and len(result["b"]["runs"]) == 3
    means = [np.mean([s["duration_s"] for s in x["saves"]]) for x in several]
    assert result["noise"]["b"]["sd_s"] == pytest.approx(np.std(means, ddof=1))
    assert result["causes"] == []
