"""The reproducer's saves, run for real: every start method, the ground-truth
figures it prints, data integrity, and the I/O options."""

from __future__ import annotations

import filecmp
import os

import pytest
from helpers import repro_records

SMALL = ("--size", "48MiB", "--chunk-size", "4MiB", "--buffers", "4")


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_each_start_method_saves_verified_files(method, tmp_path):
    saves, summary = repro_records(
        "--start-method", method, "--saves", 2, "--verify", "--dir", tmp_path, *SMALL
    )
    assert [s["save"] for s in saves] == [1, 2]
    for record in saves:
        assert record["start_method"] == method
        assert record["bytes"] == 48 << 20
        assert record["chunks"] == 12
        assert record["verified"] is True
        assert record["fsync_s"] > 0
        # The figures add up the way they are documented.
        assert record["io_s"] == pytest.approx(
            record["write_s"] + record["fadvise_s"] + record["fsync_s"] + record["close_s"]
        )
        assert record["throughput_gib_s"] == pytest.approx(
            record["bytes"] / record["total_s"] / (1 << 30)
        )
        assert 0 < record["writer_startup_s"] < record["total_s"]
        assert record["write_s"] + record["gen_s"] < 2 * record["total_s"]
    # One writer per save, each a process of its own.
    assert len({s["writer_pid"] for s in saves}) == 2
    assert summary["mean_throughput_gib_s"] == pytest.approx(
        sum(s["throughput_gib_s"] for s in saves) / 2
    )
    assert summary["start_method"] == method
    assert os.listdir(tmp_path) == []  # files go once their save is done


@pytest.mark.parametrize("generator", ["random", "dgen"])
def test_other_generators_verify(generator, tmp_path):
    if generator == "dgen":
        pytest.importorskip("dgen_py")
    saves, _ = repro_records(
        "--generator", generator, "--gen-threads", 2, "--verify", "--saves", 1,
        "--size", "20MiB", "--chunk-size", "3MiB", "--dir", tmp_path,
    )
    assert saves[0]["verified"] and saves[0]["chunks"] == 7
    assert saves[0]["bytes"] == 20 << 20


def test_same_seed_same_bytes_and_keep(tmp_path):
    # --verify: the default ring may overwrite a buffer while it is being
    # written, so only the safe ring promises the generator's bytes.
    runs = {}
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        directory = tmp_path / name
        saves, _ = repro_records(
            "--seed", seed, "--keep", "--verify", "--saves", 1, "--dir", directory, *SMALL
        )
        (kept,) = os.listdir(directory)
        assert saves[0]["path"] == str(directory / kept)
        assert os.path.getsize(directory / kept) == 48 << 20
        runs[name] = directory / kept
    assert filecmp.cmp(runs["a"], runs["b"], shallow=False)
    assert not filecmp.cmp(runs["a"], runs["c"], shallow=False)


def test_no_fsync_and_fadvise(tmp_path):
    (plain,), _ = repro_records("--no-fsync", "--saves", 1, "--dir", tmp_path, *SMALL)
    assert plain["fsync_s"] == 0 and plain["fadvise_s"] == 0
    (advised,), summary = repro_records(
        "--fadvise", "dontneed", "--saves", 1, "--dir", tmp_path, *SMALL
    )
    assert advised["fsync_s"] > 0 and advised["fadvise_s"] > 0
    assert summary["fsync"] is True


def test_default_temporary_directory_is_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    repro_records("--saves", 1, *SMALL)
    assert os.listdir(tmp_path) == []
