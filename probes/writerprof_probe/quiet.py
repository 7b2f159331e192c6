"""The probe's threads, started with every signal blocked: a signal meant for
the target (one it blocks and collects with sigwait, Slurm's --signal) is
never delivered to a thread of ours, whose default action would end the
process. The mask is set in the starting thread around the start, so the
new thread has it from its first instruction; the starting thread's own
mask is put back at once (a signal that came meanwhile is delivered then)."""

import _signal
import _thread


def start_thread(function, args):
    """_thread.start_new_thread(function, args), the new thread blocking every signal."""
    if not hasattr(_signal, "pthread_sigmask"):
        return _thread.start_new_thread(function, args)
    before = _signal.pthread_sigmask(_signal.SIG_BLOCK, _signal.valid_signals())
    try:
        return _thread.start_new_thread(function, args)
    finally:
        _signal.pthread_sigmask(_signal.SIG_SETMASK, before)
