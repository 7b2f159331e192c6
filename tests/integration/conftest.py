"""Integration tests run the installed `writerprof` in real subprocesses; no
shared-memory segment may outlive a test."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from helpers import mount_tmpfs
from slurm_env import SEGMENTS as SLURM_JOBS

SHM = "/dev/shm"
# (The Slurm tests' jobs' segments: one job runs beside that module's other
# tests, and each test removes what its SIGKILLed jobs left.)


def _segments() -> set[str]:
    return {name for name in os.listdir(SHM) if not name.startswith(SLURM_JOBS)} if os.path.isdir(SHM) else set()


# After a process is killed, its resource tracker unlinks what it left a moment
# later, on its own: a segment still there this long after the test is a leak.
SETTLE_S = 3.0


@pytest.fixture(autouse=True)
def no_shared_memory_leak():
    before = _segments()
    yield
    deadline = time.monotonic() + SETTLE_S
    while (leaked := _segments() - before) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not leaked, f"shared-memory segments left in {SHM}: {sorted(leaked)}"


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
