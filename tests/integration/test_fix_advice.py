"""Advice that works where it is given, on real recordings: an entry script
whose writers' start-up is the cost (targets/heavy_main.py: a module-level
import that computes, slow_import, re-run by every forkserver writer; the
target defined in __main__), recorded on this Python and on pyenv's 3.13.
The fix preloads '__main__' only where the interpreter honours it, names the
module that costs, and the contrast what-ifs run exactly that advice: their
recoveries are reported as measured."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import writerprof_command
from test_probe_journal import INTERPRETERS

from writerprof.analysis import fixes, preload
from writerprof.run import load
from writerprof.run.stacks import load_stacks

TARGETS = Path(__file__).parent / "targets"
SCRIPT = TARGETS / "heavy_main.py"
WHAT_IFS = "fork,forkserver,forkserver+preload,forkserver+guard"


def python_of(name: str) -> str:
    """This interpreter ("current"), or pyenv's newest of a line ("3.13")."""
    if name == "current":
        return INTERPRETERS[name]
    found = sorted((v for v in INTERPRETERS if v.startswith(name + ".")), key=lambda v: int(v.split(".")[2]))
    if not found:
        pytest.skip(f"no Python {name} here (pyenv has {', '.join(sorted(INTERPRETERS))})")
    return INTERPRETERS[found[-1]]


def environment(**more) -> dict:
    """slow_import found by every process, the forkserver daemon too (before
    CPython 3.12.8 and 3.13.1 it is not given the parent's sys.path)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRITERPROF_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(TARGETS), os.environ.get("PYTHONPATH")]))
    return {**env, **more}


def writerprof(*args, env=None, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run(writerprof_command() + [str(a) for a in args], env=env or environment(),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module", params=["current", "3.13"])
def contrasted(request, tmp_path_factory):
    python = python_of(request.param)
    root = tmp_path_factory.mktemp("advice")
    (root / "files").mkdir()
    done = writerprof("contrast", "--methods", WHAT_IFS, "--repeat", "2", "-o", root / "c", "--",
                      python, SCRIPT, root / "files", 4)
    assert done.returncode == 0, done.stderr
    result = json.loads((root / "c" / "contrast.json").read_text())
    return result, done


def recordings(result: dict, method: str) -> list:
    return [load(r["path"]) for r in result["runs"] if r["method"] == method]


def test_the_advice_is_what_works_on_the_recorded_python(contrasted):
    result, _ = contrasted
    plain = result["comparisons"]["forkserver"]["b"]
    (version,) = plain["python"]
    honoured = preload.honours_main(version)
    # The version table agrees with what this interpreter's forkserver was given: the script's path or not.
    for run in recordings(result, "forkserver"):
        assert (preload.recorded(run).main_path is not None) is honoured
    advice = {a["id"]: a for a in plain["fix"] if a["code"] == "main-reimport"}
    if honoured:
        assert advice[fixes.PRELOAD_ID]["modules"] == ["__main__"]
    else:  # 3.11.7 and 3.13.0 here: the module that costs, not '__main__'
        assert advice[fixes.PRELOAD_ID]["modules"] == ["slow_import"]
        assert f"Not '__main__': Python {version} ignores it there (gh-126631" in advice[fixes.PRELOAD_ID]["what"]
    assert advice[fixes.GUARD_ID]["modules"] == ["slow_import"] and "(line 17)" in advice[fixes.GUARD_ID]["where"]
    # The target lives in __main__: python -m needs it moved first.
    assert "(__main__.write_file) must then live in a module of its own" in advice["python-m"]["what"]


def test_the_what_ifs_run_exactly_the_advice_and_measure_it(contrasted):
    result, done = contrasted
    plain = result["comparisons"]["forkserver"]["b"]
    advised = {a["id"]: a["modules"] for a in plain["fix"] if a["code"] == "main-reimport"}
    what_ifs = {w["method"]: w for w in result["what_ifs"]}
    assert what_ifs["forkserver+preload"]["ran"] and what_ifs["forkserver+guard"]["ran"]
    assert what_ifs["forkserver+preload"]["modules"] == advised[fixes.PRELOAD_ID]
    assert what_ifs["forkserver+guard"]["modules"] == advised[fixes.GUARD_ID]

    # preload: CPython's forkserver was started with that list and nothing else; its writers,
    # which still re-run __main__, found slow_import imported.
    assert any(fixes.imports_of(load_stacks(run), None) for run in recordings(result, "forkserver"))
    for run in recordings(result, "forkserver+preload"):
        assert run.meta["what_if"]["WRITERPROF_PRELOAD"] == ",".join(advised[fixes.PRELOAD_ID])
        assert list(preload.recorded(run).preload) == advised[fixes.PRELOAD_ID]
        assert not any(m == "slow_import" for m, _, _ in fixes.imports_of(load_stacks(run), None))
    # guard: every writer re-ran the script with slow_import deferred, and its target, which
    # lives in __main__ and does not use it, never imported it.
    for run in recordings(result, "forkserver+guard"):
        guards = [e["data"] for e in run.events_of("mitigation") if e["data"]["name"] == "guard"]
        assert len(guards) == 4 and all(g["deferred"] == ["slow_import"] and g["applied"] for g in guards)
        writers = {e["pid"] for e in run.events_of("main_rerun")}
        assert {e["pid"] for e in run.events_of("mitigation")} == writers

    # The fix says which recoveries the what-ifs measured, with their intervals, and none exceeds
    # the measured difference.
    fix = {a["id"]: a for a in result["fix"]}
    for fix_id, method in ((fixes.PRELOAD_ID, "forkserver+preload"), (fixes.GUARD_ID, "forkserver+guard")):
        action = fix[fix_id]
        assert action["recovery"] == "measured" and action["measured_by"] == method
        assert action["recovery_ci95_s"] == what_ifs[method]["recovered_ci95_s"]
        assert f"(measured by {method}" in done.stdout
    assert fix["python-m"]["recovery"] == "estimated"
    difference = abs(result["comparisons"]["forkserver"]["difference_s"])
    assert all(a["recovery_s"] <= difference for a in result["fix"] if a["recovery_s"] is not None)
    assert "not run" not in done.stderr and "Not tested" not in result["verdict"]


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_main_in_the_preload_list_does_what_the_version_table_says(tmp_path, python):
    """The table behind the advice, against each interpreter here: '__main__'
    and slow_import preloaded (the preload what-if's switch), the writers
    spared the re-run of the script only where '__main__' is honoured."""
    (tmp_path / "files").mkdir()
    done = writerprof("record", "-o", tmp_path / "run", "--", INTERPRETERS[python], SCRIPT, tmp_path / "files", 2,
                      env=environment(WRITERPROF_MITIGATE="preload", WRITERPROF_PRELOAD="__main__,slow_import"))
    assert done.returncode == 0, done.stderr
    run = load(tmp_path / "run")
    (version,) = {e["data"]["python"] for e in run.events_of("process")}
    recorded = preload.recorded(run)
    assert recorded.preload == ("__main__", "slow_import")
    honoured = preload.honours_main(version)
    assert preload.honours_main(version, recorded) is honoured
    writers = {e["data"]["child_pid"] for e in run.events_of("process_start")}
    reran = {e["pid"] for e in run.events_of("main_rerun")} & writers
    assert len(writers) == 2 and reran == (set() if honoured else writers)


def test_a_contrast_left_with_nothing_to_run_says_so_and_fails(tmp_path):
    (tmp_path / "files").mkdir()
    # The writers already have their producer's CPUs: forkserver+pin cannot change anything.
    done = writerprof("contrast", "--methods", "forkserver,forkserver+pin", "--repeat", "1", "-o", tmp_path / "c",
                      "--", python_of("current"), SCRIPT, tmp_path / "files", 2)
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("writerprof contrast: nothing to contrast: no method but the reference applies here")
    assert "Traceback" not in done.stderr and "forkserver+pin: not run: the forkserver writers already had" \
        in done.stderr
    result = json.loads((tmp_path / "c" / "contrast.json").read_text())
    assert result["what_ifs"][0]["reason"].startswith("the forkserver writers already had their producer's CPUs")
    # A what-if that runs the fix needs the recording whose fix it runs first.
    usage = writerprof("contrast", "--methods", "fork,forkserver+preload,forkserver", "--", "true")
    assert usage.returncode == 2 and "name forkserver before it" in usage.stderr
