"""writerprof.render.html: one self-contained file (no external reference),
every diagnosis and the verdict in it, every string from the data escaped,
and tables that aggregate at scale."""

import copy
import re

import pytest
from test_plots import fork_run, forkserver_run, scale_run

from writerprof.analysis.compare import compare
from writerprof.render import html, plots

EXTERNAL = ('src="http', "src='http", "<link", "<script", "@import", "url(http", 'href="http')


def self_contained(doc: str) -> None:
    for needle in EXTERNAL:
        assert needle not in doc.lower(), needle
    # Every image is inline.
    for src in re.findall(r'<img[^>]* src="([^"]*)"', doc):
        assert src.startswith("data:image/"), src[:40]


def section(doc: str, heading: str) -> str:
    """The HTML from a <h2> that starts with `heading` to the next <h2>."""
    start = doc.index(f"<h2>{heading}")
    end = doc.find("<h2>", start + 4)
    return doc[start:end if end >= 0 else len(doc)]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    run, summary = forkserver_run(tmp_path_factory)
    return summary, html.report_html(summary, plots.report_figures(summary))


def test_report_is_self_contained_with_its_plots(report):
    summary, doc = report
    assert doc.startswith("<!DOCTYPE html>")
    self_contained(doc)
    assert doc.count("<img ") == 4
    assert doc.count('src="data:image/png;base64,') == 4
    for name in ("affinity_timeline", "buffer_placement", "chunk_timeline", "save_decomposition"):
        assert f'alt="{name}"' in doc


def test_report_has_the_run_its_diagnoses_and_tables(report):
    summary, doc = report
    assert summary["diagnoses"]
    for diagnosis in summary["diagnoses"]:
        assert f"<code>{diagnosis['code']}</code>" in doc
        assert html._e(diagnosis["message"]) in doc
    assert 'class="diagnosis warning"' in doc
    processes = section(doc, "Processes")
    assert processes.count("<tr>") == 1 + len(summary["processes"])  # the header and a row each
    saves = section(doc, "Saves")
    assert saves.count("<tr>") >= 1 + len(summary["saves"])
    assert "total (mean save)" in saves
    assert f"{summary['throughput']['gib_s']:.2f} GiB/s" in doc


def test_diagnoses_come_most_costly_first(report):
    summary, doc = report
    costly = sorted((d for d in summary["diagnoses"] if d.get("cost_s")), key=lambda d: -d["cost_s"])
    positions = [doc.index(f"<code>{d['code']}</code>") for d in costly]
    assert positions == sorted(positions)


def test_every_string_from_the_data_is_escaped(tmp_path_factory):
    _, summary = fork_run(tmp_path_factory)
    evil = copy.deepcopy(summary)
    evil["run"]["command"] = ["bench.py", "--name", "<script>alert(1)</script>"]
    evil["run"]["path"] = "/runs/<b>bold</b>"
    evil["run"]["losses"] = ["journal <cut> & dropped"]
    evil["processes"][0]["host"] = "<img src=x onerror=alert(2)>"
    evil["diagnoses"] = [{"code": "numa-<mismatch>", "severity": "warning", "host": "h&h", "pid": 1, "rank": 0,
                          "message": "pages on <node 1>", "evidence": {"<key>": "<value>"}, "cost_s": 1.0}]
    doc = html.report_html(evil, {})
    self_contained(doc)
    assert "<script>alert" not in doc and "&lt;script&gt;alert(1)&lt;/script&gt;" in doc
    assert "<b>bold</b>" not in doc and "&lt;b&gt;bold&lt;/b&gt;" in doc
    assert "<img src=x" not in doc and "&lt;img src=x onerror=alert(2)&gt;" in doc
    assert "journal &lt;cut&gt; &amp; dropped" in doc
    assert "numa-&lt;mismatch&gt;" in doc and "pages on &lt;node 1&gt;" in doc and "&lt;value&gt;" in doc


def test_report_at_scale_aggregates_its_tables(tmp_path_factory):
    run, summary = scale_run(tmp_path_factory)
    doc = html.report_html(summary, {"save_decomposition": plots.save_decomposition({"forkserver": [summary]})})
    self_contained(doc)
    processes = section(doc, "Processes")
    assert "one row per host and role" in processes
    assert processes.count("<tr>") == 1 + 8  # 2 hosts x 4 roles
    saves = section(doc, "Saves")
    assert "one row per save index" in saves
    assert saves.count("<tr>") <= 1 + 10 + 1 + 20  # the save indices, then the critical-path table
    for code in {d["code"] for d in summary["diagnoses"]}:
        assert f"<code>{code}</code>" in doc
    assert doc.count('class="diagnosis ') == len({d["code"] for d in summary["diagnoses"]})  # one block per code
    diagnoses = section(doc, "Diagnoses")
    assert diagnoses.count("<tr>") < 200  # the first instances, not all 1,000
    assert "more of the same kind" in diagnoses
    assert len(doc) < 2_000_000


@pytest.fixture(scope="module")
def contrast(tmp_path_factory):
    _, a = fork_run(tmp_path_factory)
    _, b = forkserver_run(tmp_path_factory)
    comparison = compare([a], [b])
    sides = {"fork": [a], "forkserver": [b]}
    figures = {"save_decomposition": plots.save_decomposition(sides),
               "compare_waterfall": plots.compare_waterfall(comparison)}
    return comparison, sides, html.contrast_html(comparison, sides, figures)


def test_contrast_has_the_verdict_first_and_is_self_contained(contrast):
    comparison, sides, doc = contrast
    self_contained(doc)
    verdict = f'<div class="verdict" id="verdict">{html.verdict_html(comparison["verdict"])}</div>'
    assert verdict in doc and verdict.count("<br>") == comparison["verdict"].count("\n") >= 1  # a line each
    assert doc.index(verdict) < doc.index("<h2>")
    assert doc.count("<img ") == 2


def test_contrast_component_table_adds_up_to_the_difference(contrast):
    comparison, sides, doc = contrast
    table = section(doc, "Where the difference goes")
    for c in comparison["components"]:
        assert html._e(c["label"]) in table
    assert "<td>unexplained</td>" in table
    total = table[table.index('<tr class="total">'):]
    assert f"{comparison['difference_s']:+.3f}" in total
    assert f"{comparison['a']['mean_save_s']:.3f}" in total and f"{comparison['b']['mean_save_s']:.3f}" in total
    rows = re.findall(r"<tr[^>]*><td>[^<]*</td><td>[^<]*</td>(?:<td class=\"n\">[^<]*</td>){4}</tr>", table)
    # and the unexplained, the total, and the start-up phases together
    assert len(rows) == len(comparison["components"]) + 3
    assert html._e(comparison["writer_startup"]["label"]) in total


def test_contrast_has_throughput_placement_per_save_and_each_sides_diagnoses(contrast):
    comparison, sides, doc = contrast
    throughput = section(doc, "Throughput")
    assert f"{comparison['throughput']['a_gib_s']:.2f}" in throughput
    assert f"{comparison['throughput']['change']:+.1%}" in throughput
    placement = section(doc, "Placement")
    assert '<tr class="differs"><td>writer parent</td><td>producer</td><td>forkserver</td></tr>' in placement
    assert "Kernel counts" in doc
    per_save = section(doc, "Per save")
    assert per_save.count("<tr>") == 1 + len(comparison["per_save"])
    diagnoses = section(doc, "Diagnoses of each side")
    for label, summaries in sides.items():
        assert f"<h3>{label} (1 run, " in diagnoses
        for d in summaries[0]["diagnoses"]:
            assert f"<code>{d['code']}</code>" in diagnoses


def test_contrast_escapes_labels_and_adds_what_ifs(tmp_path_factory):
    _, a = fork_run(tmp_path_factory)
    _, b = forkserver_run(tmp_path_factory)
    comparison = compare([a], [b])
    comparison["verdict"] = "slower <because> & so"
    result = {"command": ["<script>x</script>"], "methods": ["fork", "forkserver", "forkserver+preload"],
              "repeat": 1, "what_ifs": [{"method": "forkserver+pin", "ran": False, "reason": "<no> change"},
                                        {"method": "forkserver+preload", "ran": True, "gib_s": 1.5,
                                         "recovered_s": 0.25, "recovered_share": 0.8}]}
    doc = html.contrast_html(comparison, {"<evil>": [a], "forkserver": [b]}, {}, result)
    self_contained(doc)
    assert "slower &lt;because&gt; &amp; so" in doc
    assert "&lt;evil&gt;" in doc and "<evil>" not in doc
    assert "&lt;script&gt;x&lt;/script&gt;" in doc
    what_ifs = section(doc, "What-ifs")
    assert "not run: &lt;no&gt; change" in what_ifs and "0.250 s (80%)" in what_ifs


def test_figures_can_be_embedded_as_svg(tmp_path_factory):
    _, summary = fork_run(tmp_path_factory)
    doc = html.report_html(summary, {"save_decomposition": plots.save_decomposition({"fork": [summary]})},
                           image_format="svg")
    self_contained(doc)
    assert doc.count('src="data:image/svg+xml;base64,') == 1
