"""Advice that works where it is given (analysis.fixes, analysis.preload):
'__main__' preloaded only where the interpreter honours it, the submodules
that cost named, minor imports dropped, one entry per fix, nothing the run
already does, and no recovery above a measured difference."""

from __future__ import annotations

import copy

import pytest

from writerprof.analysis import fixes, preload
from writerprof.analysis.compare import side
from writerprof.analysis.fixes import Target
from writerprof.analysis.preload import Forkserver
from writerprof.run.stacks import ProcessStacks

SCRIPT = "/work/bench/train.py"
# CPython's forkserver command lines: 3.11.7 (the script's path never passed), and a fixed one.
ARGV_311 = ["/usr/bin/python3.11", "-B", "-c", "from multiprocessing.forkserver import main; main(5, 6, "
            "['__main__', 'numpy'], **{'sys_path': ['/work/bench', '/usr/lib/python3.11']})"]
ARGV_FIXED = ["/usr/bin/python3.14", "-c", "from multiprocessing.forkserver import main; main(5, 6, ['__main__'], "
              "**{'sys_path': ['/work/bench'], 'main_path': '/work/bench/train.py', 'authkey_r': 9})"]


def reimport(python, method="forkserver", per_writer=0.6, cost=1.2, writers=3) -> dict:
    return {"code": "main-reimport", "severity": "warning", "host": "h", "pid": 1, "rank": -1, "message": "",
            "evidence": {"per_writer_s": per_writer, "writers": writers, "main": SCRIPT, "python": python,
                         "start_method": method},
            "cost_s": cost}


def by_id(fix) -> dict:
    return {a["id"]: a for a in fix}


@pytest.mark.parametrize("python, honoured", [
    ("3.9.18", False), ("3.11.7", False), ("3.12.12", False), ("3.13.0", False), ("3.13.7", False),
    ("3.13.8", True), ("3.14.0", False), ("3.14.1", True), ("3.15.0", True), (None, None), ("unknown", None)])
def test_main_in_the_preload_list_is_honoured_from_the_fixed_releases(python, honoured):
    assert preload.honours_main(python) is honoured


def test_a_recorded_forkserver_says_it_for_itself_whatever_the_version():
    ignored = preload.from_argv(ARGV_311)
    assert ignored == Forkserver(("__main__", "numpy"), None)
    assert preload.honours_main("3.13.8", ignored) is False  # a distribution's 3.13.8 without the fix
    fixed = preload.from_argv(ARGV_FIXED)
    assert fixed == Forkserver(("__main__",), "/work/bench/train.py")
    assert preload.honours_main("3.12.1", fixed) is True  # one with it backported
    # No list: the daemon was given nothing, which says nothing of the interpreter.
    assert preload.honours_main("3.13.8", Forkserver((), None)) is True
    # The newest line (gh-144503) hands on the parent's arguments, not a literal, after the preload.
    newest = ["/usr/bin/python3.14", "-c", "import sys; from multiprocessing.forkserver import main; main(5, 6, "
              "['__main__'], sys_argv=sys.argv[1:], **{'main_path': '/work/bench/train.py', 'authkey_r': 9})",
              "--epochs", "3"]
    assert preload.from_argv(newest) == Forkserver(("__main__",), "/work/bench/train.py")
    for argv in (["python", "-c", "main(5, 6, not_a_literal)"], ["python", "-c", "syntax error("], ["python"]):
        assert preload.from_argv(argv) is None


def test_the_advice_differs_by_the_identity_lines_python():
    target = Target(main=SCRIPT, imports=[("numpy", 0.5, 3), ("slow_import", 1 / 3, 4)])  # of a 0.6 s re-run
    old = by_id(fixes.for_diagnosis(reimport("3.11.7"), target, 3))
    new = by_id(fixes.for_diagnosis(reimport("3.13.8"), target, 3))
    # 3.11: '__main__' would be skipped; the modules the re-run imports are what a preload can spare.
    assert old[fixes.PRELOAD_ID]["modules"] == ["numpy", "slow_import"]
    assert "set_forkserver_preload(['numpy', 'slow_import'])" in old[fixes.PRELOAD_ID]["what"]
    assert "Python 3.11.7 ignores it there (gh-126631" in old[fixes.PRELOAD_ID]["what"]
    assert old[fixes.PRELOAD_ID]["recovery_s"] == pytest.approx(0.4 * 5 / 6)  # the imports' part only
    # 3.13.8: the forkserver runs the script once; all of the re-run is spared.
    assert new[fixes.PRELOAD_ID]["modules"] == ["__main__"]
    assert "honours '__main__'" in new[fixes.PRELOAD_ID]["what"]
    assert new[fixes.PRELOAD_ID]["recovery_s"] == pytest.approx(0.4)
    # What works on either: the guard, python -m.
    assert old[fixes.GUARD_ID] == new[fixes.GUARD_ID] and old["python-m"] == new["python-m"]


def test_spawn_writers_are_told_to_start_with_forkserver_to_preload():
    fix = by_id(fixes.for_diagnosis(reimport("3.11.7", method="spawn"), Target(imports=[("numpy", 0.5, 3)]), 3))
    assert fix[fixes.PRELOAD_ID]["what"].startswith("start the writers with forkserver and preload the modules")


def stack(*files_and_lines) -> tuple:
    """A writer's stack under spawn's prepare: the script at a line, importing these files' modules."""
    prepare = ("<module> (bench.py:1)", "_main (multiprocessing/spawn.py:120)",
               "prepare (multiprocessing/spawn.py:230)",
               "_fixup_main_from_path (multiprocessing/spawn.py:290)", "run_path (runpy.py:287)")
    line, *files = files_and_lines
    loading = "_find_and_load (<frozen importlib._bootstrap>:1360)"
    inner = tuple(x for f in files for x in (loading, f"<module> ({f}:1)"))
    return prepare + (f"<module> (train.py:{line})",) + inner


def test_a_preload_names_the_submodule_the_script_imported():
    samples = {stack(5, "scipy/__init__.py"): 10,  # `import scipy.linalg`: its package first...
               stack(5, "scipy/linalg/__init__.py"): 20,  # ... then the submodule
               stack(5, "scipy/linalg/__init__.py", "scipy/linalg/_basic.py"): 10,  # and what it imports
               stack(3, "numpy/__init__.py", "numpy/core/__init__.py"): 25,
               stack(9): 35}  # the script's own top level, importing nothing
    writer = ProcessStacks(proc=1, pid=9, host="h", role="writer", samples=samples, rate_hz=100.0)
    assert fixes.imports_of([writer], "train.py") == [("scipy.linalg", 0.4, 5), ("numpy", 0.25, 3)]
    fix = by_id(fixes.for_diagnosis(reimport("3.11.7"), Target(imports=fixes.imports_of([writer], "x")), 3))
    assert fix[fixes.PRELOAD_ID]["modules"] == ["scipy.linalg", "numpy"]
    assert fixes.module_of("scipy/linalg/__init__.py") == "scipy.linalg"
    assert fixes.module_of("slow_import.py") == "slow_import"
    for not_a_module in ("<frozen importlib._bootstrap>", "/abs/path.py", "data.json", "my-dir/x.py"):
        assert fixes.module_of(not_a_module) is None


def test_imports_under_five_percent_of_the_re_run_are_not_advised():
    # import multiprocessing at 0.01 s of a 0.3 s re-run: 3%.
    target = Target(imports=[("numpy", 0.8, 3), ("multiprocessing.pool", 0.01 / 0.3, 2)])
    fix = by_id(fixes.for_diagnosis(reimport("3.11.7", per_writer=0.3), target, 3))
    assert "multiprocessing" not in fix[fixes.GUARD_ID]["what"] and fix[fixes.GUARD_ID]["modules"] == ["numpy"]
    assert fix[fixes.PRELOAD_ID]["modules"] == ["numpy"]
    # Nothing but minor imports: nothing to preload on a Python that skips '__main__'.
    minor = by_id(fixes.for_diagnosis(reimport("3.11.7", per_writer=0.3), Target(imports=[("six", 0.03, 2)]), 3))
    assert fixes.PRELOAD_ID not in minor and minor[fixes.GUARD_ID]["modules"] == []


def test_against_a_difference_minor_estimates_go_and_none_exceeds_it():
    fix = fixes.for_diagnosis(reimport("3.11.7", cost=3 * 0.39), Target(imports=[("numpy", 0.5, 3)]), 3)
    measured = fixes.measured(fix, {"forkserver+preload": {"recovered_s": 0.01, "ci95_s": [-0.02, 0.04],
                                                           "modules": ["numpy"]}})
    out = by_id(fixes.for_difference(measured, 0.27))
    # python -m estimated 0.39 s of a measured 0.27 s difference: capped, and said so.
    assert out["python-m"]["recovery_s"] == 0.27 and out["python-m"]["capped_from_s"] == pytest.approx(0.39)
    assert fixes.recovery_text(out["python-m"]) == ("recovers 0.27 s per save (estimated at 0.39 s, capped at "
                                                    "the measured difference)")
    # A measured recovery stays, however small: it is what the advice did.
    assert out[fixes.PRELOAD_ID]["recovery_s"] == 0.01
    # ... but where its interval holds no change, it is not said to recover anything.
    assert fixes.recovery_text(out[fixes.PRELOAD_ID]) == ("may recover 0.01 s per save, not told apart from none "
                                                           "(measured by forkserver+preload; 95% interval -0.02 to "
                                                           "0.04 s)")
    resolved = fixes.measured(fix, {"forkserver+preload": {"recovered_s": 0.03, "ci95_s": [0.01, 0.05],
                                                           "modules": ["numpy"]}})
    assert fixes.recovery_text(by_id(fixes.for_difference(resolved, 0.27))[fixes.PRELOAD_ID]) == (
        "recovers 0.03 s per save (measured by forkserver+preload; 95% interval 0.01 to 0.05 s)")
    # Against a far larger difference, an estimate under 5% of it is no fix worth listing.
    assert "python-m" not in by_id(fixes.for_difference(measured, 10.0))
    assert fixes.for_difference(measured, -0.27) == list(out.values())  # either way round


def test_a_fix_the_run_already_applies_is_not_advised_again():
    imports = [("scipy.linalg", 0.4, 5)]
    # Fork writers are not told to fork.
    fork_run = Target(imports=imports, start_methods=frozenset({"fork"}))
    assert "fork" not in by_id(fixes.for_diagnosis(reimport("3.11.7"), fork_run, 3))
    # The case: __main__, numpy, scipy preloaded on 3.11, scipy.linalg still imported by every writer:
    # only what is missing is added, and __main__ is left out of the list, as 3.11 skips it.
    own = Forkserver(("__main__", "numpy", "scipy"), None)
    fix = by_id(fixes.for_diagnosis(reimport("3.11.7"), Target(imports=imports, forkserver=own), 3))
    assert fix[fixes.PRELOAD_ID]["modules"] == ["numpy", "scipy", "scipy.linalg"]
    # Once scipy.linalg is preloaded too, the re-run imports nothing costly: no preload advice comes back.
    done = Forkserver(("__main__", "numpy", "scipy", "scipy.linalg"), None)
    again = by_id(fixes.for_diagnosis(reimport("3.11.7"), Target(forkserver=done), 3))
    assert fixes.PRELOAD_ID not in again and {fixes.GUARD_ID, "python-m", "fork"} <= set(again)
    # Where __main__ is honoured and already listed, it is not advised either.
    honoured = Forkserver(("__main__",), SCRIPT)
    assert fixes.PRELOAD_ID not in by_id(fixes.for_diagnosis(reimport("3.13.8"), Target(forkserver=honoured), 3))


def test_no_warning_tells_its_own_writers_to_start_with_the_method_they_use():
    """In a run whose writers start with fork and with forkserver, a warning about the fork ones does
    not advise fork, nor one about the forkserver ones forkserver."""
    mixed = Target(start_methods=frozenset({"fork", "forkserver"}))
    diverged = {"code": "affinity-divergence", "severity": "warning", "host": "h", "pid": 1, "rank": -1,
                "message": "", "evidence": {"producer_cpus": [0, 1], "start_method": "fork"}, "cost_s": None}
    assert "fork" not in by_id(fixes.for_diagnosis(diverged, mixed, 3))
    assert "fork" in by_id(fixes.for_diagnosis({**diverged, "evidence": {"start_method": "forkserver"}}, mixed, 3))
    spawned = {**reimport("3.11.7", method="spawn"), "code": "writer-startup"}
    assert {"forkserver", "fork"} <= set(by_id(fixes.for_diagnosis(spawned, mixed, 3)))
    served = {**spawned, "evidence": {**spawned["evidence"], "start_method": "forkserver"}}
    assert "forkserver" not in by_id(fixes.for_diagnosis(served, mixed, 3))


def test_a_module_in_the_list_that_the_writers_still_import_is_said_to_have_failed():
    own = Forkserver(("__main__", "slow_import"), None)
    fix = by_id(fixes.for_diagnosis(reimport("3.11.7"), Target(imports=[("slow_import", 0.5, 4)], forkserver=own), 3))
    assert fix[fixes.PRELOAD_ID]["modules"] == ["slow_import"]
    assert "slow_import: in this run's list already, yet the writers imported it" in fix[fixes.PRELOAD_ID]["what"]


def test_a_target_in_main_keeps_the_advice_that_works_for_it():
    target = Target(imports=[("numpy", 0.5, 3)], in_main="__mp_main__.write_file")
    fix = by_id(fixes.for_diagnosis(reimport("3.11.7"), target, 3))
    assert "inside the functions that use them" in fix[fixes.GUARD_ID]["what"]
    assert "(__mp_main__.write_file) must then live in a module of its own" in fix["python-m"]["what"]
    assert fixes.target_of([{"target": "__mp_main__.write_file", "start_method": "forkserver"}], [], None).in_main \
        == "__mp_main__.write_file"


@pytest.fixture(scope="module")
def forkserver_runs(tmp_path_factory):
    """Two synthetic forkserver runs whose writers re-run __main__: (loaded run, summary) each."""
    from writerprof.analysis.summary import summarize
    from writerprof.run import load
    from writerprof.synthetic import Scenario, write_run

    root = tmp_path_factory.mktemp("runs")
    out = []
    for seed, rerun in ((1, 0.5), (2, 0.7)):
        write_run(root / f"r{seed}", Scenario(start_method="forkserver", main_rerun_s=rerun, seed=seed))
        out.append((load(root / f"r{seed}"), summarize(load(root / f"r{seed}"))))
    return out


def test_one_entry_per_fix_whatever_its_numbers(forkserver_runs):
    first, second = copy.deepcopy([summary for _, summary in forkserver_runs])
    # The same fix of two runs, in two texts (their imports' seconds differ).
    for summary, seconds in ((first, 0.30), (second, 0.41)):
        for d in summary["diagnoses"]:
            for action in d.get("fix") or []:
                if action["id"] == fixes.GUARD_ID:
                    action["what"] = f"keep the heavy module-level imports (numpy {seconds:.2f} s of the re-run ...)"
                    action["where"] = f"{SCRIPT} (line {int(seconds * 100)})"
                    action["recovery_s"] = seconds
    merged = [f for f in side([first, second])["fix"] if f["code"] == "main-reimport"]
    guards = [f for f in merged if f["id"] == fixes.GUARD_ID]
    assert len(guards) == 1 and guards[0]["recovery_s"] == pytest.approx((0.30 + 0.41) / 2)
    assert len({f["id"] for f in merged}) == len(merged)


def test_the_runs_forkserver_is_read_from_its_command_line(forkserver_runs):
    run, summary = forkserver_runs[0]
    # The synthetic daemon's command line (events.FORKSERVER_ARGV) is 3.11's: ['__main__'], no main_path.
    assert preload.recorded(run) == Forkserver(("__main__",), None)
    assert preload.honours_main(summary["run"]["python"][0], preload.recorded(run)) is False
