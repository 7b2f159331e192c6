"""The names of the system calls a stalled thread sits in, by number, for
the machine record runs on: /proc/PID/task/TID/syscall gives the number
only, and the numbers differ between x86_64 and the generic table of
aarch64 (and riscv64). Only the calls a thread waits or spins in are named:
the rest keep their number (a stall snapshot writes both)."""

from __future__ import annotations

import os

_X86_64 = {
    0: "read", 1: "write", 2: "open", 3: "close", 7: "poll", 9: "mmap", 11: "munmap", 17: "pread64",
    18: "pwrite64", 19: "readv", 20: "writev", 23: "select", 24: "sched_yield", 26: "msync", 34: "pause",
    35: "nanosleep", 43: "accept", 44: "sendto", 45: "recvfrom", 46: "sendmsg", 47: "recvmsg", 56: "clone",
    57: "fork", 59: "execve", 61: "wait4", 72: "fcntl", 73: "flock", 74: "fsync", 75: "fdatasync",
    87: "unlink", 128: "rt_sigtimedwait", 130: "rt_sigsuspend", 202: "futex", 230: "clock_nanosleep",
    231: "exit_group", 232: "epoll_wait", 247: "waitid", 257: "openat", 263: "unlinkat", 270: "pselect6",
    271: "ppoll", 277: "sync_file_range", 281: "epoll_pwait", 285: "fallocate", 441: "epoll_pwait2",
    449: "futex_waitv",
}
# The generic table (include/uapi/asm-generic/unistd.h): aarch64, riscv64, loongarch64.
_GENERIC = {
    22: "epoll_pwait", 25: "fcntl", 32: "flock", 35: "unlinkat", 47: "fallocate", 56: "openat", 57: "close",
    63: "read", 64: "write", 65: "readv", 66: "writev", 67: "pread64", 68: "pwrite64", 72: "pselect6",
    73: "ppoll", 82: "fsync", 83: "fdatasync", 84: "sync_file_range", 94: "exit_group", 95: "waitid",
    98: "futex", 101: "nanosleep", 115: "clock_nanosleep", 124: "sched_yield", 133: "rt_sigsuspend",
    137: "rt_sigtimedwait", 202: "accept", 206: "sendto", 207: "recvfrom", 211: "sendmsg", 212: "recvmsg",
    215: "munmap", 220: "clone", 221: "execve", 222: "mmap", 227: "msync", 260: "wait4", 441: "epoll_pwait2",
    449: "futex_waitv",
}
_TABLES = {"x86_64": _X86_64, "aarch64": _GENERIC, "riscv64": _GENERIC, "loongarch64": _GENERIC}


def names(machine: str | None = None) -> dict[int, str]:
    """Number -> name of the calls named, for machine (default: this one's, uname -m); {} for another."""
    return _TABLES.get(machine or os.uname().machine, {})
