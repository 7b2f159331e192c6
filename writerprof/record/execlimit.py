"""The kernel's limit on what a new program takes (execve(2)'s E2BIG), and
what record's additions to CMD's environment (PYTHONPATH, LD_PRELOAD,
WRITERPROF_*, OMPI_MCA_mca_base_env_list) count against it: a CMD whose
arguments fill the limit runs plainly, and would fail under record: record
then runs it without them (session._start), and says why.

Linux's accounting (fs/exec.c, bprm_stack_limits and copy_strings): the
program's path, every environment string and every argument, each with its
NUL, and a pointer to each, within a quarter of the stack limit (`ulimit
-s`), at most 6 MiB and at least 32 pages; and each string within 32 pages."""

from __future__ import annotations

import os
import resource
import struct
from errno import E2BIG  # (the failure this module explains)

_POINTER = struct.calcsize("P")
_PAGES = 32 * resource.getpagesize()  # ARG_MAX and MAX_ARG_STRLEN
_STACK_SHARE_MAX = 6 << 20  # the kernel's _STK_LIM / 4 * 3


def limit() -> int:
    """Bytes of strings and pointers a new program may take here."""
    stack = resource.getrlimit(resource.RLIMIT_STACK)[0]
    share = _STACK_SHARE_MAX if stack == resource.RLIM_INFINITY else min(_STACK_SHARE_MAX, stack // 4)
    return max(share, _PAGES)


def environ_bytes(env: dict) -> int:
    """What an environment counts against limit()."""
    return _counted(f"{k}={v}" for k, v in env.items())


def fits(path: str, argv: list[str], env: dict) -> bool:
    """Whether execve(path, argv, env) is within the kernel's limits."""
    return taken(path, argv, env) <= limit() and _longest(argv, env) <= _PAGES


def over_by_additions(path: str, argv: list[str], env: dict, plain_env: dict) -> str | None:
    """Why CMD's exec failed with E2BIG, if record's additions to its
    environment (env, against plain_env) are what took it over the limit:
    one line saying so and what to do; None where CMD would not run plainly
    either (the kernel's own message is then the one to give)."""
    if not fits(path, argv, plain_env) or fits(path, argv, env):
        return None
    added = f"{environ_bytes(env) - environ_bytes(plain_env)} bytes: {_changed(env, plain_env)}"
    if _longest(argv, env) > _PAGES:  # PYTHONPATH or LD_PRELOAD, with record's part
        return (f"record's additions to its environment ({added}) make one of its variables longer than the "
                f"kernel takes ({_PAGES - 1} bytes): shorten CMD's own PYTHONPATH and LD_PRELOAD")
    over = taken(path, argv, env) - limit()
    return (f"its arguments and environment fit the kernel's limit for a new program ({limit()} bytes here: a "
            f"quarter of the stack limit, at most 6 MiB), but not with record's additions to its environment "
            f"({added}): to probe it, shorten its arguments or environment by {over} bytes (a long list in a "
            f"file), or raise the stack limit (ulimit -s)")


def taken(path: str, argv: list[str], env: dict) -> int:
    """What execve(path, argv, env) counts against limit() (the path is copied, with no pointer)."""
    return len(os.fsencode(path)) + 1 + _counted(argv) + environ_bytes(env)


def _changed(env: dict, plain_env: dict) -> str:
    """The names of env's variables that plain_env lacks or holds otherwise (record's own as WRITERPROF_*)."""
    names = sorted({"WRITERPROF_*" if k.startswith("WRITERPROF_") else k for k in env if plain_env.get(k) != env[k]})
    return ", ".join(names)


def _counted(strings) -> int:
    """Strings' bytes as exec counts them: each with its NUL and a pointer to it."""
    return sum(len(os.fsencode(s)) + 1 + _POINTER for s in strings)


def _longest(argv: list[str], env: dict) -> int:
    """The longest string of argv and env, with its NUL."""
    return max([len(os.fsencode(s)) + 1 for s in argv] + [len(os.fsencode(f"{k}={v}")) + 1 for k, v in env.items()])
