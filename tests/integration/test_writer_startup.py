"""writer-startup on real recordings of the built-in reproducer: silent on
clean fork runs (the writer's own start-up is a few milliseconds of a save),
fired where every writer re-runs a heavy main module (forkserver, spawn)."""

from __future__ import annotations

import json

import pytest

from helpers import run_writerprof, writerprof_command

FORK_ACTION = "start the writers with fork"  # the fork advice, as a writers' run words it

CLEAN_FORK_RUNS = 5
SAVES = ["--saves", "3", "--size", "64MiB"]


def recorded(run, *repro_args) -> dict:
    run_writerprof("record", "-o", run, "--", *writerprof_command(), "repro", *SAVES, *repro_args, timeout=300)
    return json.loads(run_writerprof("report", "--json", run).stdout)


def found(summary, code) -> list[dict]:
    return [d for d in summary["diagnoses"] if d["code"] == code]


def test_clean_fork_runs_have_no_writer_startup_warning(tmp_path):
    for i in range(CLEAN_FORK_RUNS):
        summary = recorded(tmp_path / f"fork{i}", "--start-method", "fork")
        assert len(summary["saves"]) == 3
        assert found(summary, "writer-startup") == [], (i, [s["startup"] for s in summary["saves"]])


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_heavy_main_module_re_run_by_every_writer_fires_it(tmp_path, method):
    summary = recorded(tmp_path / method, "--start-method", method, "--main-imports", "numpy,matplotlib.pyplot")
    (d,) = found(summary, "writer-startup")
    e = d["evidence"]
    assert e["start_method"] == method and e["saves"] == 3
    assert max(e["phases_s"], key=e["phases_s"].get) == "main_rerun" and e["share"] >= 0.2
    assert "first_chunk" not in e["phases_s"]
    # Advice to leave its start method, never to keep it.
    starts = [a["what"] for a in d["fix"] if a["what"].startswith("start the writers with")]
    assert starts and not any(w.startswith(f"start the writers with {method}") for w in starts)
    assert any(w.startswith(FORK_ACTION) for w in starts)
