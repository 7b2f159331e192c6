"""The threads live in a process as it started its writers: the probe's
census of the kernel's list (/proc/self/task) at each fork, and at each
Process.start() that did not fork (the threads a fork would have carried).
The native ones, which Python's threading never lists (a C library's pool:
OpenBLAS's, a Tokio runtime's), are the deadlock hazard of fork: a lock one
of them holds at the fork stays locked in the child, with no thread left
there to release it."""

from __future__ import annotations

from collections import Counter

from writerprof.analysis.saves import index

CENSUS_KINDS = ("fork", "process_start")
UNNAMED = ""  # the name counted for the threads that carry their process's


def native_names(data: dict) -> Counter:
    """One census event's native threads: name -> how many; a thread no one
    named (it carries its process's name) counted as UNNAMED."""
    comm = data.get("comm")
    return Counter(UNNAMED if name == comm else name for name in data.get("native_only") or [])


def at_writer_starts(run) -> Counter | None:
    """Over the processes that started writers: each native thread name ->
    the most of them live at one fork or Process.start(). Empty: the census
    found none; None: the run has no census (recorded before the probe took
    one, or no writer was started)."""
    found = None
    for events in index(run).events:
        if not any(kind == "process_start" for kind, _ in events):
            continue
        for kind, data in events:
            if kind in CENSUS_KINDS and "native_only" in data:
                found = (found or Counter()) | native_names(data)  # |: the larger count of each name
    return found


def describe(names: Counter) -> str:
    """"3 tokio-runtime-w, 2 with no name of their own"."""
    parts = [f"{n} {name}" for name, n in sorted(names.items(), key=lambda x: (-x[1], x[0])) if name != UNNAMED]
    n = names.get(UNNAMED)
    if n:
        parts.append(f"{n} with no name of {'its' if n == 1 else 'their'} own")
    return ", ".join(parts)
