"""The one table formatter (render.table) and the tables of compare's,
contrast's and report's text at 80 and 120 columns: every row's cells start
(labels) or end (numbers) where their column's header does, whatever the
width, and no line is wider than it where a column can be dropped or a label
wrapped."""

from __future__ import annotations

import re

import pytest

from writerprof.analysis import compare, contrast
from writerprof.analysis.summary import summarize
from writerprof.render import terminal
from writerprof.render.table import Column, table
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run

CELL = re.compile(r"\S+(?: \S+)*")  # a cell: words one space apart (columns are two apart)


def misaligned(lines: list[str], header: int, indent: int = 2, sub: bool = False) -> list[str]:
    """The rows under lines[header] with a cell that neither starts where a
    header starts nor ends where one ends (a label column without a header
    starts at the indent; sub: a label may be indented two more, a sub-row)."""
    heads = [(m.start(), m.end()) for m in CELL.finditer(lines[header])]
    starts, ends = {s for s, _ in heads} | {indent} | ({indent + 2} if sub else set()), {e for _, e in heads}
    return [line for line in lines[header + 1:]
            if any(m.start() not in starts and m.end() not in ends for m in CELL.finditer(line))]


COLUMNS = [Column("part", left=True, wrap=True), Column("A"), Column("B"), Column("B - A"),
           Column("±95%", key="±95%: half the interval's width"), Column("share", drop=2),
           Column("own B - A", drop=1, key="own: its own calls")]
ROWS = [["start-up: __main__ re-run", "0.000", "0.352", "+0.352", "±0.04", "69%", "+0.450"],
        ["unexplained (no recorded activity)", "0.001", "0.002", "+0.000", "", "0%", ""],
        ["total: the mean save", "0.682", "1.191", "+0.508", "±0.43", "", ""],
        ["queue", "0.004", "0.004", "+0.000", "±0.002", "noise", "-"]]


@pytest.mark.parametrize("width", [80, 120])
def test_every_row_starts_its_columns_where_the_header_does(width):
    lines = table(COLUMNS, ROWS, width)
    assert misaligned(lines[:len(ROWS) + 1], 0) == []
    assert max(map(len, lines)) <= width


def test_a_wide_table_drops_its_least_column_first_then_wraps_its_labels():
    wide = [["a label of forty-five characters, more or less", "1.000", "2.000", "+1.000", "±0.50", "50%",
             "+1.000"]]
    full = table(COLUMNS, wide, 120)
    assert "own B - A" in full[0] and len(full) == 2 + 1  # header, row, key
    narrow = table(COLUMNS, wide, 60)
    assert "own B - A" not in narrow[0] and "share" not in narrow[0]  # dropped, highest `drop` first
    assert narrow[-1] == "  ±95%: half the interval's width"  # the key of the columns shown only
    rows = narrow[1:-1]
    assert len(rows) == 2 and max(map(len, narrow)) <= 60  # the label wrapped onto a second line
    assert rows[1].strip() == "characters, more or less" and misaligned(narrow[:-1], 0) == []


def test_a_word_longer_than_its_wrapped_column_is_cut_not_overflowing():
    lines = table([Column("cpus", left=True, wrap=True), Column("n")], [["0-47,96-143,192-239,288-335", "7"]], 18)
    assert max(map(len, lines)) <= 18 and misaligned(lines, 0) == []


def _summary(path, **fields) -> dict:
    write_run(path, Scenario(**fields))
    return summarize(load(path))


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    root = tmp_path_factory.mktemp("table") / "runs"
    fork = [_summary(root / f"{i:02d}-fork", jitter=0.2, seed=i) for i in (1, 3)]
    forkserver = [_summary(root / f"{i:02d}-forkserver", start_method="forkserver", main_rerun_s=0.5, jitter=0.2,
                           seed=i) for i in (2, 4)]
    return fork, forkserver


# The titles of a compare's tables (the first, the overview, has none).
TITLES = ("Where the time of a save goes", "Start-up phases", "Placement", "Kernel counts", "Per save", "Per rank")


def _tables(text: str) -> list[tuple[list[str], int]]:
    """Each table of a compare's text: its header and rows (the key left out), and its indent."""
    found = []
    for block in text.split("\n\n"):
        lines = block.splitlines()
        if lines and lines[0].startswith(TITLES):
            lines, indent = lines[1:], 2
        elif lines and lines[0].lstrip().startswith("A ") and lines[0].startswith(" "):  # the overview
            indent = 0
        else:
            continue
        key = next((i for i, line in enumerate(lines) if line.startswith("  ±95%:")), len(lines))
        found.append((lines[:key], indent))
    return found


@pytest.mark.parametrize("width", [80, 120])
def test_compare_text_is_aligned_and_fits(sides, width):
    result = compare.compare(*sides)
    text = terminal.compare_text(result, width)
    tables = _tables(text)
    assert len(tables) >= 4  # the overview, the parts, the start-up phases, per save
    for lines, indent in tables:
        assert misaligned(lines, 0, indent) == [], "\n".join(lines)
    assert max(map(len, text.splitlines())) <= width
    parts = next(lines for lines, _ in tables if lines[0].startswith("  part "))
    assert ("own B - A" in parts[0]) == (width == 120)  # the part's own duration: dropped at 80 columns
    assert "…" not in text and "01-fork, 03-fork" in " ".join(text.split())  # the runs by their directory's name


@pytest.mark.parametrize("width", [80, 120])
def test_report_text_is_aligned_and_fits(sides, width):
    summary = sides[1][0]
    lines = terminal.report_text(summary, width).splitlines()
    # Its tables are one space apart: each number ends where its header does.
    for title, first, count, numbers in (
            ("Processes (", "host ", len(summary["processes"]), ("pid", "faults")),
            ("Saves (", "save ", len(summary["saves"]), ("save", "writer", "start-up", "total"))):
        titled = next(i for i, line in enumerate(lines) if line.startswith(title))
        at = next(i for i in range(titled, len(lines)) if lines[i].startswith(first))  # its title may wrap
        header, rows = lines[at], lines[at + 1:at + 1 + count]
        for name in numbers:
            end = re.search(rf"(?<!\S){re.escape(name)}(?!\S)", header).end()
            assert all(row[end - 1] != " " and row[end:end + 1] in ("", " ") for row in rows), (name, header, rows)
    # A path too long for the width has a line of its own, whole: nothing else is over.
    assert all(len(line) <= width or len(line.split()) == 1 for line in lines)


def test_contrast_text_at_80_columns(sides, tmp_path):
    fork, forkserver = sides
    runs = [{"method": m, "repeat": i + 1, "path": s["run"]["path"], "summary": s}
            for i in range(2) for m, s in (("fork", fork[i]), ("forkserver", forkserver[i]))]
    result = contrast.result(["cmd"], ["fork", "forkserver"], 2, runs, {})
    text = terminal.contrast_text(result, tmp_path / "contrast.html", 80)
    assert [line for line in text.splitlines() if len(line) > 80 and not line.startswith("Report: ")] == []
    for lines, indent in _tables(text):
        assert misaligned(lines, 0, indent) == [], "\n".join(lines)


@pytest.mark.parametrize("width", [80, 120])
def test_a_programs_contrast_text_is_aligned_and_fits(width, tmp_path):
    from test_program_contrast import CONTEXT, FORK, run

    from writerprof.analysis import program_contrast
    from writerprof.render import programs

    slow = [run(1.81, main_rerun=0.30), run(1.83, main_rerun=0.32), run(1.80, main_rerun=0.29)]
    comparison = program_contrast.compare(FORK, slow, ("fork", "forkserver"), fix_context=CONTEXT)
    text = programs.contrast_text({"comparisons": {"forkserver": comparison}, "what_ifs": [], "runs": []},
                                  tmp_path / "contrast.html", width)
    lines = text.splitlines()
    for header in ("  wall time", "  per child"):  # (a header wraps too, at 80 columns)
        at = next(i for i, line in enumerate(lines) if line.startswith(header))
        end = next(j for j in range(at, len(lines)) if not lines[j])
        assert misaligned(lines[at:end], 0, sub=True) == [], "\n".join(lines[at:end])
    assert [line for line in lines if len(line) > width and not line.startswith("Report: ")] == []
