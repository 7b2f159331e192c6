"""The resource tracker's diagnoses (analysis.diagnoses.tracker) on
journals: a synthetic run (a producer, its resource tracker and a writer)
with the tracker events the probe writes added to its processes' journals,
and a second tracker where a process started its own. Each fires on the
journal that shows its cause, and stays quiet on the one that does not."""

from __future__ import annotations

import json

import pytest

from writerprof.analysis import diagnoses, fixes
from writerprof.analysis.diagnoses import tracker
from writerprof.analysis.summary import summarize
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run

TRACKER_CHECKS = ("attach_registered", "unlink_failed", "leaked_at_exit", "unregister_unknown")
TRACKER_CODES = {"shm-attach-registered", "shm-double-unlink", "shm-unlink-missing", "shm-leaked-at-exit",
                 "tracker-unregister-unknown"}
SHARED, OWN = 7001, 7002  # the pipes (inodes) of the producer's tracker and of the writer's own one
OWN_TRACKER_PID = 1300
NAME = "/psm_0a1b2c"


class Journals:
    """A synthetic run's journals, to add the tracker's events to."""

    def __init__(self, path):
        self.path = path
        self.files = {}  # the probe's role ("main": the producer) -> (journal path, identity)
        for events in (path / "hosts" / "host0" / "procs").glob("*.events.jsonl"):
            identity = json.loads(events.read_text().splitlines()[0])
            self.files["producer" if identity["role"] == "main" else identity["role"]] = (events, identity)
        self.t = max(identity["t_ns"] for _, identity in self.files.values()) + 10_000_000  # all probed by then

    def pid(self, role):
        return self.files[role][1]["pid"]

    def add(self, role, kind, **fields):
        """An event in that process's journal, 1 ms after the last one added."""
        self.t += 1_000_000
        with open(self.files[role][0], "a") as f:
            f.write(json.dumps({"kind": kind, "t_ns": self.t, **fields}) + "\n")

    def own_tracker(self, started_by="spawn_child"):
        """A resource tracker that process started for itself (its own pipe, OWN)."""
        parent = self.files[started_by][1]
        identity = {**parent, "pid": OWN_TRACKER_PID, "ppid": parent["pid"], "role": "resource_tracker",
                    "created_ns": self.t, "t_ns": self.t, "created_via": "exec", "forked_from": None}
        path = self.files[started_by][0].with_name(f"{OWN_TRACKER_PID}-{self.t}.events.jsonl")
        path.write_text(json.dumps(identity) + "\n")
        self.files["own_tracker"] = (path, identity)
        self.add("own_tracker", "tracker_start", pipe=OWN, fd=5)

    def call(self, role, op, tracker, opened=None, name=NAME, rtype="shared_memory", site="writer:attach:12"):
        fields = dict(op=op, rtype=rtype, name=name, tracker=tracker, site=site,
                      caller="multiprocessing.shared_memory:SharedMemory.__init__" if opened else "writer:attach")
        if opened:
            fields["opened"] = opened
        self.add(role, "tracker_call", **fields)

    def unlink(self, role, outcome="ok", via="SharedMemory.unlink", name=NAME, site="producer:save:80"):
        self.add(role, "resource_unlink", rtype="shared_memory", name=name, via=via, outcome=outcome,
                 errno=2 if outcome == "FileNotFoundError" else None, caller="producer:save", site=site)

    def read(self) -> tracker.Journal:
        return tracker.journal(load(self.path))

    def found(self, code=None) -> list[dict]:
        run = load(self.path)
        summary = summarize(run)
        return [d for d in summary["diagnoses"] if d["code"] in TRACKER_CODES and code in (None, d["code"])]


@pytest.fixture
def journals(tmp_path):
    write_run(tmp_path / "run", Scenario(ranks_per_host=1, saves=1, start_method="spawn", fsync_s=0.01))
    j = Journals(tmp_path / "run")
    j.add("resource_tracker", "tracker_start", pipe=SHARED, fd=7)
    j.call("producer", "register", SHARED, opened="create", site="producer:save:60")
    return j


def test_no_tracker_diagnosis_without_tracker_events(tmp_path):
    write_run(tmp_path / "run", Scenario(ranks_per_host=1, saves=1, fsync_s=0.01))
    assert not [d for d in summarize(load(tmp_path / "run"))["diagnoses"] if d["code"] in TRACKER_CODES]


def test_an_attach_registered_with_the_creators_own_tracker_is_quiet(journals):
    """A child multiprocessing started shares its creator's tracker: a second registration changes nothing."""
    journals.call("spawn_child", "register", SHARED, opened="attach")
    journals.unlink("producer")
    journals.call("producer", "unregister", SHARED)
    assert journals.found() == []
    read = journals.read()  # (read, and judged harmless)
    assert [(c["op"], c.get("opened"), c["tracker"]) for c in read.calls] == [
        ("register", "create", SHARED), ("register", "attach", SHARED), ("unregister", None, SHARED)]


def test_an_attach_registered_with_a_tracker_of_its_own_names_process_segment_and_fix(journals):
    journals.own_tracker()
    journals.call("spawn_child", "register", OWN, opened="attach")
    (d,) = journals.found("shm-attach-registered")
    writer = journals.pid("spawn_child")
    assert d["pid"] == writer and d["severity"] == "warning"
    assert d["evidence"]["segments"] == [NAME] and d["evidence"]["tracker_pid"] == OWN_TRACKER_PID
    assert d["evidence"]["creator_pids"] == [journals.pid("producer")]
    assert NAME in d["message"] and f"pid {OWN_TRACKER_PID}" in d["message"]
    assert "(writer, Python 3.11.9)" in d["message"]
    ids = [a["id"] for a in d["fix"]]
    assert ids == ["shm-unregister-attached", "shm-skip-register"]  # 3.11: no track=False yet
    assert all("writer:attach:12" in a["where"] for a in d["fix"])


def test_an_attach_unregistered_at_once_from_its_own_tracker_is_quiet(journals):
    """The workaround before 3.13, where the tracker is the process's own."""
    journals.own_tracker()
    journals.call("spawn_child", "register", OWN, opened="attach")
    journals.call("spawn_child", "unregister", OWN)
    assert journals.found() == []
    assert journals.read().trackers[("host0", OWN)] is not None  # its own tracker, known


def test_an_attach_with_no_recorded_creator_fires_only_on_a_tracker_it_started(journals):
    other = "/psm_ffff"
    journals.call("spawn_child", "register", SHARED, opened="attach", name=other)
    assert journals.found() == []  # the tracker its parent gave it
    journals.own_tracker()
    journals.call("spawn_child", "register", OWN, opened="attach", name=other)
    (d,) = journals.found("shm-attach-registered")
    assert d["evidence"]["segments"] == [other] and "not in the recording" in d["message"]


def test_the_fix_on_313_is_track_false():
    fix = fixes._attach_untracked({"pid": 5, "python": "3.13.0", "site": "w:attach:3"})
    assert [a["id"] for a in fix] == ["shm-track-false"] and "track=False" in fix[0]["what"]


def test_an_unlink_that_found_the_segment_gone_names_who_unlinked_it_first(journals):
    """The own tracker of an attaching process unlinks at its shutdown; the creator's unlink() then fails."""
    journals.own_tracker()
    journals.call("spawn_child", "register", OWN, opened="attach")
    journals.add("own_tracker", "tracker_output", via="warning", category="UserWarning",
                 message="resource_tracker: There appear to be 1 leaked shared_memory objects to clean up at shutdown")
    journals.unlink("own_tracker", via="tracker", site="__main__:<module>:1")
    journals.unlink("producer", outcome="FileNotFoundError")
    (d,) = journals.found("shm-double-unlink")
    assert d["severity"] == "warning" and d["pid"] == journals.pid("producer")
    assert d["evidence"]["unlinked_by_pid"] == OWN_TRACKER_PID and d["evidence"]["unlinked_via"] == "tracker"
    assert d["evidence"]["attacher"]["pid"] == journals.pid("spawn_child")
    assert f"pid {journals.pid('spawn_child')} (writer), which only attached them" in d["message"]
    assert d["fix"][0]["id"] == "shm-unregister-attached"
    (leak,) = journals.found("shm-leaked-at-exit")
    assert leak["pid"] == OWN_TRACKER_PID and leak["evidence"]["count"] == 1
    (segment,) = leak["evidence"]["segments"]
    assert segment["name"] == NAME and segment["creator_pid"] == journals.pid("producer")
    assert segment["registered_by"] == [{"pid": journals.pid("spawn_child"), "opened": "attach"}]
    assert journals.found("shm-unlink-missing") == []


def test_two_processes_unlinking_one_segment(journals):
    journals.unlink("spawn_child", site="writer:done:40")
    journals.unlink("producer", outcome="FileNotFoundError")
    (d,) = journals.found("shm-double-unlink")
    assert d["evidence"]["unlinked_by_pid"] == journals.pid("spawn_child")
    assert d["evidence"]["unlinked_at"] == "writer:done:40" and d["evidence"]["attacher"] is None
    assert [a["id"] for a in d["fix"]] == ["shm-unlink-once"]


def test_an_unlink_that_found_the_segment_gone_with_no_one_recorded_unlinking_it(journals):
    journals.unlink("producer", outcome="FileNotFoundError")
    (d,) = journals.found("shm-unlink-missing")
    assert d["evidence"]["segments"] == [NAME] and "no recorded process" in d["message"]
    assert journals.found("shm-double-unlink") == []


def test_a_leak_the_creator_never_unlinked(journals):
    journals.add("resource_tracker", "tracker_output", via="warning", category="UserWarning",
                 message="resource_tracker: There appear to be 1 leaked shared_memory objects to clean up at shutdown")
    journals.unlink("resource_tracker", via="tracker")
    (d,) = journals.found("shm-leaked-at-exit")
    assert d["evidence"]["attacher"] is None and d["evidence"]["creator_site"] == "producer:save:60"
    assert [a["id"] for a in d["fix"]] == ["shm-unlink-created"]


def test_a_semaphore_leak_warning_is_not_a_shared_memory_leak(journals):
    journals.add("resource_tracker", "tracker_output", via="warning", category="UserWarning",
                 message="resource_tracker: There appear to be 3 leaked semaphore objects to clean up at shutdown")
    assert journals.found() == []
    (said,) = journals.read().outputs  # read, and not shared memory's
    assert said["message"].endswith("leaked semaphore objects to clean up at shutdown")


def test_an_unregister_the_shared_tracker_no_longer_held(journals):
    """mlcommons/storage#777: the child's unregister removes its creator's entry."""
    journals.call("spawn_child", "register", SHARED, opened="attach", site="writer:attach:12")
    journals.call("spawn_child", "unregister", SHARED, site="writer:attach:13")
    journals.unlink("producer")
    journals.call("producer", "unregister", SHARED, site="producer:save:80")
    journals.add("resource_tracker", "tracker_output", via="excepthook", category="KeyError",
                 message=repr(NAME), name=NAME)
    (d,) = journals.found("tracker-unregister-unknown")
    child = journals.pid("spawn_child")
    assert d["pid"] == child and d["evidence"]["unregistered_first_by_pid"] == child
    assert d["evidence"]["attached"] and "which only attached them" in d["message"]
    assert d["fix"][0]["id"] == "no-shared-unregister" and "writer:attach:13" in d["fix"][0]["where"]
    assert journals.found("shm-attach-registered") == []  # the registration went to the shared tracker


def test_every_tracker_check_and_code_is_tested_here():
    checks = [check for check in diagnoses.CHECKS if check.__module__.endswith(".tracker")]
    assert {check.__name__ for check in checks} == set(TRACKER_CHECKS)
    assert {c.code for check in checks for c in check.codes} == TRACKER_CODES
