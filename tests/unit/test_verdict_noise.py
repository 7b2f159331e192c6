"""The verdict on synthetic runs with known noise (save_jitter: each save's
storage slower or faster by a seeded factor): it names a cause five times the
noise, and not a component that differs by noise alone."""

from __future__ import annotations

import numpy as np
import pytest

from writerprof.analysis.compare import compare
from writerprof.analysis.summary import summarize
from writerprof.render import terminal
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run

NOISY = dict(start_method="forkserver", saves=6, save_jitter=0.15, fsync_s=0.3)


def summary(path, **fields) -> dict:
    write_run(path, Scenario(**{**NOISY, **fields}))
    return summarize(load(path))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("noisy")
    a = summary(root / "a", seed=1)
    # The per-save noise of the save time, from A's own saves.
    sd = float(np.std([s["duration_s"] for s in a["saves"]], ddof=1))
    return {"a": a, "same": summary(root / "same", seed=2), "sd": sd,
            "slower": summary(root / "slower", seed=3, main_rerun_s=NOISY.get("main_rerun_s", 0.02) + 5 * sd)}


def test_zero_plus_noise_is_not_named_and_the_verdict_says_so(runs):
    result = compare([runs["a"]], [runs["same"]])
    assert result["causes"] == [] and result["fix"] == []
    assert not any(c["significant"] for c in result["components"])
    # The storage varied, and both sides' write and fsync differ by that alone.
    assert any(abs(c["diff_s"]) > 0.005 for c in result["components"] if c["name"] in ("write", "fsync"))
    assert "within the run-to-run spread" in result["verdict"] and "No cause is named" in result["verdict"]
    assert "Top cause" not in result["verdict"]  # no share of a difference that is noise


def test_a_cause_five_times_the_noise_is_named_and_the_noise_is_not(runs):
    result = compare([runs["a"]], [runs["slower"]])
    rerun = next(c for c in result["components"] if c["name"] == "startup:main_rerun")
    assert rerun["significant"] and rerun["ci95_s"][0] > 0 and result["total"]["significant"]
    assert result["causes"][0] == "startup:main_rerun"
    assert "fsync" not in result["causes"] and "write" not in result["causes"]
    assert "re-running the parent's __main__" in result["verdict"].split(".")[0] + result["verdict"]
    # Shares are of the total, and none is over 100%.
    assert all(c["share"] <= 1.0 for c in result["components"] if c["name"] in result["causes"])
    text = terminal.compare_text(result)
    row = next(line.split() for line in text.splitlines() if line.startswith("  start-up: __main__ re-run "))
    assert f"+{rerun['diff_s']:.3f}" in row and row[row.index(f"+{rerun['diff_s']:.3f}") + 1].startswith("±")
    assert max(map(len, text.splitlines())) <= terminal.WIDTH


def test_the_noise_of_two_single_runs_is_that_of_their_saves_in_runs_a_side(runs):
    result = compare([runs["a"]], [runs["same"]])
    noise = result["noise"]
    assert noise["unit"] == "run" and noise["a"]["count"] == len(runs["a"]["saves"])
    assert noise["a"]["cv"] > 0.02 and noise["a"]["min_gib_s"] < noise["a"]["max_gib_s"]
    assert noise["a"]["sd_s"] == pytest.approx(runs["sd"])  # the saves are all of one size
    assert noise["hides"] and f"about {noise['needed']} runs a side would resolve it" in noise["message"]


def test_an_offset_whose_own_time_did_not_fall_is_an_overlap_not_faster(runs):
    # B: generation off the critical path while its own calls took as long.
    a, b = runs["a"], runs["slower"]
    result = compare([a], [b])
    generation = next(c for c in result["components"] if c["name"] == "generation")
    generation.update(diff_s=-0.2, significant=True, a_own_s=0.5, b_own_s=0.5, own_diff_s=0.0)
    from writerprof.analysis import compare as module

    def offsets() -> list[str]:
        return next(d["lines"] for d in module.details(result) if d["heading"] == "Offsets")

    (line,) = offsets()
    assert line.startswith("data generation, -0.20 s ") and "per save on the critical path" in line
    assert "it overlapped the writer's start-up in B (forkserver)" in line and "faster in" not in line
    generation.update(b_own_s=0.25, own_diff_s=-0.25)  # its own calls did get quicker
    (line,) = offsets()
    assert "faster in B (forkserver)" in line  # both sides forkserver: named A and B


def test_a_part_clear_of_the_noise_is_named_when_the_whole_difference_is_not(runs):
    from writerprof.analysis import compare as module

    result = compare([runs["a"]], [runs["slower"]])
    result["total"] = {**result["total"], "significant": False}  # as when the other parts' noise swamps it
    first, cause, _ = module.verdict(result, result["fix"]).split("\n")
    assert "not distinguishable from noise" in first
    assert cause.startswith("Clear of the noise though the difference is not: the writer re-running the parent's "
                            "__main__ at start-up (main.py), +")
    assert cause.endswith(" per save (no share of a difference that is noise).")
    # Without that cause (none in the difference's direction), the parts clear of the noise are its details'.
    result["causes"] = []
    assert module.verdict(result, []).endswith("\nNo cause is named.")
    (clear,) = [d["lines"] for d in module.details(result) if d["heading"].startswith("Clear of the noise")]
    assert clear[0].startswith("the writer re-running the parent's __main__ at start-up (main.py): +")
