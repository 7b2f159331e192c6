"""The resource tracker's part in a producer's shared-memory segments
(mlcommons/storage #768, #777, #780; bpo-39959), on real processes
(targets/tracker_race.py): the probe journals every register, unregister and
unlink with the tracker it went to, and what the tracker printed, which it
still prints as before; the report names the process, the segment and the
fix where the journal shows a cause, and nothing where it does not.

What CPython does, as these runs show on 3.11, 3.12 and 3.13: a child that
multiprocessing starts (fork, spawn, forkserver) shares its parent's tracker,
so its attach's registration changes nothing there and the producer's
unlink() works; its unregister (the workaround of #770) removes the
producer's entry, and the tracker prints a KeyError (#777). A separate
Python program that attaches by name registers the segments with a tracker
of its own, which unlinks them when the program ends: the producer's
unlink() then raises FileNotFoundError. On 3.13, track=False registers
nothing."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from helpers import TARGETS, run_writerprof, writerprof_command
from test_fix_advice import python_of
from test_probe_journal import INTERPRETERS, journals, kinds, run_probed

from writerprof.run import load

SCRIPT = f"{TARGETS}/tracker_race.py"
CODES = {"shm-attach-registered", "shm-double-unlink", "shm-unlink-missing", "shm-leaked-at-exit",
         "tracker-unregister-unknown"}
SEGMENTS = 2


def recorded(tmp_path, python, how, method="forkserver", name="run"):
    """`writerprof record` of the producer, and its report's JSON."""
    run = tmp_path / name
    done = subprocess.run(writerprof_command() + ["record", "-o", str(run), "--", python, SCRIPT, "producer", how,
                                                  method, str(SEGMENTS)],
                          capture_output=True, text=True, timeout=240, cwd=tmp_path)
    report = json.loads(run_writerprof("report", "--json", run).stdout)
    return done, report, run


def tracker_diagnoses(report) -> dict[str, list[dict]]:
    out: dict = {}
    for d in report["diagnoses"]:
        if d["code"] in CODES:
            out.setdefault(d["code"], []).append(d)
    return out


def failed_unlinks(stdout: str) -> set[str]:
    return set(re.findall(r"^unlink (\S+): FileNotFoundError$", stdout, re.M))


# --- the probe on its own, on every CPython from 3.9 -----------------------------------------

@pytest.mark.parametrize("python", sorted(INTERPRETERS))
@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_a_childs_attach_goes_to_its_parents_tracker_and_says_so(tmp_path, python, method):
    run, done = run_probed(tmp_path, SCRIPT, "producer", "child", method, SEGMENTS, python=INTERPRETERS[python])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and "writerprof" not in done.stderr
    procs = journals(run)
    (tracker,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "resource_tracker"]
    (pipe,) = [e["pipe"] for e in kinds(tracker, "tracker_start")]
    calls = [e for ev, _ in procs.values() for e in kinds(ev, "tracker_call") if e["rtype"] == "shared_memory"]
    created = {e["name"] for e in calls if e["op"] == "register" and e.get("opened") == "create"}
    attached = {e["name"] for e in calls if e["op"] == "register" and e.get("opened") == "attach"}
    unregistered = {e["name"] for e in calls if e["op"] == "unregister"}
    assert len(created) == SEGMENTS and attached == created == unregistered
    assert {e["tracker"] for e in calls} == {pipe}  # one tracker: the producer's, shared with its child
    # (A function's qualified name from 3.11 on, SharedMemory.__init__; its name before.)
    assert {e["caller"].replace("SharedMemory.", "") for e in calls if e["op"] == "register"} == {
        "multiprocessing.shared_memory:__init__"}
    assert {e["site"].rsplit(":", 1)[0] for e in calls if e.get("opened") == "attach"} == {"__mp_main__:attach"}
    unlinks = [e for ev, _ in procs.values() for e in kinds(ev, "resource_unlink")]
    shm = [e for e in unlinks if e["rtype"] == "shared_memory"]
    assert {e["name"] for e in shm} == created and {e["outcome"] for e in shm} == {"ok"}
    assert {e["via"] for e in shm} == {"SharedMemory.unlink"}
    # The child's Process's semaphores (spawn and forkserver name them): registered, unlinked by their owner.
    sems = [e for e in unlinks if e["rtype"] == "semaphore"]
    assert sems and {e["via"] for e in sems} == {"sem_unlink"} and {e["outcome"] for e in sems} == {"ok"}
    assert not kinds(tracker, "tracker_output")  # it printed nothing


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_the_tracker_journals_what_it_printed_and_prints_it_as_before(tmp_path, python):
    """A program's own tracker unlinks the segments it attached: its warning is
    journaled, the producer's unlink fails, and stderr is what it is unprobed."""
    plain = subprocess.run([INTERPRETERS[python], SCRIPT, "producer", "program", "forkserver", str(SEGMENTS)],
                           capture_output=True, text=True, timeout=120)
    run, done = run_probed(tmp_path, SCRIPT, "producer", "program", "forkserver", SEGMENTS,
                           python=INTERPRETERS[python])
    assert done.returncode == plain.returncode == SEGMENTS, done.stderr
    # (Which tracker prints first, the program's or the producer's, is theirs to race: compared as sets of lines.)
    assert _lines(done.stderr) == _lines(plain.stderr) and _lines(done.stdout) == _lines(plain.stdout)
    procs = journals(run)
    trackers = {pid: ev for pid, (ev, _) in procs.items() if ev[0]["role"] == "resource_tracker"}
    assert len(trackers) == 2  # the producer's, and the program's own
    said = [e for ev in trackers.values() for e in kinds(ev, "tracker_output")]
    printed = [line.split("UserWarning: ", 1)[1] for line in done.stderr.splitlines() if "UserWarning: " in line]
    assert sorted(e["message"] for e in said) == sorted(printed)
    assert {e["via"] for e in said} == {"warning"} and {e["category"] for e in said} == {"UserWarning"}
    gone = failed_unlinks(done.stdout)
    assert len(gone) == SEGMENTS
    cleaned = [e for ev in trackers.values() for e in kinds(ev, "resource_unlink")]
    assert {e["via"] for e in cleaned} == {"tracker"}
    # The program's tracker unlinked them; the producer's found them gone at its shutdown.
    assert sorted(e["outcome"] for e in cleaned) == ["FileNotFoundError"] * SEGMENTS + ["ok"] * SEGMENTS
    assert {e["name"].lstrip("/") for e in cleaned} == gone


def _lines(text: str) -> list[str]:
    return sorted(re.sub(r"psm_[0-9a-f]+", "psm_X", line) for line in text.splitlines())


# --- recorded and reported, on 3.11 (this interpreter), 3.12 and 3.13 ------------------------------

@pytest.mark.parametrize("version", ["current", "3.12", "3.13"])
def test_a_program_that_attaches_by_name_is_named_with_its_segments_and_fix(tmp_path, version):
    python = python_of(version)
    done, report, run = recorded(tmp_path, python, "program")
    assert done.returncode == SEGMENTS, done.stderr
    gone = failed_unlinks(done.stdout)
    assert len(gone) == SEGMENTS  # the producer's unlink() raised FileNotFoundError for each
    found = tracker_diagnoses(report)
    (attach,) = found["shm-attach-registered"]
    program = [p for p in report["processes"] if p["pid"] == attach["pid"]]
    assert program and program[0]["python"] == attach["evidence"]["python"]
    assert {name.lstrip("/") for name in attach["evidence"]["segments"]} == gone
    assert all(name in attach["message"] for name in gone) and f"pid {attach['pid']}" in attach["message"]
    assert attach["evidence"]["attacher"]["site"].startswith("__main__:attach:")
    ids = [a["id"] for a in attach["fix"]]
    if tuple(map(int, attach["evidence"]["python"].split(".")[:2])) >= (3, 13):
        assert ids == ["shm-track-false"]
    else:
        assert ids == ["shm-unregister-attached", "shm-skip-register"]
    (unlink,) = [d for d in found["shm-double-unlink"] if d["severity"] == "warning"]
    producer = unlink["pid"]
    assert unlink["evidence"]["via"] == "SharedMemory.unlink"
    assert unlink["evidence"]["unlinked_via"] == "tracker" and unlink["evidence"]["attacher"]["pid"] == attach["pid"]
    trackers = {p["pid"]: p for p in report["processes"] if p["role"] == "resource_tracker"}
    assert unlink["evidence"]["unlinked_by_pid"] in trackers
    assert unlink["fix"][0]["id"] == ids[0]
    leaks = {d["pid"]: d for d in found["shm-leaked-at-exit"]}
    own = leaks[unlink["evidence"]["unlinked_by_pid"]]  # the program's tracker, at its shutdown
    assert {s["name"].lstrip("/") for s in own["evidence"]["segments"]} == gone
    assert all(s["creator_pid"] == producer for s in own["evidence"]["segments"])
    assert "shm-unlink-missing" not in found and "tracker-unregister-unknown" not in found
    text = run_writerprof("report", run).stdout
    assert "WARNING shm-attach-registered" in text and f"pid {attach['pid']}" in text


@pytest.mark.parametrize("version", ["current", "3.12", "3.13"])
@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_child_that_unregisters_what_it_attached_takes_its_parents_entry(tmp_path, version, method):
    done, report, run = recorded(tmp_path, python_of(version), "child-unregister", method)
    assert done.returncode == 0 and "KeyError" in done.stderr, done.stderr  # the tracker's traceback
    found = tracker_diagnoses(report)
    assert set(found) == {"tracker-unregister-unknown"}, found
    (d,) = found["tracker-unregister-unknown"]
    (child,) = {int(e["pid"]) for e in load(run).events_of("tracker_call") if e["data"].get("opened") == "attach"}
    assert d["pid"] == child and d["evidence"]["attached"] and len(d["evidence"]["names"]) == SEGMENTS
    assert d["evidence"]["attacher"]["site"].startswith("__mp_main__:attach:")
    assert [a["id"] for a in d["fix"]] == ["no-shared-unregister"]


# A child on its parent's tracker, a program that unregisters from its own, and track=False (3.13).
CORRECT = [("child", "current", "forkserver"), ("child", "current", "spawn"), ("child", "3.12", "forkserver"),
           ("child", "3.13", "forkserver"), ("child", "3.13", "spawn"), ("program-unregister", "current", "-"),
           ("program-unregister", "3.12", "-"), ("child-untracked", "3.13", "forkserver"),
           ("child-untracked", "3.13", "spawn"), ("program-untracked", "3.13", "-")]


@pytest.mark.parametrize("repeat", [1, 2])
@pytest.mark.parametrize("how, version, method", CORRECT)
def test_a_correct_attach_is_not_diagnosed(tmp_path, how, version, method, repeat):
    """Every unlink works, and no tracker diagnosis: twice each."""
    done, report, run = recorded(tmp_path, python_of(version), how, method)
    assert done.returncode == 0 and not failed_unlinks(done.stdout), done.stdout + done.stderr
    assert "resource_tracker" not in done.stderr, done.stderr
    assert tracker_diagnoses(report) == {}
    calls = load(run).events_of("tracker_call")
    assert sum(e["data"].get("opened") == "create" for e in calls) == SEGMENTS  # the journal has them
    attached = [e for e in calls if e["data"].get("opened") == "attach"]
    if how.endswith("untracked"):
        assert not attached  # track=False: the attach registered nothing
    else:
        assert len(attached) == SEGMENTS


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_the_reproducer_is_not_diagnosed(tmp_path, method):
    """Its writers attach their buffers on their parent's tracker: twice, nothing."""
    for n in (1, 2):
        run = tmp_path / f"run{n}"
        run_writerprof("record", "-o", run, "--", *writerprof_command(), "repro", "--saves", "2", "--size", "64MiB",
                       "--start-method", method, "--mpi", "off", "--dir", tmp_path / f"out{n}")
        report = json.loads(run_writerprof("report", "--json", run).stdout)
        assert report["throughput"]["saves"] == 2
        assert tracker_diagnoses(report) == {}
        attached = [e for e in load(run).events_of("tracker_call") if e["data"].get("opened") == "attach"]
        assert len(attached) >= 2  # the writers did register what they attached
