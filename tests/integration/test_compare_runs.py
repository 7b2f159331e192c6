"""compare on real recordings of the built-in reproducer, one run a side and
several: two fork runs of the same saves name no cause, in either order;
fork against forkserver re-running a __main__ that imports numpy and
matplotlib.pyplot (a real start-up difference, several times a save's
spread even on a busy machine) still names it; `A1 A2 -- B1 B2` and a quoted pattern
a side pool the runs.

The start-up pair saves 16 MiB (one chunk), 16 times: its writer's start-up
then waits for little generation and stays on the critical path, and the
first save's extra (the forkserver's own start) weighs less in the spread; at
4 saves of 64 MiB the producer's generating hides a different share of it in
each save, and on a busy machine one run a side rightly names it less often
(a machine busy enough, another VM emulated on one of two CPUs, can hide it
at 16 MiB too: the verdict then says how many runs a side would tell)."""

from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from helpers import run_writerprof, writerprof_command

RUNS = {"fork": ["--saves", "4", "--size", "64MiB", "--start-method", "fork"],
        "small-fork": ["--saves", "16", "--size", "16MiB", "--start-method", "fork"],
        "small-forkserver": ["--saves", "16", "--size", "16MiB", "--start-method", "forkserver",
                             "--main-imports", "numpy,matplotlib.pyplot"]}


# The small pairs first, before any larger save's aftermath (the file system catching up on 256 MiB
# written and deleted) can slow one side's early saves.
ORDER = ("small-fork-1", "small-forkserver-1", "small-fork-2", "small-forkserver-2", "fork-1", "fork-2")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare-runs")
    for name in ORDER:
        run_writerprof("record", "-o", root / name, "--", *writerprof_command(), "repro",
                       *RUNS[name.rsplit("-", 1)[0]], timeout=300)
    return root


def compared(*argv) -> dict:
    return json.loads(run_writerprof("compare", "--json", *argv).stdout)


def test_two_single_fork_runs_name_no_cause_in_either_order(root):
    for a, b in (("fork-1", "fork-2"), ("fork-2", "fork-1")):
        comparison = compared(root / a, root / b)
        noise, verdict = comparison["noise"], comparison["verdict"]
        assert noise["unit"] == "run" and noise["a"]["count"] == 4, noise
        assert comparison["causes"] == [] and comparison["fix"] == [], verdict
        assert "Top cause" not in verdict
        if noise["hides"] and "same time within 1%" not in verdict:  # its second line: how many runs a side
            assert verdict.split("\n")[1] == (f"No cause is named: more runs are needed; about {noise['needed']} "
                                               f"runs a side would resolve it (95%, 80% power).")
        text = run_writerprof("compare", root / a, root / b).stdout
        assert "interval from the run-to-run spread" in text and "Verdict:" in text


def test_fork_against_forkserver_re_running_numpy_still_names_the_start_up(root):
    comparison = compared(root / "small-fork-1", root / "small-forkserver-1")
    assert comparison["noise"]["unit"] == "run" and not comparison["noise"]["hides"], comparison["verdict"]
    # Its __main__ re-run, or its phases together.
    assert comparison["causes"][:1] in (["startup:main_rerun"], ["startup"]), comparison["verdict"]
    assert "\nTop cause: " in comparison["verdict"] and "more runs" not in comparison["verdict"]


def test_several_runs_a_side_pool_listed_or_by_a_quoted_pattern(root):
    listed = compared(root / "small-fork-1", root / "small-fork-2", "--", root / "small-forkserver-1",
                      root / "small-forkserver-2")
    assert listed["a"]["runs"] == [str(root / "small-fork-1"), str(root / "small-fork-2")]
    assert listed["b"]["runs"] == [str(root / "small-forkserver-1"), str(root / "small-forkserver-2")]
    assert listed["a"]["saves"] == 32 and listed["b"]["saves"] == 32
    assert listed["noise"]["unit"] == "repeat" and listed["noise"]["have"] == 2
    separate = [compared(root / f"small-fork-{i}", root / f"small-forkserver-{i}") for i in (1, 2)]
    assert listed["difference_s"] == pytest.approx(  # the pooled saves' means: each pair's, averaged
        sum(c["b"]["mean_save_s"] for c in separate) / 2 - sum(c["a"]["mean_save_s"] for c in separate) / 2)
    # As a user types it: the shell leaves the quoted patterns to writerprof.
    line = " ".join(map(shlex.quote, [*writerprof_command(), "compare", "--json", f"{root}/small-fork-*",
                                      f"{root}/small-forkserver-*"]))
    done = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=240, check=True)
    assert json.loads(done.stdout) == listed
