"""writerprof.render.html as a person reads it, on synthetic runs: what was
not measured is "-", never 0.000 (report.md promises it); evidence in the
units one reads (seconds with the digits that matter, shares in %); and each
action of a fix once per process, a later warning pointing at the earlier."""

import re

import pytest
from test_html import section
from test_plots import SMALL, forkserver_run, fork_run, recorded

from writerprof.analysis.compare import compare
from writerprof.render import evidence, html
from writerprof.render.markup import _table

UNHOOKED = dict(SMALL, unhooked="gen,put,get")  # a producer's fill and a queue no hook sees


def _evidence_rows(doc: str, code: str) -> dict[str, str]:
    """A diagnosis's evidence table in the page: key -> the text shown."""
    start = doc.index(f"<code>{code}</code>")
    block = doc[start:doc.index('<div class="fix">', start) if '<div class="fix">' in doc[start:] else None]
    return dict(re.findall(r"<tr><th>([^<]*)</th><td>([^<]*)</td></tr>", block))


def _rows(table_html: str) -> list[list[str]]:
    body = table_html[table_html.index("<tbody>"):table_html.index("</tbody>")]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in body.split("<tr")[1:]]


def test_a_wait_no_hook_saw_is_not_measured_in_the_evidence(tmp_path_factory):
    """A writer whose gets are not hooked has no measured wait for its first
    chunk: writer-startup's first_chunk_s is null, "-" on the page."""
    _, summary = recorded(tmp_path_factory, **UNHOOKED, start_method="forkserver", main_rerun_s=0.3)
    (startup,) = [d for d in summary["diagnoses"] if d["code"] == "writer-startup"]
    assert startup["evidence"]["first_chunk_s"] is None
    assert _evidence_rows(html.report_html(summary), "writer-startup")["first_chunk_s"] == "-"
    _, hooked = forkserver_run(tmp_path_factory)
    (startup,) = [d for d in hooked["diagnoses"] if d["code"] == "writer-startup"]
    assert startup["evidence"]["first_chunk_s"] is not None


def test_a_fork_save_has_no_rerun_to_show(tmp_path_factory):
    """The re-run column of a fork writer (no __main__ re-run) is "-", as in
    the terminal's table, not 0.000."""
    _, summary = fork_run(tmp_path_factory)
    saves = section(html.report_html(summary), "Saves")
    rows = _rows(saves[:saves.index("</table>") + 8])
    assert [row[6] for row in rows] == ["-"] * len(summary["saves"])
    _, forkserver = forkserver_run(tmp_path_factory)
    saves = section(html.report_html(forkserver), "Saves")
    assert all(row[6] == "0.300" for row in _rows(saves[:saves.index("</table>") + 8]))


def test_a_component_no_hook_saw_is_not_measured_in_a_contrast(tmp_path_factory):
    """Neither side's producer hooked its fill: generation's row is "-" on
    both sides, its difference and share too, and says why."""
    _, a = recorded(tmp_path_factory, **UNHOOKED, start_method="fork")
    _, b = recorded(tmp_path_factory, **UNHOOKED, start_method="forkserver", main_rerun_s=0.3)
    doc = html.contrast_html(compare([a], [b]), {"fork": [a], "forkserver": [b]})
    table = section(doc, "Where the difference goes")
    (generation,) = [row for row in _rows(table) if row[0] == "generation"]
    assert generation[2:] == ["-", "-", "-", "-"] and "not measured" in generation[1]
    (write,) = [row for row in _rows(table) if row[0] == "write"]
    assert write[2] != "-" and write[3] != "-"


def test_a_table_cell_of_none_is_a_dash():
    assert "<td>-</td>" in _table(["x"], [[None]]) and "<td></td>" not in _table(["x"], [[None]])


def test_evidence_is_in_units_one_reads(tmp_path_factory):
    """Seconds with a unit and the digits that matter (µs under a
    millisecond), shares in %, no bare float."""
    _, summary = forkserver_run(tmp_path_factory)
    rows = _evidence_rows(html.report_html(summary), "writer-startup")
    assert re.fullmatch(r"\d+%", rows["share"]) and re.fullmatch(r"\d+%", rows["interval_coverage"])
    assert rows["critical_s"].endswith(" s") and rows["first_chunk_s"].endswith(("s", "-"))
    assert "bootstrap: 200 µs" in rows["phases_s"] and "main_rerun: 0.300 s" in rows["phases_s"]
    assert not re.search(r"e-\d", "".join(rows.values()))
    for key, shown in rows.items():
        if evidence.unit_of(key) == evidence.SECONDS:
            assert re.search(r"(s|-)$", shown), (key, shown)


@pytest.mark.parametrize("key, value, shown", [
    ("first_chunk_s", 6.92e-05, "69 µs"), ("first_chunk_s", 0.0, "0 s"), ("save_s", 0.5714, "0.571 s"),
    ("critical_s", 12.345, "12.35 s"), ("share", 0.942, "94%"), ("own_share", 0.004, "0.4%"),
    ("run_nodes", {"0": 0.9, "1": 0.1}, "0: 90%, 1: 10%"), ("extra_nodes", [1, 3], "1, 3"),
    ("phases_s", {"start": 0.003, "unpickle": 7.41e-05}, "start: 0.003 s, unpickle: 74 µs"),
    ("allowed_cpus", [0, 1, 2, 3, 8], "0-3,8"), ("first_chunk_s", None, "-"), ("faults_per_page", 2.5, "2.5"),
    ("waited", [{"tid": 7, "wait_s": 0.0021, "nodes": {"0": 1.0}}], "(tid: 7, wait_s: 0.002 s, nodes: 0: 100%)"),
])
def test_evidence_value(key, value, shown):
    assert evidence.value(key, value) == shown


def test_each_fix_action_is_shown_once_per_process(tmp_path_factory):
    """writer-startup's fix begins with main-reimport's (one producer, one
    JSON list each): the page lists each action once, under the first of
    the two, and the other points at it."""
    _, summary = forkserver_run(tmp_path_factory)
    fixes = {d["code"]: d["fix"] for d in summary["diagnoses"] if d.get("fix")}
    assert {"writer-startup", "main-reimport"} <= set(fixes)
    shared = {a["id"] for a in fixes["main-reimport"]} & {a["id"] for a in fixes["writer-startup"]}
    assert shared
    doc = html.report_html(summary)
    for action in fixes["writer-startup"] + fixes["main-reimport"]:
        assert doc.count(f"<li>{html._e(action['what'])};") == 1, action["id"]
    first, second = sorted(("writer-startup", "main-reimport"), key=lambda code: doc.index(f"<code>{code}</code>"))
    later = doc[doc.index(f"<code>{second}</code>"):]
    assert f"the {len(shared)} action{'s' * (len(shared) != 1)} under <code>{first}</code> above" in later
