"""The verdict's intervals, noise and fix on real recordings of the
reproducer: small and few saves, two repeats of fork and forkserver."""

from __future__ import annotations

import json

import pytest

from helpers import run_writerprof, writerprof_command

SMALL = ["--saves", "3", "--size", "128MiB", "--chunk-size", "16MiB"]


@pytest.fixture(scope="module")
def contrast(tmp_path_factory):
    out = tmp_path_factory.mktemp("verdict") / "c"
    done = run_writerprof("contrast", "--repeat", "2", "-o", out, "--", *writerprof_command(), "repro",
                          *SMALL, "--main-imports", "numpy,matplotlib.pyplot", timeout=500)
    return out, json.loads((out / "contrast.json").read_text()), done


def test_the_re_runs_interval_excludes_zero_and_its_fix_is_named(contrast):
    out, result, done = contrast
    comparison = result["comparisons"]["forkserver"]
    rerun = next(c for c in comparison["components"] if c["name"] == "startup:main_rerun")
    assert rerun["significant"] and rerun["ci95_s"][0] > 0, rerun
    assert comparison["causes"][0] == "startup:main_rerun"
    assert rerun["b_own_s"] >= rerun["b_s"]  # its own duration, of which the critical path is a part
    # The fix: the reproducer's main module standing in for the entry script, with the preload option.
    assert any("standing in for the benchmark's entry script" in f["where"] for f in result["fix"])
    assert any("set_forkserver_preload" in f["what"] for f in result["fix"])
    fork = next(f for f in result["fix"] if f["what"].startswith("start the writers with fork"))
    assert fork["recovery_s"] == pytest.approx(comparison["difference_s"])  # the reference measured it
    assert " ±" in done.stdout and "fix:" in done.stdout
    assert "What to do" in (out / "contrast.html").read_text()


def test_the_noise_of_each_sides_repeats_is_in_the_result(contrast):
    _, result, _ = contrast
    for method in ("fork", "forkserver"):
        side = result["noise"]["sides"][method]
        assert side["count"] == 2 and len(side["gib_s"]) == 2 and side["min_gib_s"] <= side["max_gib_s"]
    assert result["comparisons"]["forkserver"]["noise"]["unit"] == "repeat"
    assert all(w.startswith("forkserver: ") for w in result["noise"]["warnings"])


@pytest.fixture(scope="module")
def forks(tmp_path_factory):
    """Four fork recordings of the same small save, summarized."""
    root = tmp_path_factory.mktemp("forks")
    out = []
    for i in range(4):
        run_writerprof("record", "-o", root / str(i), "--", *writerprof_command(), "repro", "--saves", "3",
                       "--size", "64MiB", "--chunk-size", "16MiB", "--start-method", "fork")
        out.append(root / str(i))
    return out


def test_fork_against_fork_has_no_significant_component_and_says_so(forks):
    from writerprof.analysis.compare import compare
    from writerprof.analysis.summary import summarize
    from writerprof.run import load

    # As contrast compares repeats (its --methods wants two different ones): interleaved, pooled.
    first, second, third, fourth = (summarize(load(path)) for path in forks)
    comparison = compare([first, third], [second, fourth])
    assert comparison["noise"]["unit"] == "repeat"
    assert not [c["name"] for c in comparison["components"] if c["significant"]], comparison["components"]
    assert comparison["causes"] == [] and comparison["fix"] == []
    verdict = comparison["verdict"]
    assert ("distinguishable from noise" in verdict or "same time within 1%" in verdict), verdict
    assert "Top cause" not in verdict


def test_a_compare_of_two_single_runs_is_judged_by_the_run_to_run_spread_of_their_saves(forks):
    comparison = json.loads(run_writerprof("compare", "--json", forks[0], forks[1]).stdout)
    assert comparison["noise"]["unit"] == "run" and comparison["noise"]["a"]["count"] == 3
    assert comparison["causes"] == [], comparison["verdict"]
