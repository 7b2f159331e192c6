"""record as CMD's parent, as transparent as a shell's job: CMD runs in a
process group of its own (so that a signal reaches all of it, not only its
leader), and

- every catchable signal record gets that a job's parent would pass on
  (FORWARDED) goes to CMD's process group;
- in a terminal, CMD's group is the foreground one while record is: Ctrl-C
  and Ctrl-Z reach CMD as they would without record;
- when CMD stops (Ctrl-Z, or reading the terminal from the background),
  record stops too, with the terminal taken back, so that the shell gets its
  prompt back; continued (`fg`, `bg`, SIGCONT), record gives CMD the
  terminal again if it has it, and continues CMD.

Without a terminal of its own (a batch job, a pipe) a stop of CMD is CMD's
alone: record waits on."""

from __future__ import annotations

import os
import resource
import signal
import sys

# What a parent passes on; not SIGCHLD (record's own), SIGPIPE (record's
# writes), SIGTTIN/SIGTTOU (the terminal's word to record itself).
FORWARDED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM,
             signal.SIGTERM, signal.SIGCONT, signal.SIGTSTP, signal.SIGWINCH)
# The ones that ask CMD to end (Forwarding.received).
ENDING = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGTERM)


class Forwarding:
    """While entered: the FORWARDED signals passed on to CMD's process group
    once follow() names it (one that came before, when it does); the
    terminal given to CMD and taken back at the end; wait() follows CMD's
    stops as a job's."""

    def __init__(self, on_ending=None):
        # Called with each ENDING signal once it is passed on: record's own
        # part of an end (run.json told, samples flushed), while CMD has its grace period.
        self._on_ending = on_ending

    def __enter__(self) -> Forwarding:
        self._group: int | None = None
        self._terminal: int | None = None
        self.received: list[int] = []  # the ENDING signals passed on
        self._early: list[int] = []
        self._mask: set | None = None  # record's signal mask before follow()
        # A signal record came with ignored (nohup, a background job of a shell
        # without job control) stays so: CMD inherits it ignored across its exec,
        # as it would without record, and none of it comes to be passed on.
        self._previous = {s: signal.signal(s, self._forward) for s in FORWARDED
                          if signal.getsignal(s) != signal.SIG_IGN}
        return self

    def __exit__(self, *exc_info) -> None:
        self._take_terminal()
        if self._mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self._mask)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _forward(self, signum, frame) -> None:
        if signum in ENDING:
            self.received.append(signum)
        if self._group is None:
            self._early.append(signum)
        else:
            if signum == signal.SIGCONT:  # fg: the terminal is ours again, and CMD's while it runs
                self._give_terminal()
            try:
                os.killpg(self._group, signum)
            except ProcessLookupError:
                pass
        if signum in ENDING and self._on_ending is not None:
            self._on_ending(signum)

    def follow(self, group: int) -> None:
        self._group = group
        # CMD has its parent's signal mask; record itself takes what it passes on.
        self._mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, FORWARDED)
        self._terminal = _terminal()
        self._give_terminal()
        try:  # CMD may have read the terminal before it was its own, and been stopped for it
            os.killpg(group, signal.SIGCONT)
        except ProcessLookupError:
            pass
        early, self._early = self._early, []
        for signum in early:  # came while CMD was being started
            os.killpg(group, signum)

    def wait(self, pid: int):
        """CMD's wait status and rusage (os.wait4's), once it has ended;
        meanwhile, each stop of CMD followed as above."""
        while True:
            _, status, usage = os.wait4(pid, os.WUNTRACED)  # (retried on EINTR: PEP 475)
            if not os.WIFSTOPPED(status):
                return status, usage
            if self._terminal is not None:
                self._stop_as(os.WSTOPSIG(status))

    def _stop_as(self, signum: int) -> None:
        """Stop record as CMD stopped, the terminal taken back for the shell;
        once continued, CMD continued (with the terminal if record has it)."""
        self._take_terminal()
        previous = signal.signal(signum, signal.SIG_DFL) if signum != signal.SIGSTOP else None
        try:
            os.kill(os.getpid(), signum)  # returns once record is continued
        finally:
            if previous is not None:
                signal.signal(signum, previous)
        # Here, not only in the SIGCONT handler: that one runs when Python
        # gets to it, and not at all where SIGCONT came blocked from record's parent.
        self._give_terminal()
        try:
            os.killpg(self._group, signal.SIGCONT)
        except ProcessLookupError:
            pass

    def _take_terminal(self) -> None:
        """The terminal back to record's group, if CMD's has it (never from the shell's)."""
        if self._terminal is None:
            return
        # From a background group tcsetpgrp raises SIGTTOU, which would stop us.
        previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            if os.tcgetpgrp(self._terminal) == self._group:
                os.tcsetpgrp(self._terminal, os.getpgrp())
        except OSError:
            pass
        finally:
            signal.signal(signal.SIGTTOU, previous)

    def _give_terminal(self) -> None:
        """Make CMD's group the terminal's foreground one, if record's is."""
        fd = self._terminal
        if fd is None or self._group is None:
            return
        try:
            if os.tcgetpgrp(fd) == os.getpgrp():
                os.tcsetpgrp(fd, self._group)
        except OSError:
            pass


def end_as(signum: int) -> None:
    """End record by the signal that ended CMD, as a transparent parent
    does (timeout, tini): the shell or scheduler that waits for record then
    sees what it would see of CMD. No core file of record's own. Returns
    only if that signal does not end a process."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (OSError, ValueError):
        pass
    if signum not in (signal.SIGKILL, signal.SIGSTOP):  # (no handler can be set for those)
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, (signum,))
    os.kill(os.getpid(), signum)


def _terminal() -> int | None:
    """stdin's fd if it is record's controlling terminal (job control
    applies), else None."""
    try:
        fd = sys.stdin.fileno()
        if os.isatty(fd):
            os.tcgetpgrp(fd)  # ENOTTY where it is a terminal but not record's session's
            return fd
    except (OSError, ValueError, AttributeError):
        pass
    return None
