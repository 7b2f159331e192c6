"""report, compare and contrast on real recordings of the reproducer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import psutil
import pytest

from helpers import run_writerprof, writerprof_command

SMALL = ["--saves", "3", "--size", "256MiB", "--chunk-size", "32MiB"]
# The contrast's: small saves, several, two runs a side: one run a side is
# judged by its saves' spread, which a loaded machine can make as wide as the
# __main__ re-run (fork's saves 0.05-0.41 s in one CI run); two are judged by
# their means'.
CONTRAST_SAVES, CONTRAST_MIB, REPEATS = 8, 32, 2


def _record(tmp_path, name, *repro_args):
    out = tmp_path / name
    run_writerprof("record", "-o", out, "--", *writerprof_command(), "repro", *SMALL, *repro_args)
    return out


def _summary(run_dir) -> dict:
    return json.loads(run_writerprof("report", "--json", run_dir).stdout)


@pytest.fixture(scope="module")
def contrast(tmp_path_factory):
    out = tmp_path_factory.mktemp("contrast") / "c"
    done = run_writerprof("contrast", "--repeat", str(REPEATS), "-o", out, "--", *writerprof_command(), "repro",
                          "--saves", str(CONTRAST_SAVES), "--size", f"{CONTRAST_MIB}MiB", "--chunk-size", "8MiB",
                          "--main-imports", "numpy,matplotlib.pyplot", timeout=400)
    return out, done


def test_contrast_names_the_main_reimport_as_the_dominant_cause(contrast):
    out, done = contrast
    result = json.loads((out / "contrast.json").read_text())
    assert result["schema"] == "writerprof.contrast/1"
    assert sorted(r["method"] for r in result["runs"]) == ["fork"] * REPEATS + ["forkserver"] * REPEATS
    comparison = result["comparisons"]["forkserver"]
    assert comparison["schema"] == "writerprof.compare/1"
    assert comparison["a"]["start_methods"] == ["fork"] and comparison["b"]["start_methods"] == ["forkserver"]
    difference = comparison["difference_s"]
    assert difference > 0, "forkserver with a heavy __main__ should be slower"
    top = max(comparison["components"], key=lambda c: c["diff_s"])
    assert top["name"] == "startup:main_rerun", comparison["components"]
    # Accounting closes: the named components are the difference, within 5%.
    named = sum(c["diff_s"] for c in comparison["components"])
    assert abs(named - difference) <= 0.05 * difference
    assert abs(named + comparison["unexplained_s"] - difference) < 1e-6
    assert "main-reimport" in comparison["b"]["diagnoses"] and "main-reimport" not in comparison["a"]["diagnoses"]
    assert "__main__" in result["verdict"] and "forkserver" in result["verdict"]
    assert "Verdict:" in done.stdout and str(out / "contrast.html") in done.stdout
    assert f"[{2 * REPEATS}/{2 * REPEATS}] forkserver" in done.stderr  # progress


def test_contrast_writes_a_self_contained_html_report(contrast):
    out, _ = contrast
    html = (out / "contrast.html").read_text()
    assert "main-reimport" in html and ("<svg" in html or "data:image/png;base64" in html)
    assert 'src="http' not in html and "<link" not in html


def test_report_of_the_forkserver_run_breaks_start_up_into_phases(contrast):
    out, _ = contrast
    run_dir = next(d for d in sorted((out / "runs").iterdir()) if d.name.endswith("-forkserver"))
    summary = _summary(run_dir)
    assert summary["schema"] == "writerprof.summary/1"
    assert len(summary["saves"]) == CONTRAST_SAVES
    for save in summary["saves"]:
        assert save["start_method"] == "forkserver"
        assert save["startup"]["main_rerun"] > 0 and save["bytes"] == CONTRAST_MIB << 20
        total = sum(save["critical_path"].values()) + save["unexplained_s"]
        assert total == pytest.approx(save["duration_s"], rel=1e-6)
    (reimport,) = [d for d in summary["diagnoses"] if d["code"] == "main-reimport"]
    assert reimport["evidence"]["main"].endswith("repro/main.py") and reimport["cost_s"] > 0
    text = run_writerprof("report", run_dir).stdout
    assert "main-reimport" in text and f"Saves ({CONTRAST_SAVES}" in text and "Processes (" in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_affinity_divergence_under_forkserver_and_not_under_fork(tmp_path, cpus):
    pinned = ["--pin-parent", str(cpus[0]), "--pin-when", "after-first-writer"]
    codes = {}
    for method in ("fork", "forkserver"):
        summary = _summary(_record(tmp_path, method, "--start-method", method, *pinned))
        codes[method] = [d for d in summary["diagnoses"] if d["code"] == "affinity-divergence"]
    assert codes["fork"] == []
    # The first writer started before the pin; every later one inherits the forkserver's old mask.
    assert len(codes["forkserver"]) == 2
    for d in codes["forkserver"]:
        assert d["evidence"]["producer_cpus"] == [cpus[0]]
        assert d["evidence"]["writer_cpus"] == cpus and d["evidence"]["inherited_from"] == "forkserver"


def test_compare_explains_and_rejects_a_run_without_saves(tmp_path):
    fork = _record(tmp_path, "fork")
    done = run_writerprof("compare", fork, fork)
    assert "Verdict:" in done.stdout and "same time" in done.stdout
    empty = tmp_path / "empty"
    run_writerprof("record", "-o", empty, "--", "true")
    done = run_writerprof("compare", fork, empty, check=False)
    assert done.returncode == 1 and "has no saves" in done.stderr and len(done.stderr.splitlines()) == 1


def test_report_of_a_recording_cut_short_still_reports_what_was_recorded(tmp_path):
    out = tmp_path / "cut"
    record = subprocess.Popen(writerprof_command() + ["record", "-o", str(out), "--"] + writerprof_command()
                              + ["repro", "--saves", "50", "--size", "256MiB"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_saves(out, 2)
        # record's children: the target, and py-spy sampling its stacks.
        (target,) = [c for c in psutil.Process(record.pid).children() if c.name() != "py-spy"]
        tree = [target] + target.children(recursive=True)
    finally:
        record.kill()  # record dies mid-recording, never finishing its run directory
        record.wait()
    os.killpg(target.pid, signal.SIGTERM)  # the target (its own process group) ends cleanly:
    psutil.wait_procs(tree, timeout=60)  # its resource tracker unlinks the buffers last
    done = run_writerprof("report", out)
    assert "did not finish" in done.stdout  # the loss is said
    summary = _summary(out)
    assert summary["run"]["complete"] is False and len(summary["saves"]) >= 2


def _wait_for_saves(run_dir, count, timeout_s=120):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        procs = run_dir / "hosts"
        if procs.exists():
            writers = [p for p in procs.rglob("*.events.jsonl") if b'"bootstrap"' in p.read_bytes()]
            if len(writers) > count:
                return
        time.sleep(0.2)
    raise AssertionError(f"no {count} saves in {timeout_s} s")


def test_report_bad_input_is_one_line(tmp_path):
    done = run_writerprof("report", tmp_path / "missing", check=False)
    assert done.returncode == 1 and done.stderr.strip() == f"writerprof report: {tmp_path / 'missing'}: no such run directory"
    (tmp_path / "notrun").mkdir()
    done = run_writerprof("report", tmp_path / "notrun", check=False)
    assert done.returncode == 1 and "not a writerprof run directory" in done.stderr
