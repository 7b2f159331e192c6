"""The docs say what the code defines: docs/formats.md names every file, record
field, event kind and constant of the run directory and journal modules; every
subcommand and option has its page; links resolve; the README stays short.
Each check reads the code's own objects, never a list retyped here."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from writerprof import cli
from writerprof.probes import writerprof_probe
from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe import iofile
from writerprof.run import layout

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
FORMATS = DOCS / "formats.md"
MAX_README_LINES = 200

MARKDOWN = [README, *sorted(DOCS.rglob("*.md"))]
# [text](target): inline links; images too. Targets with a scheme are not files.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _sections(path: Path) -> dict[str, str]:
    """Heading line -> the text below it, up to the next heading of any level."""
    out, heading = {}, ""
    for line in _text(path).splitlines():
        if re.match(r"#{1,6} ", line):
            heading = line
            out[heading] = ""
        else:
            out[heading] = out.get(heading, "") + line + "\n"
    return out


def _section(path: Path, needle: str) -> str:
    """The one section whose heading names `needle` (a file name, say)."""
    found = [body for heading, body in _sections(path).items() if needle in heading]
    assert len(found) == 1, f"{path.name}: expected one heading naming {needle!r}, found {len(found)}"
    return found[0]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(h) for h in _sections(path) if h}


def _table_rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("|")]


# --- links and the README ----------------------------------------------------


@pytest.mark.parametrize("doc", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files_that_exist(doc):
    broken = []
    for target in LINK.findall(_text(doc)):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        file, _, anchor = target.partition("#")
        resolved = (doc.parent / file).resolve() if file else doc
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{doc.relative_to(ROOT)}: broken links {broken}"


def test_readme_is_short():
    lines = len(_text(README).splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines; move detail into docs/"


# --- subcommands -------------------------------------------------------------


def _subparsers() -> dict:
    parser = cli.build_parser()
    (action,) = [a for a in parser._actions if a.dest == "command"]
    return action.choices


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_every_subcommand_has_a_page_and_a_readme_row(name):
    assert (DOCS / "commands" / f"{name}.md").is_file(), f"docs/commands/{name}.md is missing"
    first_cells = [row[0] for row in _table_rows(_text(README))]
    assert any(f"`{name}`" in cell and f"docs/commands/{name}.md" in cell for cell in first_cells), (
        f"README's table of subcommands has no row for {name} linking its page")


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_every_option_of_a_subcommand_is_on_its_page(name):
    page = _text(DOCS / "commands" / f"{name}.md")
    options = [opt for action in _subparsers()[name]._actions for opt in action.option_strings
               if opt not in ("-h", "--help")]
    assert options, f"{name} has no options to check"  # the parser is the one we think
    missing = [opt for opt in options if not re.search(rf"`{re.escape(opt)}[` =\[]", page)]
    assert not missing, f"docs/commands/{name}.md does not document {missing}"


# --- docs/formats.md against the run-directory and journal modules ----------


def _file_names() -> dict[str, str]:
    """Every file or directory name the two modules define (NAME_FILE, NAME_DIR,
    NAME_INDEX, NAME_SUFFIX, NAME_LOCK constants)."""
    found = {}
    for module in (layout, journal, iofile):
        for name, value in vars(module).items():
            if isinstance(value, str) and re.fullmatch(r"[A-Z_]+_(FILE|DIR|INDEX|SUFFIX|LOCK)", name):
                found[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] = value
    return found


def _run_tree() -> str:
    trees = [block for block in re.findall(r"```\n(.*?)```", _text(FORMATS), re.S) if block.startswith("RUN/")]
    assert len(trees) == 1, "docs/formats.md needs one code block drawing RUN/"
    return trees[0]


def test_the_run_tree_names_every_file_of_the_layout():
    names = _file_names()
    assert len(names) >= 10  # the constants are where this test looks for them
    tree = _run_tree()
    missing = {const: value for const, value in names.items() if value not in tree}
    assert not missing, f"docs/formats.md's RUN/ tree lacks {missing}"


def _event_kinds() -> set[str]:
    """The kinds format.py's docstring defines, and every kind the probe's code
    journals (`.event("kind", ...)`)."""
    listed = journal.__doc__.split("The kinds:", 1)[1]
    kinds = set()
    for match in re.finditer(r"^  ([a-z_]+(?:, [a-z_]+)*)\s", listed, re.M):
        kinds.update(match.group(1).split(", "))
    written = set()
    for source in Path(writerprof_probe.__file__).parent.glob("*.py"):
        written.update(re.findall(r"\.event\(\s*\"([a-z_]+)\"", source.read_text()))
    assert len(kinds) >= 10 and written, "format.py's docstring no longer lists the kinds after 'The kinds:'"
    return kinds | written


def test_every_journal_event_kind_is_documented():
    events = _section(FORMATS, journal.EVENTS_SUFFIX)
    documented = {cell.strip("`") for row in _table_rows(events) for cell in row[0].split(", ")}
    missing = sorted(_event_kinds() - documented)
    assert not missing, f"docs/formats.md's {journal.EVENTS_SUFFIX} table lacks the kinds {missing}"


def _sampled_kinds() -> set[str]:
    source = inspect.getsource(layout)
    block = source.split(f"# {layout.SAMPLED_FILE} kinds", 1)
    assert len(block) == 2, f"layout.py no longer lists the {layout.SAMPLED_FILE} kinds in a comment"
    kinds = set()
    for line in block[1].splitlines()[1:]:
        if not line.startswith("#"):
            break
        match = re.match(r"#   ([a-z_]+)\s{2,}", line)
        if match:
            kinds.add(match.group(1))
    assert kinds
    return kinds


def test_every_sampled_kind_is_documented():
    rows = _table_rows(_section(FORMATS, layout.SAMPLED_FILE))
    documented = {row[0].strip("`") for row in rows}
    missing = sorted(_sampled_kinds() - documented)
    assert not missing, f"docs/formats.md's {layout.SAMPLED_FILE} table lacks {missing}"


@pytest.mark.parametrize("file_name, fields, record", [
    (journal.CHUNKS_SUFFIX, journal.CHUNK_FIELDS, journal.CHUNK),
    (layout.SAMPLES_FILE, layout.SAMPLE_FIELDS, layout.SAMPLE),
    (layout.THREADS_FILE, layout.THREAD_SAMPLE_FIELDS, layout.THREAD_SAMPLE),
    (layout.CPUS_FILE, layout.CPU_SAMPLE_FIELDS, layout.CPU_SAMPLE),
    (journal.SHM_SUFFIX, journal.SHM_FIELDS, journal.SHM),
    (journal.PLACEMENT_SUFFIX, journal.PLACEMENT_FIELDS, journal.PLACEMENT),
], ids=["chunk", "sample", "thread", "cpu", "shm", "placement"])
def test_every_record_field_is_documented_with_its_type(file_name, fields, record):
    section = _section(FORMATS, file_name)
    assert f"`{record.format}`" in section, f"the struct format {record.format} is not in the {file_name} section"
    assert f"{record.size} bytes" in section, f"the record size ({record.size} bytes) is not in the {file_name} section"
    rows = {row[0].strip("`"): row[1].strip("`") for row in _table_rows(section) if len(row) > 2}
    wrong = [(name, code, rows.get(name)) for name, code in fields if rows.get(name) != code]
    assert not wrong, f"{file_name} fields (name, type, documented type) wrong or missing: {wrong}"
    documented = [name for name in rows if name not in ("field", "---")]
    assert documented == [name for name, _ in fields], "fields documented out of order, or extra ones"


def test_every_io_record_field_and_op_is_documented():
    section = _section(FORMATS, iofile.IO_DIR + "/PID-INIT_NS" + iofile.IO_SUFFIX)
    assert f"{iofile.RECORD_BYTES} bytes" in section and f"{iofile.HEADER_BYTES} bytes" in section
    rows = {}
    for row in _table_rows(section):
        for name in row[0].split(", "):
            rows[name.strip("`")] = row[1].strip("`")
    wrong = [(name, code, rows.get(name)) for name, code in iofile.IO_FIELDS if rows.get(name) != code]
    assert not wrong, f"I/O record fields (name, type, documented type) wrong or missing: {wrong}"
    ops = {op: code for op, code in iofile.OPS.items() if f"{op} {code}" not in section}
    assert not ops, f"I/O ops missing or with another code in docs/formats.md: {ops}"


def test_every_phase_is_documented_with_its_code():
    rows = {row[0].strip("`"): row[1] for row in _table_rows(_section(FORMATS, "Phases"))}
    wrong = {phase: code for phase, code in journal.PHASES.items() if rows.get(phase) != str(code)}
    assert not wrong, f"phases missing or with another code in docs/formats.md: {wrong}"


def test_every_journal_constant_is_documented_with_its_value():
    constants = {name: value for name, value in vars(journal).items()
                 if re.fullmatch(r"[A-Z][A-Z_]*", name) and type(value) is int}
    assert {"FLUSH_RECORDS", "FLUSH_NS"} <= constants.keys()
    rows = {row[0].strip("`"): row[1] for row in _table_rows(_section(FORMATS, "Constants"))}
    wrong = {name: value for name, value in constants.items() if rows.get(name) != str(value)}
    assert not wrong, f"constants missing or with another value in docs/formats.md: {wrong}"


def test_every_environment_variable_of_the_probe_is_documented():
    """format.py's NAME_ENV constants, and every WRITERPROF_* name the probe's
    code reads: the probe owns these names."""
    variables = {value for name, value in vars(journal).items()
                 if name.endswith("_ENV") and isinstance(value, str)}
    for source in Path(writerprof_probe.__file__).parents[1].rglob("*.py"):
        variables.update(re.findall(r"[\"'](WRITERPROF_[A-Z_]*[A-Z])[\"']", source.read_text()))
    assert "WRITERPROF_RUN" in variables  # the scan finds the names where they are
    rows = {row[0].strip("`") for row in _table_rows(_section(FORMATS, "Environment"))}
    missing = sorted(variables - rows)
    assert not missing, f"docs/formats.md's Environment table lacks {missing}"


def test_run_json_names_its_format():
    assert f"`{layout.FORMAT}`" in _section(FORMATS, layout.RUN_FILE)


def test_the_diagnosis_table_is_the_one_the_checks_declare():
    from writerprof.analysis.diagnoses import CODES

    text = _text(ROOT / "docs" / "commands" / "report.md")
    documented = [row for row in _table_rows(text) if row and row[0].startswith("`") and row[0].strip("`") in CODES]
    expected = [[f"`{c.code}`", " / ".join(c.severities), c.meaning] for c in CODES.values()]
    assert documented == expected, ("docs/commands/report.md's diagnosis table differs from diagnoses.CODES; "
                                    "its rows should be:\n" + "\n".join(f"| {' | '.join(r)} |" for r in expected))
