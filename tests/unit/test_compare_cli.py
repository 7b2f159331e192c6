"""`writerprof compare` with several runs a side (`A1 A2 -- B1 B2`, or a
pattern a side) on synthetic run directories, and its bad input: one line,
a non-zero exit."""

from __future__ import annotations

import json

import pytest

from writerprof.cli import main
from writerprof.synthetic import Scenario, write_run

SMALL = dict(saves=3, chunks_per_save=8, save_jitter=0.1)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("sides")
    for i in (1, 2):
        write_run(root / f"fork-{i}", Scenario(start_method="fork", seed=i, **SMALL))
        write_run(root / f"forkserver-{i}", Scenario(start_method="forkserver", main_rerun_s=0.3, seed=10 + i, **SMALL))
    (root / "notes.txt").write_text("not a run\n")
    (root / "empty").mkdir()
    return root


def comparison(capsys, *argv) -> dict:
    assert main(["compare", *map(str, argv)]) == 0
    return json.loads(capsys.readouterr().out)


def test_several_runs_a_side_are_pooled(root, capsys):
    result = comparison(capsys, "--json", root / "fork-1", root / "fork-2", "--", root / "forkserver-1",
                        root / "forkserver-2")
    assert result["a"]["runs"] == [str(root / "fork-1"), str(root / "fork-2")]
    assert result["b"]["runs"] == [str(root / "forkserver-1"), str(root / "forkserver-2")]
    assert result["a"]["saves"] == 2 * 2 * SMALL["saves"]  # two runs of two ranks
    assert result["noise"]["unit"] == "repeat" and result["causes"][0] == "startup:main_rerun"


def test_a_pattern_a_side_is_the_runs_it_names(root, capsys):
    listed = comparison(capsys, "--json", root / "fork-1", root / "fork-2", "--", root / "forkserver-1",
                        root / "forkserver-2")
    matched = comparison(capsys, "--json", f"{root}/fork-*", f"{root}/forkserver-*")
    assert matched == listed
    assert comparison(capsys, f"{root}/fork-*", "--", f"{root}/forkserver-[12]", "--json") == listed


def test_a_run_directory_whose_name_looks_like_a_pattern_is_itself(root, capsys):
    write_run(root / "fork[1]", Scenario(start_method="fork", seed=1, **SMALL))
    result = comparison(capsys, "--json", root / "fork[1]", root / "fork-1")
    assert result["a"]["runs"] == [str(root / "fork[1]")]


def test_one_run_a_side_keeps_working_with_the_option_before_or_after(root, capsys):
    before = comparison(capsys, "--json", root / "fork-1", root / "forkserver-1")
    assert before == comparison(capsys, root / "fork-1", root / "forkserver-1", "--json")
    assert before["noise"]["unit"] == "run" and before["a"]["runs"] == [str(root / "fork-1")]
    assert main(["compare", str(root / "fork-1"), str(root / "forkserver-1")]) == 0
    assert "Verdict: forkserver saves are" in capsys.readouterr().out


@pytest.mark.parametrize("argv, code, said", [
    (["{root}/nosuch-*", "{root}/fork-1"], 2, "{root}/nosuch-* (A): the pattern matches no run directory"),
    (["{root}/fork-1"], 2, "no run for B"),
    ([], 2, "no run for A"),
    (["{root}/fork-1", "--"], 2, "no run for B"),
    (["--", "{root}/fork-1"], 2, "no run for A"),
    (["{root}/fork-1", "{root}/fork-2", "{root}/forkserver-1"], 2, "3 runs and no --: put -- between"),
    (["{root}/fork-1", "--", "{root}/fork-2", "--", "{root}/forkserver-1"], 2, "-- twice"),
    (["{root}/fork-1", "{root}/fork-1", "--", "{root}/fork-2"], 2, "{root}/fork-1 is named twice for A"),
    (["{root}/fork-1", "{root}/empty"], 1, "{root}/empty: not a writerprof run directory"),
    (["{root}/fork-1", "{root}/notes.txt"], 1, "{root}/notes.txt: not a directory"),
    (["{root}/fork-1", "{root}/*.txt"], 1, "{root}/notes.txt: not a directory"),
    (["{root}/fork-1", "{root}/gone"], 1, "{root}/gone: no such run directory"),
    (["{root}/fork-1", "--bogus", "{root}/fork-2"], 2, "unrecognized arguments: --bogus"),
])
def test_bad_input_is_one_line_and_a_non_zero_exit(root, capsys, argv, code, said):
    assert main(["compare", *(a.format(root=root) for a in argv)]) == code
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("writerprof compare") and said.format(root=root) in err
