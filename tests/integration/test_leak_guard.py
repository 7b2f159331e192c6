"""The suite's shared-memory leak guard (conftest.leaks) blames a test for
the segments its own recorded processes created and left, and for nothing
else in /dev/shm: other programs' segments come and go beside it."""

from __future__ import annotations

import sys
from multiprocessing import resource_tracker, shared_memory

from conftest import _segments, leaks
from helpers import run_writerprof

# A target that leaves its segment behind: kept from its resource tracker, never unlinked.
LEAKER = ("from multiprocessing import resource_tracker, shared_memory\n"
          "m = shared_memory.SharedMemory(create=True, size=4096)\n"
          "resource_tracker.unregister(m._name, 'shared_memory')\n"
          "print(m.name)\n")


def test_a_recorded_leak_is_blamed_and_another_programs_segment_is_not(tmp_path):
    before = _segments()
    other = shared_memory.SharedMemory(create=True, size=4096)  # another program's, unrecorded
    resource_tracker.unregister(other._name, "shared_memory")
    leaked = None
    try:
        done = run_writerprof("record", "-o", tmp_path / "run", "--", sys.executable, "-c", LEAKER)
        leaked = done.stdout.split()[-1]
        assert leaks(before, tmp_path, settle_s=0.2) == {leaked}
    finally:
        for name in (other.name, leaked):
            if name:
                segment = shared_memory.SharedMemory(name=name)
                resource_tracker.unregister(segment._name, "shared_memory")
                segment.close()
                segment.unlink()
        other.close()
    assert not leaks(before, tmp_path, settle_s=0)
