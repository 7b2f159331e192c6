"""Integration tests run the installed `writerprof` in real subprocesses; no
shared-memory segment may outlive a test."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

SHM = "/dev/shm"


def _segments() -> set[str]:
    return set(os.listdir(SHM)) if os.path.isdir(SHM) else set()


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
    mountpoint = tmp_path / "tiny"
    mountpoint.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mountpoint)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    yield mountpoint
    subprocess.run(["umount", str(mountpoint)], check=True)
