"""Merging the parts of a recording made apart: a synthetic run of two hosts,
split as two hosts without a shared run directory would have left it."""

from __future__ import annotations

import filecmp
import shutil

import pytest

from writerprof.errors import UsageError
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
