"""The verdict in three lines (the difference with its interval, the top
cause with its share, the best fix with what it recovers), its details under
headings, every figure in them per save, a share over 100% explained where
it is shown, and the noise said once: on synthetic runs, two a side."""

from __future__ import annotations

import re

import pytest

from writerprof.analysis import compare, contrast
from writerprof.analysis.summary import summarize
from writerprof.render import terminal
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run

SECONDS = re.compile(r"\d s\b")  # a figure in seconds


def _summary(path, **fields) -> dict:
    write_run(path, Scenario(**fields))
    return summarize(load(path))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("verdict")
    return {"fork": [_summary(root / f"fork-{i}", jitter=0.2, seed=i) for i in (1, 3)],
            "forkserver": [_summary(root / f"forkserver-{i}", start_method="forkserver", main_rerun_s=0.5,
                                    jitter=0.2, seed=i) for i in (2, 4)],
            # Alike but for noise: two repeats a side leave it unresolved (about 3 a side would).
            "same": [_summary(root / f"same-{i}", save_jitter=0.3, jitter=0.2, seed=i) for i in (5, 6, 7, 8)]}


def test_the_verdict_is_the_difference_the_top_cause_and_the_best_fix(runs):
    result = compare.compare(runs["fork"], runs["forkserver"])
    first, cause, fix = result["verdict"].split("\n")
    low, high = result["total"]["ci95_s"]
    assert first.startswith(f"forkserver saves are {result['difference_s']:.2f} s slower than fork: ")
    assert f"s per save (95% interval {low:+.2f} to {high:+.2f} s; throughput " in first
    top = next(c for c in result["components"] if c["name"] == result["causes"][0])
    assert cause.startswith(f"Top cause: {top['description']} (main.py), {top['diff_s']:+.2f} s ±")
    assert cause.endswith(f" per save, {top['share']:.0%} of the difference.")
    best = next(a for a in result["fix"] if a["recovery_s"] is not None)  # (no stacks: the guard has no estimate)
    assert fix.startswith(f"Best fix (of {len(result['fix'])}, below): {best['what'].split(':')[0]}")
    assert fix.endswith(f"; recovers {best['recovery_s']:.2f} s per save (estimated).")
    assert len(" ".join(result["verdict"].split()).split()) < 90  # not the wall of numbers it was


def test_every_figure_in_the_verdict_and_its_details_is_per_save(runs):
    for a, b in ((runs["fork"], runs["forkserver"]), (runs["same"][:1], runs["same"][1:2]),
                 (runs["same"][:2], runs["same"][2:]), (runs["fork"], runs["same"][:2])):
        result = compare.compare(a, b)
        lines = result["verdict"].split("\n") + [line for d in result["details"] for line in d["lines"]
                                                 if d["heading"] != "Noise"]  # the noise's own paragraph
        for line in lines:
            for clause in re.split(r"; |\. ", line):
                assert not SECONDS.search(clause) or "per save" in clause, (clause, line)


def test_a_share_over_all_of_the_difference_says_what_went_the_other_way(runs):
    result = compare.compare(runs["fork"], runs["forkserver"])
    parts = {c["name"]: c for c in result["components"]}
    top, other = parts[result["causes"][0]], parts["generation"]
    difference = top["diff_s"] * 0.8
    other["diff_s"] = -0.25 * top["diff_s"]  # with the rest, what brings the difference below the top cause
    result["difference_s"] = difference
    (_, cause, _) = compare.verdict(result, result["fix"]).split("\n")
    assert cause.endswith(f"per save: more than all of the difference (125%), as the other parts together went "
                          f"the other way by {difference - top['diff_s']:+.2f} s per save, most of it "
                          f"generation {other['diff_s']:+.2f} s.")
    # The table's share column says so too, below it.
    key = " ".join(terminal.compare_text(result).split())
    assert "over 100% where other parts went the other way" in key


def test_the_noise_is_said_once_in_a_contrast(runs, tmp_path):
    a, b = runs["same"][:2], runs["same"][2:]
    recordings = [{"method": m, "repeat": i + 1, "path": s["run"]["path"], "summary": s}
                  for i in range(2) for m, s in (("fork", a[i]), ("forkserver", b[i]))]
    whole = contrast.result(["cmd"], ["fork", "forkserver"], 2, recordings, {})
    noise = whole["comparisons"]["forkserver"]["noise"]
    assert noise["hides"] and whole["noise"]["warnings"], noise
    assert {"heading": "Noise", "lines": [noise["message"]]} in whole["details"]
    text = " ".join(terminal.contrast_text(whole, tmp_path / "contrast.html").split())
    assert text.count(" ".join(noise["message"].split())) == 1
    assert text.count("Noise:") == 1 and "Noise," not in text


def test_a_diagnosis_cost_says_it_is_over_its_saves(runs):
    text = terminal.report_text(runs["forkserver"][0])
    costs = re.findall(r"cost \d+\.\d+ s( over its saves)?", text)
    assert costs and all(costs)


def test_the_html_report_shows_the_verdict_a_line_each_and_its_details_once(runs):
    from writerprof.render import html

    a, b = runs["same"][:2], runs["same"][2:]
    result = compare.compare(a, b)
    doc = html.contrast_html(result, {"A": a, "B": b}, {})
    assert html.verdict_html(result["verdict"]) in doc
    for detail in result["details"]:
        assert doc.count(f"<b>{html._e(detail['heading'])}:</b>") == 1
    assert doc.count(html._e(result["noise"]["message"])) == 1
