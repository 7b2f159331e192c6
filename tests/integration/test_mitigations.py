"""WRITERPROF_MITIGATE: the what-if mitigations (pin, preload, guard), in the recorded
reproducer and, on every CPython from 3.9 that pyenv has, in small targets.
Each is checked against the same run without it, so that the test can tell."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from helpers import writerprof_command
from test_probe_journal import INTERPRETERS, journals, kinds, run_probed

import writerprof.run
from writerprof.analysis import preload

TARGETS = Path(__file__).parent / "targets"
FIRST_CPU = min(os.sched_getaffinity(0))
# Two forkserver saves; the producer pins itself to one CPU after the first
# writer, when the daemon already exists with the full mask.
REPRO = ("repro", "--json", "--verify", "--saves", 2, "--size", "64MiB", "--chunk-size", "16MiB",
         "--start-method", "forkserver", "--main-imports", "json",
         "--pin-parent", FIRST_CPU, "--pin-when", "after-first-writer")


def record(tmp_path, name, mitigate=None, modules=None):
    """`writerprof record` of the reproducer, modules the preload list;
    (finished process, loaded run, save records)."""
    env = {k: v for k, v in os.environ.items() if k not in ("WRITERPROF_MITIGATE", "WRITERPROF_PRELOAD")}
    if mitigate is not None:
        env["WRITERPROF_MITIGATE"] = mitigate
    if modules is not None:
        env["WRITERPROF_PRELOAD"] = modules
    run_dir = tmp_path / name
    done = subprocess.run(writerprof_command() + ["record", "--no-sampler", "-o", str(run_dir),
                                                  "--", *writerprof_command(), *map(str, REPRO)],
                          env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return done, writerprof.run.load(run_dir), [r for r in records if r["record"] == "save"]


def events(run, kind, pids=None, **match):
    return [e["data"] for e in run.events_of(kind) if (pids is None or e["pid"] in pids)
            and all(e["data"].get(k) == v for k, v in match.items())]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    return record(tmp_path_factory.mktemp("baseline"), "run")


def test_preload_starts_the_forkserver_with_exactly_the_list(tmp_path, baseline, cpus):
    _, plain, plain_saves = baseline
    assert preload.recorded(plain).preload == ("__main__",)  # the program's own: CPython's default
    _, run, saves = record(tmp_path, "run", "preload", "json,xml.dom.minidom")
    (parent,) = events(run, "mitigation", name="preload", where="parent")
    assert parent == dict(parent, applied=True, method="forkserver", modules=["json", "xml.dom.minidom"],
                          program=["__main__"])
    # What CPython handed the daemon, from its command line: the list, and nothing of the probe's.
    assert preload.recorded(run).preload == ("json", "xml.dom.minidom")
    # Nothing else changes: without '__main__' in the list every writer still re-runs it.
    writers = {s["writer_pid"] for s in saves}
    assert {e["pid"] for e in run.events_of("main_rerun")} >= writers
    assert not events(run, "hook", status="failed")


def test_pin_gives_the_writer_its_producers_affinity(tmp_path, baseline, cpus):
    _, plain, plain_saves = baseline
    # Without: the second writer inherits the daemon's mask, not the producer's.
    assert plain_saves[1]["producer_cpus"] == [FIRST_CPU]
    assert plain_saves[1]["writer_inherited_cpus"] == cpus
    assert not events(plain, "mitigation")
    _, run, saves = record(tmp_path, "run", "pin")
    # The target's first line sees the producer's mask at Process.start().
    assert [s["writer_inherited_cpus"] for s in saves] == [cpus, [FIRST_CPU]]
    for save, wanted in zip(saves, (cpus, [FIRST_CPU])):
        (pin,) = events(run, "mitigation", {save["writer_pid"]}, name="pin")
        assert pin == dict(pin, applied=True, cpus=wanted, inherited=cpus)
        # Forked from the daemon with its mask; the pin comes after.
        assert run.identity(run.hosts[0], save["writer_pid"])["affinity"] == cpus


def test_mitigations_leave_the_output_alone(tmp_path, baseline, cpus):
    plain_done, _, plain_saves = baseline
    done, run, saves = record(tmp_path, "run", "preload, pin,nosuch", "json")
    steady = ("save", "start_method", "bytes", "chunks", "producer_cpus", "verified")
    assert [{k: s[k] for k in steady} for s in saves] == \
        [{k: s[k] for k in steady} for s in plain_saves]
    assert all(s["verified"] for s in saves)
    assert done.stderr.count("RESULTS") == plain_done.stderr.count("RESULTS") == 2
    assert "Traceback" not in done.stderr and "probe off" not in done.stderr
    unknown = events(run, "mitigation", name="nosuch")
    assert unknown and all(not e["applied"] and "unknown" in e["reason"] for e in unknown)
    assert events(run, "mitigation", name="pin", applied=True)
    assert events(run, "mitigation", name="preload", applied=True)


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_probe_mitigations_on_each_python(tmp_path, python, cpus):
    script = TARGETS / "mitigated_writer.py"
    (tmp_path / "plain").mkdir()
    (tmp_path / "mitigated").mkdir()
    plain_run, plain = run_probed(tmp_path / "plain", script, python=INTERPRETERS[python])
    run, done = run_probed(tmp_path / "mitigated", script, python=INTERPRETERS[python],
                           extra_env={"WRITERPROF_MITIGATE": "preload,pin", "WRITERPROF_PRELOAD": "mitigated_writer"})
    all_cpus = ",".join(map(str, cpus))
    assert plain.returncode == 0 and done.returncode == 0, done.stderr
    assert plain.stdout == "writer 1 cpus %s exit 0\nwriter 2 cpus %s exit 0\n" % (all_cpus, all_cpus)
    assert done.stdout == "writer 1 cpus %s exit 0\nwriter 2 cpus %d exit 0\n" % (all_cpus, cpus[0])
    assert "writerprof" not in done.stderr

    def writers(procs):
        return [ev for ev, _ in procs.values() if ev[0]["role"] == "forkserver_child"]

    plain_procs, procs = journals(plain_run), journals(run)
    assert all(kinds(ev, "main_rerun") for ev in writers(plain_procs))
    # preload changes the list and nothing else: the writers still re-run __main__, as CPython has them.
    assert len(writers(procs)) == 2 and all(kinds(ev, "main_rerun") for ev in writers(procs))
    (main,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "main"]
    (parent,) = kinds(main, "mitigation")
    assert parent["applied"] and parent["modules"] == ["mitigated_writer"] and parent["program"] == ["__main__"]
    (daemon,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "forkserver"]
    assert preload.from_argv(daemon[0]["argv"]).preload == ("mitigated_writer",)
    assert not kinds(daemon, "mitigation")  # the daemon imports the list as CPython does, by itself
    pins = sorted((kinds(ev, "mitigation") for ev in writers(procs)), key=lambda e: e[0]["t_ns"])
    assert [[(e["applied"], e["cpus"], e["inherited"]) for e in p] for p in pins] == \
        [[(True, cpus, cpus)], [(True, [cpus[0]], cpus)]]
    assert not [e for ev, _ in procs.values() for e in kinds(ev, "hook") if e["status"] == "failed"]


GUARDED = """
import multiprocessing, sys
import fractions  # a module-level import the children would re-run

def uses_it():
    print("target in __main__:", fractions.Fraction(1, 3))

def ignores_it():
    print("target in __main__, no fractions")

if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    for target in (uses_it, ignores_it):
        child = ctx.Process(target=target)
        child.start()
        child.join()
        print("exit", child.exitcode, flush=True)
"""


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_guard_defers_the_re_runs_imports_for_a_target_in_main(tmp_path, method, python):
    script = tmp_path / "guarded.py"
    script.write_text(GUARDED)
    (tmp_path / "plain").mkdir()
    (tmp_path / "guard").mkdir()
    _, plain = run_probed(tmp_path / "plain", script, method, python=INTERPRETERS[python])
    run, done = run_probed(tmp_path / "guard", script, method, python=INTERPRETERS[python],
                           extra_env={"WRITERPROF_MITIGATE": "guard", "WRITERPROF_DEFER": "fractions,nosuch"})
    assert done.returncode == 0 and plain.returncode == 0, done.stderr
    assert done.stdout == plain.stdout == ("target in __main__: 1/3\nexit 0\n"
                                           "target in __main__, no fractions\nexit 0\n")
    assert done.stderr == plain.stderr
    children = [ev for ev, _ in journals(run).values() if kinds(ev, "bootstrap")]
    assert len(children) == 2
    for child in children:
        # Each re-ran __main__ (its targets live there), the import deferred and not made by its end.
        assert kinds(child, "main_rerun")
        (guard,) = kinds(child, "mitigation")
        assert guard == dict(guard, applied=True, where="child", modules=["fractions", "nosuch"],
                             deferred=["fractions"], loaded=[])


EARLY_FORKSERVER = """
import multiprocessing, multiprocessing.forkserver

if __name__ == "__main__":
    multiprocessing.forkserver.ensure_running()  # before any Process.start()
    child = multiprocessing.get_context("forkserver").Process(target=print, args=("child",))
    child.start()
    child.join()
    print("exit", child.exitcode, flush=True)
"""


def test_preload_after_the_forkserver_started_is_not_applied(tmp_path):
    script = tmp_path / "early.py"
    script.write_text(EARLY_FORKSERVER)
    (tmp_path / "late").mkdir()
    run, done = run_probed(tmp_path / "late", script,
                           extra_env={"WRITERPROF_MITIGATE": "preload", "WRITERPROF_PRELOAD": "json"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "child\nexit 0\n"
    procs = journals(run)
    (main,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "main"]
    (parent,) = kinds(main, "mitigation")
    assert not parent["applied"] and "already running" in parent["reason"] and parent["modules"] == ["__main__"]
    # Without a list there is nothing to preload: said once, and the what-if is off.
    (tmp_path / "none").mkdir()
    run, done = run_probed(tmp_path / "none", script, extra_env={"WRITERPROF_MITIGATE": "preload"})
    assert done.returncode == 0 and done.stdout == "child\nexit 0\n", done.stderr
    (main,) = [ev for ev, _ in journals(run).values() if ev[0]["role"] == "main"]
    (off,) = kinds(main, "mitigation")
    assert not off["applied"] and off["reason"] == "WRITERPROF_PRELOAD names no module"
