"""The example outputs in README.md and docs/ keep the shape of what the
commands print now: each tagged block (`<!-- example: NAME -->`) against a
real run of docs/examples/examples.py's NAME, its headed lines in order,
numbers and paths masked (examples.drift)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("doc_examples", ROOT / "docs" / "examples" / "examples.py")
examples = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(examples)

BLOCKS = [(name, where, lines) for name, blocks in sorted(examples.documented().items())
          for where, lines in blocks]


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    work = tmp_path_factory.mktemp("examples")
    made: dict[str, str] = {}

    def output(name: str) -> str:
        if name not in made:
            made[name] = examples.produce(name, work)
        return made[name]

    return output


def test_every_example_is_shown_and_every_block_names_one():
    assert set(examples.documented()) == set(examples.EXAMPLES)


@pytest.mark.parametrize("name, where, lines", BLOCKS, ids=[f"{n}@{w}" for n, w, _ in BLOCKS])
def test_a_documented_example_has_the_shape_of_the_output(outputs, name, where, lines):
    missing = examples.drift(lines, outputs(name))
    assert not missing, (f"{where}: these lines of the example are not what `{name}` prints now "
                         f"(regenerate it with `python docs/examples/examples.py {name}`):\n" + "\n".join(missing))


def test_the_shape_check_sees_a_renamed_heading():
    printed = "=== fork vs forkserver ===\nVerdict: forkserver saves are 0.51 s slower\nfix:\n  - x\n"
    assert not examples.drift(["=== fork vs forkserver ===", "...", "Verdict: forkserver saves are 0.40 s slower"],
                              printed)
    assert examples.drift(["Verdict (old): forkserver saves are 0.40 s slower"], printed)
    assert examples.drift(["fix:", "=== fork vs forkserver ==="], printed)  # out of order


def test_the_verdicts_finding_is_one_shape_whichever_it_is():
    printed = "Verdict: forkserver saves are 0.20 s slower\nClear of the noise though the difference is not: x\n"
    assert not examples.drift(["Verdict: forkserver saves are 0.51 s slower", "Top cause: the writer"], printed)


def test_a_fix_is_checked_only_where_the_run_found_a_cause():
    block = ["Verdict: forkserver saves are 0.51 s slower", "Top cause: the writer", "Best fix: guard", "fix:"]
    assert not examples.drift(block, "Verdict: forkserver saves are 0.2 s slower\nThat is within the noise\n")
    printed = "Verdict: forkserver saves\nTop cause: y\nfix:\nBest fix: z\n"
    assert examples.drift(block, printed) == ["fix:"]  # out of order


def test_a_one_line_verdict_has_no_finding_to_check():
    block = ["Verdict: B (fork) saves are 0.01 s slower", "No cause is named: more runs are needed"]
    assert not examples.drift(block, "Verdict: B (fork) and A (fork) saves take the same time within 1%\n")


def test_a_details_heading_is_checked_only_where_the_run_has_lines_for_it():
    block = ["Verdict: forkserver saves are 0.51 s slower", "Not distinguishable from noise:", "  write +0.13 s",
             "fix:", "Report: /tmp/x"]
    assert not examples.drift(block, "Verdict: forkserver saves are 0.40 s slower\nfix:\nReport: /tmp/y\n")
    printed = "Verdict: forkserver saves\nfix:\nNot distinguishable from noise:\nReport: /tmp/y\n"
    assert examples.drift(block, printed) == ["fix:"]  # out of order, where the run has it
    assert examples.drift(block, "Verdict: forkserver saves\nfix:\n") == ["Report: <path>"]  # the rest still checked
