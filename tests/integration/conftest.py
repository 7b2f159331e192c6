"""Integration tests run the installed `writerprof` in real subprocesses; no
shared-memory segment a test's recorded processes created may outlive it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from writerprof.probes.writerprof_probe import format as journal
from writerprof.run.shm import SHM_FILE

from helpers import mount_tmpfs
from s3server import s3_server  # noqa: F401 (a fixture: moto's S3 server on loopback, for the object-store tests)
from slurm_env import SEGMENTS as SLURM_JOBS

SHM = "/dev/shm"
# (The Slurm tests' jobs' segments: one job runs beside that module's other
# tests, and each test removes what its SIGKILLed jobs left.)


def _segments() -> set[str]:
    return {name for name in os.listdir(SHM) if not name.startswith(SLURM_JOBS)} if os.path.isdir(SHM) else set()


def created_in(root: Path) -> set[str]:
    """The segments the probe journaled as created (.shm.bin records, op
    create) by the processes recorded in the run directories under root:
    the test's own, whatever else runs on the machine meanwhile."""
    names = set()
    for path in root.rglob("*" + journal.SHM_SUFFIX):
        data = path.read_bytes()
        records = np.frombuffer(data, SHM_FILE, count=len(data) // SHM_FILE.itemsize)
        created = records["name"][records["op"] == journal.SHM_OPS["create"]]
        names.update(n.rstrip(b"\0").decode(errors="replace").lstrip("/") for n in created.tolist())
    return names


# After a process is killed, its resource tracker unlinks what it left a moment
# later, on its own: a segment still there this long after the test is a leak.
SETTLE_S = 3.0


@pytest.fixture(autouse=True)
def no_shared_memory_leak(tmp_path):
    """A segment created by the test's recorded processes (their journals in
    the test's tmp_path) and still there after it is a leak. Only those:
    /dev/shm is the whole machine's, and other programs' segments, or
    another test's running beside this one, come and go meanwhile. (Its own
    tmp_path: the journals are read before a passed test's directory goes.)"""
    before = _segments()
    yield
    found = leaks(before, tmp_path)
    assert not found, f"shared-memory segments left in {SHM}: {sorted(found)}"


def leaks(before: set[str], root: Path, settle_s: float = SETTLE_S) -> set[str]:
    """The segments created by the processes recorded under root, not there
    before and still there settle_s later."""
    deadline = time.monotonic() + settle_s
    while (leaked := (_segments() - before) & created_in(root)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return leaked


@pytest.fixture
def cpus() -> list[int]:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs at least two allowed CPUs")
    return allowed


@pytest.fixture
def tiny_filesystem(tmp_path):
    """A 4 MiB tmpfs: a real device that fills up under the writer."""
    mountpoint = mount_tmpfs(tmp_path / "tiny", "size=4m")
    yield mountpoint
    subprocess.run(["umount", str(mountpoint)], check=True)
