"""The journal through a process's life: a new journal in every forked
child, the fork-hazard record in the parent, and a last flush on exit,
os._exit and SIGTERM/SIGHUP (whose default would lose the last batch)."""

import atexit
import os
import resource
import signal
import sys
import time

from . import calls, identity, mp, shm
from .format import FIRST_ADDED_PHASE

_journal = None
_process = None
_phases = None
_exited = [False]


def install(journal, process, phases):
    global _journal, _process, _phases
    _journal, _process, _phases = journal, process, phases
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
    atexit.register(_exit, "atexit", None)
    exit_ = os._exit

    def _exit_wrapper(code):
        _exit("os._exit", code)
        exit_(code)

    _exit_wrapper.__wrapped__ = exit_
    os._exit = _exit_wrapper
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_DFL:
            try:
                signal.signal(signum, _fatal)
            except ValueError:  # not the main thread: leave the default
                break


def _fatal(signum, frame):
    """Flush, then die of the signal as the default action would."""
    _exit("signal", -signum, signal=signal.Signals(signum).name)
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _usage():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return dict(utime_s=usage.ru_utime, stime_s=usage.ru_stime, minflt=usage.ru_minflt,
                majflt=usage.ru_majflt, nvcsw=usage.ru_nvcsw, nivcsw=usage.ru_nivcsw,
                maxrss_kb=usage.ru_maxrss)


def _exit(via, code, **fields):
    if _exited[0]:
        return
    _exited[0] = True
    try:
        shm.at_exit()
        _journal.flush()
        _journal.event("exit", via=via, code=code, rusage=_usage(), **fields)
        _journal.note_stopped()
    except Exception:
        pass


def _before_fork():
    try:
        native = len(os.listdir("/proc/self/task"))
        # Only a process that imported threading can have Python threads.
        threading = sys.modules.get("threading")
        threads = [t.name for t in threading.enumerate()] if threading else ["MainThread"]
        forking = threading.current_thread().name if threading else "MainThread"
        _journal.flush()
        _journal.event("fork", native_threads=native, python_threads=len(threads),
                       threads=threads[:32], forking_thread=forking)
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
            affinity=sorted(os.sched_getaffinity(0)),
        )
        _journal.open(os.getpid(), created_ns)
        _journal.event("process", **_process)
        for name, code in _phases.codes.items():
            if code >= FIRST_ADDED_PHASE:
                _journal.event("phase", code=code, name=name)
        calls.reset_after_fork()
        mp.reset_after_fork()
        shm.after_fork()
    except Exception:
        pass
