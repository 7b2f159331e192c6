"""Which py-spy to run, and whether it may read CMD's memory here (the
kernel's ptrace policy, our capabilities, a seccomp filter): asked before
py-spy starts, so that a missing permission is one line with its fix."""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import sys

from writerprof.record.system import HOST, System

PY_SPY_ENV = "WRITERPROF_PY_SPY"  # a py-spy executable to use instead of the one found
CAP_SYS_PTRACE = 19
FIX = ("fix: run the container with --cap-add SYS_PTRACE, or set kernel.yama.ptrace_scope=0 "
       "(sysctl), or record with --no-stacks")


def find_py_spy(environ=os.environ) -> str | None:
    """$WRITERPROF_PY_SPY, else the py-spy installed next to this Python (the
    package is a dependency), else the first on PATH."""
    chosen = environ.get(PY_SPY_ENV)
    if chosen:
        return chosen if os.path.isfile(chosen) and os.access(chosen, os.X_OK) else None
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("py-spy", path=environ.get("PATH"))


def ptrace_problem(system: System = HOST) -> str | None:
    """Why a py-spy started by us could not read CMD's memory, from the kernel's
    ptrace policy and our capabilities; None if nothing stops it. py-spy is
    CMD's sibling, not its ancestor, so Yama's scope 1 needs CAP_SYS_PTRACE."""
    text = system.read("/proc/sys/kernel/yama/ptrace_scope")
    scope = int(text) if text and text.strip().isdigit() else None
    if scope is not None and scope >= 3:
        return "ptrace is disabled on this host (kernel.yama.ptrace_scope=3, until reboot)"
    if scope in (1, 2) and not _has_cap(system, CAP_SYS_PTRACE):
        return f"no ptrace permission (kernel.yama.ptrace_scope={scope} and no CAP_SYS_PTRACE)"
    return None


def _has_cap(system: System, bit: int) -> bool:
    status = system.read("/proc/self/status") or ""
    match = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", status, re.M)
    return bool(match) and bool(int(match.group(1), 16) >> bit & 1)


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


def read_problem(pid: int) -> str | None:
    """Whether we may read process pid's memory as py-spy does
    (process_vm_readv: a seccomp filter or a missing capability stops it);
    None if we may, or if it cannot be told (no such call here)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        readv = libc.process_vm_readv
        with open(f"/proc/{pid}/maps") as maps:
            first = maps.readline().split("-", 1)[0]
        address = int(first, 16)
    except (OSError, AttributeError, ValueError):
        return None
    buffer = ctypes.create_string_buffer(8)
    local, remote = _Iovec(ctypes.cast(buffer, ctypes.c_void_p), 8), _Iovec(address, 8)
    readv.restype = ctypes.c_ssize_t
    if readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) >= 0:
        return None
    err = ctypes.get_errno()
    if err in (1, 13):  # EPERM, EACCES
        return f"cannot read process {pid}'s memory ({os.strerror(err)})"
    return None  # ESRCH (gone already), ENOSYS, ...: py-spy will say


def py_spy_version(executable: str) -> str | None:
    try:
        done = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip().removeprefix("py-spy ") or None
