"""The journal through a process's life: a new journal in every forked
child, the fork-hazard record in the parent, and a last flush on exit and
os._exit.

No signal handler: one would be the target's to see (signal.getsignal), be
inherited by forked children that may get the signal before they can run it
(a Pool worker terminated at birth never exits), and wait for a long C call
to return before it runs. A process a signal kills loses the chunk records
since its last batch, as under SIGKILL; its file calls (the interposer's
journal, in shared memory) are all there.

The hooks installed later (multiprocessing, shared memory: only in a process
that imports them) add what they must do at fork and at exit with
on_fork_in_child() and on_exit(), so that this module imports none of them.
"""

import atexit
import os
import time

from . import calls, identity, tasks
from .format import FIRST_ADDED_PHASE

_journal = None
_process = None
_phases = None
_exited = [False]
_fork_in_child = []  # what each installed hook does in a forked child, in install order
_at_exit = []  # what each installed hook does before the last flush


def on_fork_in_child(fn):
    _fork_in_child.append(fn)


def on_exit(fn):
    _at_exit.append(fn)


def install(journal, process, phases):
    global _journal, _process, _phases
    _journal, _process, _phases = journal, process, phases
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
    atexit.register(_exit, "atexit", None)
    exit_ = os._exit

    def _exit_wrapper(code):
        _exit("os._exit", code)
        exit_(code)

    calls.stand_in(os, "_exit", calls.disguised(_exit_wrapper, exit_))


def _usage():
    import resource  # here: only the exit needs it

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return dict(utime_s=usage.ru_utime, stime_s=usage.ru_stime, minflt=usage.ru_minflt,
                majflt=usage.ru_majflt, nvcsw=usage.ru_nvcsw, nivcsw=usage.ru_nivcsw,
                maxrss_kb=usage.ru_maxrss)


def _exit(via, code, **fields):
    if _exited[0]:
        return
    _exited[0] = True
    try:
        for fn in _at_exit:
            fn()
        _journal.flush()
        _journal.event("exit", via=via, code=code, rusage=_usage(), **fields)
        _journal.note_stopped()
    except Exception:
        pass


def _before_fork():
    try:
        threads = tasks.census()
        _journal.flush()
        _journal.event("fork", **threads)
    except Exception:
        pass


def _after_fork_in_child():
    try:
        created_ns = time.monotonic_ns()
        _exited[0] = False
        _process.update(
            t_ns=created_ns, pid=os.getpid(), ppid=os.getppid(), created_ns=created_ns,
            created_via="fork", forked_from=_process["pid"], role=identity.fork_role(_process["role"]),
            wall_ns=time.time_ns(), mono_ns=time.monotonic_ns(),
            affinity=sorted(os.sched_getaffinity(0)), memory=identity.memory_binding(),
        )
        _process["created_ns"] = _journal.open(os.getpid(), created_ns)
        _journal.event("process", **_process)
        for name, code in _phases.codes.items():
            if code >= FIRST_ADDED_PHASE:
                _journal.event("phase", code=code, name=name)
        for fn in _fork_in_child:
            fn()
    except Exception:
        pass
