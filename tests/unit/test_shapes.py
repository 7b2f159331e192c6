"""The shapes in writerprof.analysis.shapes are the objects the analysis
returns: a real summary, comparison and contrast result (of synthetic runs)
have exactly the keys their TypedDicts declare, all the way down."""

from __future__ import annotations

import copy
import json

import pytest

from writerprof.analysis import contrast, shapes
from writerprof.analysis.compare import compare
from writerprof.analysis.summary import summarize
from writerprof.run import load
from writerprof.synthetic import Scenario, make_topology, write_run

NODE0 = make_topology()["nodes"]["0"]["cpus"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two hosts of two ranks each (ranks, stragglers, clocks and placement
    have rows), with diagnoses that carry a cost and ones that do not."""
    root = tmp_path_factory.mktemp("runs")

    def summary(name, **fields):
        write_run(root / name, Scenario(hosts=2, jitter=0.2, **fields))
        return summarize(load(root / name))

    # The fork writers pin themselves to CPUs 8-15 at their target's start: affinity changes.
    return {"fork": summary("fork", seed=1, fsync_s=0.01, writer_cpus="8-15"),
            "forkserver": summary("forkserver", seed=2, start_method="forkserver", main_rerun_s=0.5,
                                  producer_cpus=NODE0, writer_cpus_inherited="0-15")}


def assert_shape(value, shape):
    found = shapes.mismatches(value, shape)
    assert not found, f"the {shape.__name__} differs from analysis/shapes/:\n  " + "\n  ".join(found)


def test_a_summary_has_the_keys_of_summary(runs):
    for summary in runs.values():
        assert_shape(summary, shapes.Summary)
    # Every nested shape was reached: the lists and per-host tables were not empty.
    assert any(p["affinity_changes"] for p in runs["fork"]["processes"])
    forkserver = runs["forkserver"]
    assert len(forkserver["clocks"]) == 2 and len(forkserver["topology"]) == 2
    assert forkserver["stragglers"] and forkserver["aggregate"]["saves"] and forkserver["placement"]["hosts"]
    costs = ["cost_s" in d for d in forkserver["diagnoses"]]
    assert any(costs) and not all(costs)  # Diagnosis's optional key, both ways


def test_the_views_of_a_many_rank_run_have_their_at_scale_shapes(tmp_path):
    """Past the plots' per-process and per-buffer limits the affinity and the
    buffer placement take their other shapes, with the timeline's picks."""
    write_run(tmp_path / "many", Scenario(hosts=8, ranks_per_host=8))
    summary = summarize(load(tmp_path / "many"))
    assert "groups" in summary["affinity"] and "groups" in summary["buffer_placement"]
    assert summary["chunk_timeline"]["picked"] and summary["save_indices"] and summary["process_groups"]
    assert_shape(summary, shapes.Summary)
    assert not shapes.mismatches(summary["affinity"], shapes.AffinityBins)
    assert shapes.mismatches(summary["affinity"], shapes.AffinityProcesses)  # the other shape does not fit


def test_a_comparison_has_the_keys_of_comparison(runs):
    comparison = compare([runs["fork"]], [runs["forkserver"]])
    assert comparison["per_rank"] and comparison["per_save"] and comparison["a"]["per_save"]
    assert_shape(comparison, shapes.Comparison)


def test_a_contrast_result_has_the_keys_of_contrast_result(runs):
    recorded = [{"method": m, "repeat": 1, "path": runs[m]["run"]["path"], "summary": runs[m]}
                for m in ("fork", "forkserver")]
    result = contrast.result(["cmd"], ["fork", "forkserver", "forkserver+preload", "forkserver+pin"], 1, recorded,
                             {"forkserver+preload": "why not", "forkserver+pin": "why not"})
    assert len(result["what_ifs"]) == 2
    assert_shape(result, shapes.ContrastResult)
    # As written to contrast.json and read back: plain JSON, the same keys.
    assert_shape(json.loads(json.dumps(result)), shapes.ContrastResult)


def test_a_missing_or_extra_key_is_named_with_its_path(runs):
    summary = copy.deepcopy(runs["forkserver"])
    del summary["saves"][1]["fsync_s"]
    summary["processes"][0]["numa_hint"] = 1
    del summary["placement"]["hosts"][next(iter(summary["placement"]["hosts"]))]["ranks"][0]["shape"]["cores"]
    summary["diagnoses"][0]["evidence"]["anything"] = 1  # evidence is free-form per code
    assert shapes.mismatches(summary, shapes.Summary) == [
        "processes[0]: extra key 'numa_hint' (not in Process)",
        "saves[1]: missing key 'fsync_s' (Save)",
        "placement.hosts['host0'].ranks[0].shape: missing key 'cores' (PlacementShape)",
    ]
    assert shapes.mismatches(summary["run"], shapes.Summary) == [
        f"Summary: missing key {key!r} (Summary)" for key in sorted(shapes.Summary.__required_keys__)
    ] + [f"Summary: extra key {key!r} (not in Summary)" for key in sorted(summary["run"])]
