"""Threads started with every signal blocked: a signal meant for the process
(one the target blocks and collects with sigwait, Slurm's --signal, a
SIGTERM for `record`) is never delivered to a helper thread of ours, where
its default action would end the process, or where Python only notes it for
a main thread asleep in a system call that nothing then interrupts. The
mask is set in the starting thread around the start, so the new thread has
it from its first instruction; the starting thread's own mask is put back at
once (a signal that came meanwhile is delivered then). The probe's threads
and `record`'s all start so."""

import _signal
import _thread


def masked(mask, function, *args):
    """function(*args) with this thread's signal mask set to mask meanwhile
    (a thread it starts, a process it spawns, keeps that mask); this
    thread's own mask is put back after."""
    if not hasattr(_signal, "pthread_sigmask"):
        return function(*args)
    before = _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
    try:
        return function(*args)
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, before)


def blocking_all(function, *args):
    """function(*args) with every signal blocked in this thread meanwhile."""
    return masked(_signal.valid_signals(), function, *args)


def start_thread(function, args):
    """_thread.start_new_thread(function, args), the new thread blocking every signal."""
    return blocking_all(_thread.start_new_thread, function, args)
