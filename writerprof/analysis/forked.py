"""Two parts of a big run's analysis at once: one in a forked child, whose
result comes back pickled, the other in this process meanwhile. The analysis
is one thread of numpy and Python: a second CPU would otherwise sit idle.
The child's part is one whose result is quick to send back (the saves, the
diagnoses, JSON text), not the per-process readings the rest reads."""

from __future__ import annotations

import os
import pickle
import threading


LOADAVG = "/proc/loadavg"  # its 4th field: the tasks runnable now / all tasks


def free_cpus() -> int:
    """CPUs of this process's affinity that no other task wants now."""
    return max(0, round(len(os.sched_getaffinity(0)) - _others_runnable()))


def _others_runnable() -> float:
    """The other tasks runnable at this instant; where that is not known, the
    load average. Not the load average first: it lags a minute, so a report
    run just after another would count the one before as load."""
    try:
        with open(LOADAVG) as source:
            return int(source.read().split()[3].split("/")[0]) - 1  # this process is one of them
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]


def can_fork() -> bool:
    """Whether a CPU is free now for a child (else it would only queue beside
    this process, and its copy-on-write faults cost more than it saves), and
    this is the process's one thread: a child has only the thread that forked,
    another's locks stay locked in it (a notebook's kernel has several)."""
    return (hasattr(os, "fork") and hasattr(os, "sched_getaffinity") and threading.active_count() == 1
            and free_cpus() >= 2)


def beside(child, parent) -> tuple:
    """(child(), parent()), child() run in a forked process while parent()
    runs here. Where the fork fails, or the child does, child() runs here
    after parent(): its exception, if it raises again, is then this process's."""
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return in_turn(child, parent)
    if pid == 0:  # the child: its result down the pipe, then gone without the parent's exit handlers
        status = 1
        try:
            os.close(read)
            data = pickle.dumps(child(), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write, "wb") as out:
                out.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    try:
        mine = parent()
    finally:  # the child's result read, even when parent() failed: it then exits, and is reaped
        with os.fdopen(read, "rb") as source:
            data = source.read()
        _, status = os.waitpid(pid, 0)
    if status or not data:
        return child(), mine
    return pickle.loads(data), mine


def in_turn(child, parent) -> tuple:
    """(child(), parent()) in this process: beside's results, where a fork does not pay."""
    return child(), parent()
