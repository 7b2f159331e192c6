"""The probe on a run directory that fills up: the target never notices.

The reproducer is run probed (the probe directory on PYTHONPATH and
WRITERPROF_RUN set, as `record` does) with its journals on a tmpfs with a few
KiB left, under each start method: its exit status, its files and the shape
of its output are those of an unprobed run; each process that ran out of room
says so once on stderr, and the run directory still loads."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

import writerprof.probes
from writerprof.run import directory, load

from helpers import writerprof_command

PROBE_DIR = os.path.dirname(writerprof.probes.__file__)
REPRO = ["repro", "--json", "--saves", "2", "--size", "8MiB", "--chunk-size", "1MiB",
         "--verify", "--keep", "--seed", "7", "--no-fsync"]


def _repro(method: str, out: Path, run: Path | None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("WRITERPROF_RUN", None)
    if run is not None:
        env.update(WRITERPROF_RUN=str(run), PYTHONPATH=PROBE_DIR)
    return subprocess.run(writerprof_command() + REPRO + ["--start-method", method, "--dir", str(out)],
                          env=env, capture_output=True, text=True, timeout=180)


def _digests(directory: Path) -> dict[str, str]:
    """Each save's file by its save number (the names carry the producer's pid)."""
    return {p.name.rsplit("-", 1)[1]: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()}


def _records(stdout: str) -> list[tuple]:
    """The reproducer's JSON records without their timings: what must not change."""
    shape = []
    for line in stdout.splitlines():
        record = json.loads(line)
        shape.append((record["record"], record.get("bytes"), record.get("start_method")))
    return shape


@pytest.fixture
def nearly_full(tiny_filesystem):
    """The tiny tmpfs with about 8 KiB left: room for a process's first lines, not its chunks."""
    run = directory.create(tiny_filesystem / "run", ["writerprof", *REPRO], interval_ns=50_000_000,
                           sampler=False, probes=[], env={})
    free = os.statvfs(tiny_filesystem)
    (tiny_filesystem / "filler").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 8192))
    return run


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_a_full_run_directory_changes_nothing_for_the_target(tmp_path, nearly_full, method):
    plain = _repro(method, tmp_path / "plain", None)
    assert plain.returncode == 0, plain.stderr
    probed = _repro(method, tmp_path / "probed", nearly_full)
    assert probed.returncode == 0, probed.stderr
    assert "Traceback" not in probed.stderr
    assert _records(probed.stdout) == _records(plain.stdout)
    assert _digests(tmp_path / "probed") == _digests(tmp_path / "plain")
    # Each process that lost its journal said so once, and only that.
    said = [line for line in probed.stderr.splitlines() if line.startswith("writerprof:")]
    assert said and all("probe off in pid" in line and "No space left" in line for line in said)
    pids = [line.split("pid ")[1].split(":")[0] for line in said]
    assert len(pids) == len(set(pids))
    # What made it to disk still loads, and the loss is stated.
    os.remove(nearly_full.parent / "filler")  # room again: nothing more is written by now
    recorded = load(nearly_full)
    assert len(recorded.processes) >= 1 and recorded.losses
