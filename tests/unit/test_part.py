"""A host's part of a run is one recording's (the probe's part.py; the
interposer takes the same steps in C, tests/integration/test_run_identity.py):
made with the recording's id in it, and another recording's part found in its
place moved aside whole, never written into."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from writerprof.probes.writerprof_probe import part
from writerprof.probes.writerprof_probe.format import PREVIOUS_DIR, RUN_ID_FILE

OLD, NEW = "0123456789abcdef", "fedcba9876543210"


@pytest.fixture(autouse=True)
def unclaimed(monkeypatch):
    monkeypatch.setattr(part, "_claimed", None)  # each test a process that claimed nothing yet


def _old_part(run, host="hostb", run_id=OLD):
    host_dir = run / "hosts" / host
    (host_dir / "procs").mkdir(parents=True)
    (host_dir / "procs" / "1-2.events.jsonl").write_text("{}\n")
    (host_dir / "agent.lock").write_text("old\n")
    if run_id is not None:
        (host_dir / RUN_ID_FILE).write_text(run_id + "\n")
    return host_dir


def _tree(top):
    return sorted(str(p.relative_to(top)) for p in top.rglob("*"))


def test_a_new_part_carries_the_recording_id_and_nothing_is_left_beside_it(tmp_path):
    run = tmp_path / "run"
    part.claim(str(run), "hostb", NEW)
    assert (run / "hosts" / "hostb" / RUN_ID_FILE).read_text() == NEW + "\n"
    assert _tree(run) == ["hosts", "hosts/hostb", f"hosts/hostb/{RUN_ID_FILE}"]
    part.claim(str(run), "hostb", NEW)  # found so: as it was
    assert _tree(run) == ["hosts", "hosts/hostb", f"hosts/hostb/{RUN_ID_FILE}"]


def test_another_recordings_part_is_moved_aside_whole(tmp_path):
    run = tmp_path / "run"
    old = _tree(_old_part(run))
    part.claim(str(run), "hostb", NEW)
    aside = run / PREVIOUS_DIR / OLD / "hosts" / "hostb"
    assert _tree(aside) == old and (aside / "agent.lock").read_text() == "old\n"
    assert _tree(run / "hosts") == ["hostb", f"hostb/{RUN_ID_FILE}"]
    assert (run / "hosts" / "hostb" / RUN_ID_FILE).read_text() == NEW + "\n"


def test_a_part_without_an_id_is_moved_aside_and_an_empty_directory_replaced(tmp_path):
    run = tmp_path / "run"
    inode = _old_part(run, run_id=None).stat().st_ino
    (run / "hosts" / "hostc").mkdir()
    part.claim(str(run), "hostb", NEW)
    assert (run / PREVIOUS_DIR / f"unknown-{inode}" / "hosts" / "hostb" / "agent.lock").exists()
    part.claim(str(run), "hostc", NEW)
    assert _tree(run / "hosts" / "hostc") == [RUN_ID_FILE]
    assert os.listdir(run / PREVIOUS_DIR) == [f"unknown-{inode}"]


def test_a_link_at_the_parts_name_is_never_followed(tmp_path):
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / RUN_ID_FILE).write_text(NEW + "\n")  # even one that says it is this recording's
    (run / "hosts").mkdir(parents=True)
    (run / "hosts" / "hostb").symlink_to(elsewhere)
    part.claim(str(run), "hostb", NEW)
    assert not (run / "hosts" / "hostb").is_symlink() and os.listdir(elsewhere) == [RUN_ID_FILE]
    (aside,) = (run / PREVIOUS_DIR).iterdir()
    assert aside.name.startswith("unknown-") and (aside / "hosts" / "hostb").is_symlink()


def test_a_probe_record_did_not_start_checks_nothing(tmp_path):
    run = tmp_path / "run"
    host_dir = _old_part(run)
    part.claim(str(run), "hostb", "")
    assert (host_dir / RUN_ID_FILE).read_text() == OLD + "\n" and not (run / PREVIOUS_DIR).exists()


_CLAIM = """
import os, sys
from writerprof.probes.writerprof_probe import part
sys.stdin.read()  # all started: claim at once
part.claim(sys.argv[1], "hostb", sys.argv[2])
procs = os.path.join(sys.argv[1], "hosts", "hostb", "procs")
os.makedirs(procs, exist_ok=True)
os.close(os.open(os.path.join(procs, "%d.events.jsonl" % os.getpid()), os.O_WRONLY | os.O_CREAT | os.O_EXCL))
"""


def test_processes_claiming_at_once_share_one_new_part_and_the_old_stays_whole(tmp_path):
    run = tmp_path / "run"
    old = _tree(_old_part(run))
    procs = [subprocess.Popen([sys.executable, "-c", _CLAIM, str(run), NEW], stdin=subprocess.PIPE,
                              cwd=tmp_path)  # (not the checkout: its writerprof/ has no probes/)
             for _ in range(8)]
    for proc in procs:
        proc.stdin.close()
    assert [proc.wait(timeout=60) for proc in procs] == [0] * 8
    assert _tree(run / PREVIOUS_DIR / OLD / "hosts" / "hostb") == old
    new = run / "hosts" / "hostb"
    assert sorted(os.listdir(new / "procs")) == sorted(f"{p.pid}.events.jsonl" for p in procs)
    assert (new / RUN_ID_FILE).read_text() == NEW + "\n"
    assert sorted(os.listdir(run)) == ["hosts", PREVIOUS_DIR]  # no half-made part left beside them
