"""The two ways a subcommand fails: bad input (exit 2) or a failed job (exit 1).

Both carry one readable line; the CLI prints it and never a traceback.
"""

from __future__ import annotations


class WriterprofError(Exception):
    """The job could not be done; the message says why."""

    exit_code = 1


class UsageError(WriterprofError):
    """The command line asks for something impossible or malformed."""

    exit_code = 2

    def __init__(self, message: str, prog: str | None = None):
        super().__init__(message)
        self.prog = prog  # the (sub)command whose usage was wrong, when known


class Interrupted(BaseException):
    """A signal asked the job to stop; BaseException, so that no `except
    Exception` on the way up can swallow it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum
