"""CPU affinity of a whole process, not just the calling thread."""

from __future__ import annotations

import os


def set_process_affinity(cpus) -> None:
    """Pin every thread of this process (os.sched_setaffinity(0) moves only the
    calling thread on Linux, and generator threads may already exist)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except ProcessLookupError:  # the thread ended meanwhile
            pass
