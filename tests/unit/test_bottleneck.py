"""One bottleneck rule, shown: a save's label is the group of components with
the most critical-path seconds, and the save tables show those seconds beside
it, so a start-up column larger than the label's seconds (start-up overlapped
by generation) does not contradict it."""

from __future__ import annotations

import re

import pytest

from writerprof.analysis import saves
from writerprof.analysis.groups import save_indices
from writerprof.analysis.summary import summarize
from writerprof.render import html, terminal
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run


@pytest.fixture(scope="module")
def overlapped(tmp_path_factory):
    """Forkserver writers whose re-run of __main__ (0.9 s) is overlapped by the
    producer generating its four buffers (0.8 s): start-up's own duration is
    about 0.95 s, its critical-path share about 0.15 s, and fsync (0.85 s) bounds the save."""
    path = tmp_path_factory.mktemp("bottleneck") / "run"
    write_run(path, Scenario(start_method="forkserver", main_rerun_s=0.9, gen_s=0.2, buffers=4, chunks_per_save=4,
                             fsync_s=0.85, saves=2, ranks_per_host=1))
    return summarize(load(path))


def _startup_on_path(save):
    return saves.group_seconds(save["critical_path"], "start-up")


def test_the_label_is_the_group_with_the_most_critical_path_seconds(overlapped):
    for save in overlapped["saves"]:
        path = save["critical_path"]
        shares = {group: saves.group_seconds(path, group) for group in saves.BOTTLENECK_GROUPS}
        assert save["bottleneck"] == max(shares, key=shares.get) == "fsync"
        assert save["bottleneck_s"] == pytest.approx(shares["fsync"]) == pytest.approx(path["fsync"])
        # The case of the issue: start-up's column reads more than the label's seconds, its share less.
        assert save["startup_s"] > save["bottleneck_s"] > _startup_on_path(save)


def test_the_text_table_shows_the_label_and_its_seconds(overlapped):
    text = terminal.report_text(overlapped)
    rows = [line.split() for line in text.splitlines() if re.match(r"\s+\d+\s+0\s+\d+\s+\d", line)]
    assert len(rows) == len(overlapped["saves"])
    for row, save in zip(rows, overlapped["saves"]):
        assert row[-2:] == [save["bottleneck"], f"{save['critical_path']['fsync']:.3f}"]
        assert float(row[3]) == pytest.approx(save["startup_s"], abs=5e-4)  # the start-up column, larger
    assert "bound by: most critical-path seconds" in " ".join(text.split())  # the column's key, wrapped
    assert max(map(len, text.splitlines())) <= terminal.WIDTH


def test_the_html_table_shows_the_label_and_its_seconds(overlapped):
    page = html.report_html(overlapped, {})
    for save in overlapped["saves"]:
        assert f"<td>fsync {save['critical_path']['fsync']:.3f}</td>" in page
    assert "<th>bound by</th>" in page


def test_a_save_index_row_shows_its_label_and_the_ranks_critical_path_seconds(overlapped):
    rows = save_indices(overlapped["saves"])
    for row, save in zip(rows, overlapped["saves"]):  # one rank: one save per index
        assert row["bottleneck"] == save["bottleneck"]
        assert row["bottleneck_s"]["mean"] == pytest.approx(save["critical_path"]["fsync"])


def test_the_grouped_text_table_shows_the_mean_seconds_of_its_label(tmp_path):
    path = tmp_path / "wide"
    write_run(path, Scenario(ranks_per_host=32, hosts=2, saves=2, chunks_per_save=8))
    summary = summarize(load(path))
    lines = terminal.report_text(summary).splitlines()
    assert max(map(len, lines)) <= terminal.WIDTH
    for row in summary["save_indices"]:
        mine = [s for s in summary["saves"] if s["save"] == row["save"]]
        mean = sum(saves.group_seconds(s["critical_path"], row["bottleneck"]) for s in mine) / len(mine)
        line = next(line for line in lines if re.match(rf"\s+{row['save']}\s+{len(mine)}\s", line))
        assert line.split()[-2:] == [row["bottleneck"], f"{mean:.3f}"]
