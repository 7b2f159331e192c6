"""Merging the parts of a recording made apart: a synthetic run of two hosts,
split as two hosts without a shared run directory would have left it."""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil

import pytest

from writerprof.errors import UsageError, WriterprofError
from writerprof.probes.writerprof_probe.format import RUN_ID_FILE
from writerprof.run import load, merge
from writerprof.synthetic import Scenario, write_run


@pytest.fixture
def split(tmp_path):
    """(whole run, launcher's part, host1's part)."""
    whole, launcher, other = tmp_path / "whole", tmp_path / "launcher", tmp_path / "host1-part"
    write_run(whole, Scenario(hosts=2))
    shutil.copytree(whole, launcher)
    (other / "hosts").mkdir(parents=True)
    shutil.move(launcher / "hosts" / "host1", other / "hosts" / "host1")
    return whole, launcher, other


def test_the_parts_merge_into_the_run_a_shared_directory_would_hold(split, tmp_path):
    whole, launcher, other = split
    parts = merge.find_parts([other, launcher])
    assert parts.launcher == launcher and parts.hosts == {"host0": launcher, "host1": other}
    out = merge.merge(parts, tmp_path / "merged")
    for host in ("host0", "host1"):
        cmp = filecmp.dircmp(whole / "hosts" / host, out / "hosts" / host)
        assert not (cmp.left_only or cmp.right_only or cmp.diff_files)
    merged, original = load(out), load(whole)
    assert merged.hosts == original.hosts and len(merged.processes) == len(original.processes)
    assert merged.meta["merged_from"] == [str(other.resolve()), str(launcher.resolve())]


def test_what_is_not_the_parts_of_one_recording_is_refused(split, tmp_path):
    whole, launcher, other = split
    with pytest.raises(UsageError, match="both have a run.json"):
        merge.find_parts([launcher, whole])
    with pytest.raises(UsageError, match="host host1 is in both"):
        merge.find_parts([whole, other])
    with pytest.raises(UsageError, match="none of the parts has a run.json"):
        merge.find_parts([other])
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="not a part of a recording"):
        merge.find_parts([launcher, tmp_path / "empty"])
    with pytest.raises(UsageError, match="no such directory"):
        merge.find_parts([launcher, tmp_path / "nowhere"])


# --- hostile parts: nothing followed out of a part, nothing of another recording

def _with_ids(launcher, other, launcher_id="1111111111111111", part_id="1111111111111111"):
    meta = json.loads((launcher / "run.json").read_text())
    (launcher / "run.json").write_text(json.dumps(dict(meta, run_id=launcher_id)))
    if part_id is not None:
        (other / "hosts" / "host1" / RUN_ID_FILE).write_text(part_id + "\n")


def test_a_part_of_another_recording_is_refused_with_both_ids(split, tmp_path):
    _, launcher, other = split
    _with_ids(launcher, other, part_id="2222222222222222")
    with pytest.raises(UsageError, match=re.escape("host host1 is of another recording: its recording id is "
                                                   f"2222222222222222, {launcher}'s is 1111111111111111")):
        merge.find_parts([launcher, other])
    (other / "hosts" / "host1" / RUN_ID_FILE).unlink()
    with pytest.raises(UsageError, match="its recording id is none"):
        merge.find_parts([launcher, other])


def test_parts_of_one_recording_merge_and_keep_its_id(split, tmp_path):
    _, launcher, other = split
    _with_ids(launcher, other)
    parts = merge.find_parts([launcher, other])
    assert parts.run_id == "1111111111111111"
    assert load(merge.merge(parts, tmp_path / "merged")).meta["run_id"] == "1111111111111111"


def test_the_launchers_own_host_carries_the_id_too(split, tmp_path):
    """record writes the launcher host's id as every other host's: a
    launcher's part whose host disagrees with its run.json is damaged (exit
    1, as any damage); one without an id there is of a recording from before
    the launcher's host had one."""
    _, launcher, other = split
    _with_ids(launcher, other)
    (launcher / "hosts" / "host0" / RUN_ID_FILE).write_text("3333333333333333\n")
    with pytest.raises(WriterprofError, match=re.escape("says recording 3333333333333333")) as refused:
        merge.find_parts([launcher, other])
    assert refused.value.exit_code == 1 and "a damaged run directory" in str(refused.value)
    (launcher / "hosts" / "host0" / RUN_ID_FILE).unlink()
    assert merge.find_parts([launcher, other]).hosts == {"host0": launcher, "host1": other}


def test_a_part_moved_aside_by_a_later_recording_is_named(split, tmp_path):
    """A later recording into the same node-local directory moved this
    recording's part to previous/ID/: the refusal says where it is."""
    _, launcher, other = split
    _with_ids(launcher, other, part_id="2222222222222222")
    aside = other / "previous" / "1111111111111111"
    shutil.copytree(other / "hosts", aside / "hosts")
    (aside / "hosts" / "host1" / RUN_ID_FILE).write_text("1111111111111111\n")
    with pytest.raises(UsageError, match=re.escape(f"not merged (a later recording moved this one's part of host1 "
                                                   f"aside: merge {aside})")):
        merge.find_parts([launcher, other])
    assert merge.find_parts([launcher, aside]).hosts == {"host0": launcher, "host1": aside}


@pytest.mark.parametrize("where", ["host", "file", "hosts"])
def test_a_link_out_of_a_part_is_refused_not_followed(split, tmp_path, where):
    _, launcher, other = split
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("not the recording's")
    if where == "host":  # hosts/NAME -> a directory elsewhere (/etc, say)
        (other / "hosts" / "evil").symlink_to(outside)
        link = other / "hosts" / "evil"
    elif where == "file":
        link = other / "hosts" / "host1" / "procs" / "secret"
        link.symlink_to(outside / "secret")
    else:
        shutil.move(other / "hosts", outside / "hosts")
        (other / "hosts").symlink_to(outside / "hosts")
        link = other / "hosts"
    with pytest.raises(UsageError, match=re.escape(f"{link}: a symbolic link, not a regular file: a part of a "
                                                   f"recording holds none; not merged")):
        merge.merge(merge.find_parts([launcher, other]), tmp_path / "merged")
    assert not (tmp_path / "merged").exists()


@pytest.mark.timeout(30)  # the code before read a FIFO, and waited for its writer
def test_a_fifo_in_a_part_is_refused_not_read(split, tmp_path):
    _, launcher, other = split
    fifo = other / "hosts" / "host1" / "procs" / "1-1.events.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match=re.escape(f"{fifo}: a FIFO, not a regular file")):
        merge.merge(merge.find_parts([launcher, other]), tmp_path / "merged")


def test_the_merged_run_is_private(split, tmp_path):
    _, launcher, other = split
    for path in other.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    out = merge.merge(merge.find_parts([launcher, other]), tmp_path / "merged")
    modes = {p.stat().st_mode & 0o777 for p in [out, *out.rglob("*")] if p.is_dir()}
    assert modes == {0o700}
    assert {p.stat().st_mode & 0o777 for p in out.rglob("*") if p.is_file()} == {0o600}
