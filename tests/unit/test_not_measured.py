"""A phase the probe had no hook on is not measured: null in the JSON, '-' in
the tables, and no pipeline diagnosis fires from it (synthetic runs whose
gen, put or get calls were not recorded)."""

from __future__ import annotations

import json
import re

import pytest

from writerprof.analysis.summary import summarize
from writerprof.render import html, terminal
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run

GENERATION_BOUND = dict(gen_s=0.05, write_s=0.005, fsync_s=0.01)
WRITER_BOUND = dict(gen_s=0.005, write_s=0.05, fsync_s=0.01)
STALLED = dict(gen_s=0, write_s=0, fsync_s=0, chunk_size=4096, chunks_per_save=2000)


@pytest.fixture
def summary_of(tmp_path):
    def make(**fields) -> dict:
        path = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        write_run(path, Scenario(saves=2, **fields))
        return summarize(load(path))

    return make


def codes(summary) -> set[str]:
    return {d["code"] for d in summary["diagnoses"]}


def test_unhooked_waits_are_null_in_json_and_a_dash_in_the_tables(summary_of):
    summary = summary_of(unhooked="gen,put,get", **GENERATION_BOUND)
    for save in json.loads(json.dumps(summary))["saves"]:
        assert save["gen_s"] is None and save["put_wait_s"] is None and save["get_wait_s"] is None
        assert save["write_s"] > 0  # what was hooked still is
    lines = terminal.report_text(summary).splitlines()
    head = next(line for line in lines if line.startswith("save") and "put-w" in line and "get-w" in line)
    columns, row = head.split(), lines[lines.index(head) + 1].split()
    for name in ("gen", "put-w", "get-w"):
        assert row[columns.index(name)] == "-", (name, head, row)
    page = html.report_html(summary, {})
    table = page[page.index("<h2>Saves"):]
    headers = re.findall(r"<th[^>]*>([^<]*)</th>", table[:table.index("</thead>")])
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", table[table.index("<tbody>"):table.index("</tr>", table.index("<tbody>"))])
    for name in ("gen", "put-wait", "get-wait"):
        assert cells[headers.index(name)] == "-", (name, headers, cells)
    assert cells[headers.index("write")] != "-"


def test_no_pipeline_diagnosis_from_a_side_that_was_not_measured(summary_of):
    assert "generation-bound" in codes(summary_of(**GENERATION_BOUND))  # measured, it fires
    assert "generation-bound" not in codes(summary_of(unhooked="get", **GENERATION_BOUND))
    assert "writer-bound" in codes(summary_of(**WRITER_BOUND))
    assert "writer-bound" not in codes(summary_of(unhooked="put", **WRITER_BOUND))
    assert "queue-stall" in codes(summary_of(**STALLED))
    assert "queue-stall" not in codes(summary_of(unhooked="get", **STALLED))
    # The producer's fill unhooked: its time is not the queue's, so no stall is claimed.
    assert "queue-stall" not in codes(summary_of(unhooked="gen", **STALLED))


def test_a_producer_whose_fill_is_not_hooked_has_its_generation_between_hand_offs(summary_of):
    """Its time between puts is its generation, inferred and said so (analysis.handoffs):
    the same as the hooked fill's of the same run within the puts' own ends and starts."""
    hooked, summary = summary_of(**WRITER_BOUND), summary_of(unhooked="gen", **WRITER_BOUND)
    for truth, s in zip(hooked["saves"], summary["saves"]):
        assert s["gen_from"] == "between hand-offs" and truth["gen_from"] == "calls" and s["put_wait_s"] > 0
        assert truth["gen_s"] <= s["gen_s"] <= truth["gen_s"] * 1.2 + 0.01, (s["gen_s"], truth["gen_s"])
    bound = [d for d in summary["diagnoses"] if d["code"] == "writer-bound"]
    assert len(bound) == 2 and all(d["evidence"]["gen_s"] > 0 for d in bound)  # one per producer


def test_a_producer_whose_fill_and_hand_offs_are_not_hooked_is_judged_by_nothing(summary_of):
    summary = summary_of(unhooked="gen,put", **WRITER_BOUND)
    assert all(s["gen_s"] is None and s["gen_from"] is None for s in summary["saves"])
    assert "writer-bound" not in codes(summary)


def test_an_unknown_phase_is_refused():
    with pytest.raises(ValueError, match="unhooked"):
        Scenario(unhooked="gen,fill")


def test_a_compare_of_runs_without_a_generation_or_hand_off_hook_has_no_own_generation_time(summary_of):
    from writerprof.analysis.compare import compare

    a, b = summary_of(unhooked="gen,put", **WRITER_BOUND), summary_of(unhooked="gen,put", **WRITER_BOUND)
    generation = next(c for c in compare([a], [b])["components"] if c["name"] == "generation")
    assert generation["a_own_s"] is None and generation["b_own_s"] is None and generation["own_diff_s"] is None
    write = next(c for c in compare([a], [b])["components"] if c["name"] == "write")
    assert write["a_own_s"] > 0  # a hooked phase still has its own time
