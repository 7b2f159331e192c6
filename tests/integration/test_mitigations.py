"""WRITERPROF_MITIGATE: the what-if mitigations (pin, preload), in the recorded
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

TARGETS = Path(__file__).parent / "targets"
FIRST_CPU = min(os.sched_getaffinity(0))
# Two forkserver saves; the producer pins itself to one CPU after the first
# writer, when the daemon already exists with the full mask.
REPRO = ("repro", "--json", "--verify", "--saves", 2, "--size", "64MiB", "--chunk-size", "16MiB",
         "--start-method", "forkserver", "--main-imports", "json",
         "--pin-parent", FIRST_CPU, "--pin-when", "after-first-writer")


def record(tmp_path, name, mitigate=None):
    """`writerprof record` of the reproducer; (finished process, loaded run, save records)."""
    env = dict(os.environ)
    env.pop("WRITERPROF_MITIGATE", None)
    if mitigate is not None:
        env["WRITERPROF_MITIGATE"] = mitigate
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


def test_preload_spares_the_writers_the_main_rerun(tmp_path, baseline, cpus):
    _, plain, plain_saves = baseline
    assert events(plain, "main_rerun", {s["writer_pid"] for s in plain_saves})  # it can tell
    _, run, saves = record(tmp_path, "run", "preload")
    writers = {s["writer_pid"] for s in saves}
    assert not events(run, "main_rerun", writers)
    (parent,) = events(run, "mitigation", name="preload", where="parent")
    assert parent["applied"] and parent["modules"] == ["writerprof.repro.writer"]
    assert parent["method"] == "forkserver" and parent["skip_main"]
    (daemon,) = events(run, "mitigation", name="preload", where="forkserver")
    assert daemon["applied"] and daemon["modules"] == ["writerprof.repro.writer"]
    assert not events(run, "mitigation", writers)  # nothing needed __main__ after all
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
    done, run, saves = record(tmp_path, "run", "preload, pin,nosuch")
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
                           extra_env={"WRITERPROF_MITIGATE": "preload,pin"})
    all_cpus = ",".join(map(str, cpus))
    assert plain.returncode == 0 and done.returncode == 0, done.stderr
    assert plain.stdout == "writer 1 cpus %s exit 0\nwriter 2 cpus %s exit 0\n" % (all_cpus, all_cpus)
    assert done.stdout == "writer 1 cpus %s exit 0\nwriter 2 cpus %d exit 0\n" % (all_cpus, cpus[0])
    assert "writerprof" not in done.stderr

    def writers(procs):
        return [ev for ev, _ in procs.values() if ev[0]["role"] == "forkserver_child"]

    plain_procs, procs = journals(plain_run), journals(run)
    assert all(kinds(ev, "main_rerun") for ev in writers(plain_procs))  # it can tell
    assert len(writers(procs)) == 2 and not any(kinds(ev, "main_rerun") for ev in writers(procs))
    (main,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "main"]
    (parent,) = kinds(main, "mitigation")
    assert parent["applied"] and parent["modules"] == ["mitigated_writer"]
    # Found only on the parent's sys.path, which the daemon is given.
    (daemon,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "forkserver"]
    (preloaded,) = kinds(daemon, "mitigation")
    assert preloaded["applied"] and preloaded["modules"] == ["mitigated_writer"]
    pins = sorted((kinds(ev, "mitigation") for ev in writers(procs)), key=lambda e: e[0]["t_ns"])
    assert [[(e["applied"], e["cpus"], e["inherited"]) for e in p] for p in pins] == \
        [[(True, cpus, cpus)], [(True, [cpus[0]], cpus)]]
    assert not [e for ev, _ in procs.values() for e in kinds(ev, "hook") if e["status"] == "failed"]


MAIN_NEEDED = """
import multiprocessing, sys

class Note:
    def __repr__(self):
        return "a note from __main__"

def in_main():
    print("target in __main__")

if __name__ == "__main__":
    ctx = multiprocessing.get_context(sys.argv[1])
    for target, args in ((print, (Note(),)), (in_main, ())):
        child = ctx.Process(target=target, args=args)
        child.start()
        child.join()
        print("exit", child.exitcode, flush=True)
"""


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_preload_reruns_main_when_unpickling_needs_it(tmp_path, method, python):
    script = tmp_path / "main_needed.py"
    script.write_text(MAIN_NEEDED)
    run, done = run_probed(tmp_path, script, method, python=INTERPRETERS[python],
                           extra_env={"WRITERPROF_MITIGATE": "preload"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a note from __main__\nexit 0\ntarget in __main__\nexit 0\n"
    procs = journals(run)
    (main,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "main"]
    outcomes = [(e["applied"], e.get("reason", "")) for e in kinds(main, "mitigation")]
    assert outcomes[0][0] and not outcomes[1][0] and "lives in __main__" in outcomes[1][1]
    children = [ev for ev, _ in procs.values() if kinds(ev, "bootstrap")]
    children.sort(key=lambda ev: kinds(ev, "bootstrap")[0]["t_ns"])
    # The first child held __main__ back until its argument needed it ...
    (lazy,) = kinds(children[0], "mitigation")
    assert not lazy["applied"] and "__main__.Note" in lazy["reason"]
    assert kinds(children[0], "main_rerun")
    # ... the second, whose target lives there, was never spared it.
    assert kinds(children[1], "main_rerun") and not kinds(children[1], "mitigation")


EARLY_FORKSERVER = """
import multiprocessing, multiprocessing.forkserver

if __name__ == "__main__":
    multiprocessing.forkserver.ensure_running()  # before any Process.start()
    child = multiprocessing.get_context("forkserver").Process(target=print, args=("child",))
    child.start()
    child.join()
    print("exit", child.exitcode, flush=True)
"""


def test_preload_after_the_forkserver_started_still_skips_main(tmp_path):
    script = tmp_path / "early.py"
    script.write_text(EARLY_FORKSERVER)
    run, done = run_probed(tmp_path, script, extra_env={"WRITERPROF_MITIGATE": "preload"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "child\nexit 0\n"
    procs = journals(run)
    (main,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "main"]
    (parent,) = kinds(main, "mitigation")
    assert not parent["applied"] and "already running" in parent["reason"]
    assert parent["skip_main"] and parent["modules"] == []
    (child,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "forkserver_child"]
    assert kinds(child, "target_start") and not kinds(child, "main_rerun")
