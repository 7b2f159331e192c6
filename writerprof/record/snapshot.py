"""A stall snapshot: what every recorded process of a host is doing at the
moment its saves stopped making progress (writerprof.record.stall decides
when). Of each process its state, command line and threads; of each thread
its kernel state, the system call it is in (/proc/PID/task/TID/syscall:
number, name where writerprof.record.syscalls knows it, arguments), its wait
channel (wchan), the CPU time it used over a short window and the time it
waited on a run queue for a CPU meanwhile (a thread that spins is on a CPU
or waiting for one most of it, however busy the host; a parked one
neither), and its Python stack, from one
`py-spy dump` of each Python process. One JSON object, a line of
HOST_DIR/stalls.jsonl (layout.STALLS_FILE; docs/formats.md)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from writerprof.probes.writerprof_probe.identity import redact_argv
from writerprof.record import procfs, pythons, syscalls
from writerprof.record.ptrace import find_py_spy, ptrace_problem, py_spy_version
from writerprof.record.system import System

# The window over which each thread's CPU time is measured: long enough that
# a spinning thread's share is clear on clock ticks (50 of them at 100 Hz),
# short beside any stall worth a snapshot.
CPU_WINDOW_NS = 500_000_000
DUMPS_AT_ONCE = 4  # py-spy dumps run side by side (each ~15 ms of CPU, most of it starting up)
DUMP_TIMEOUT_S = 10.0


def take(system: System, processes: list[tuple[int, int, str | None]], **stall) -> dict:
    """The snapshot of processes, each (pid, start_ticks, journal role or
    None); `stall` (t_ns, last_progress_ns, stall_ns) goes in as it is."""
    by_schedstat = system.read("/proc/self/schedstat") is not None
    before = {pid: (time.monotonic_ns(), _cpu_ns(system, pid, by_schedstat)) for pid, _, _ in processes}
    time.sleep(CPU_WINDOW_NS / 1e9)
    names = syscalls.names()
    found = []
    for pid, start_ticks, role in processes:
        process = _process(system, pid, start_ticks, role, before[pid], by_schedstat, names)
        if process is not None:
            found.append(process)
    snapshot = {**stall, "window_ns": CPU_WINDOW_NS, "machine": os.uname().machine, "processes": found}
    snapshot.update(_stacks(system, [p for p in found if p.pop("python")]))
    return snapshot


def _cpu_ns(system: System, pid: int, by_schedstat: bool) -> dict[str, tuple[int, int | None]]:
    """tid -> the CPU time it has used and its run-queue delay (schedstat: ns;
    else its stat's clock ticks, and no delay)."""
    files = procfs.TaskFiles(system, pid, "schedstat" if by_schedstat else "stat", keep_open=0)
    return {tid: procfs.parse_schedstat(data) if by_schedstat else (_stat_cpu_ns(data), None)
            for tid, data in files.read() if data}


def _thread_cpu_ns(system: System, task: str, stat: bytes, by_schedstat: bool) -> tuple[int, int | None] | None:
    if not by_schedstat:
        return _stat_cpu_ns(stat), None
    data = system.read(f"{task}/schedstat")
    return procfs.parse_schedstat(data.encode()) if data else None


def _stat_cpu_ns(data: bytes) -> int:
    thread = procfs.parse_thread_stat(data)
    return thread.utime_ns + thread.stime_ns


def _process(system: System, pid: int, start_ticks: int, role: str | None,
             before: tuple[int, dict[str, tuple[int, int | None]]], by_schedstat: bool,
             names: dict[int, str]) -> dict | None:
    """The process as it is now; its threads' CPU time since `before` (when it was read, and what)."""
    read_ns, before = before
    window_ns = time.monotonic_ns() - read_ns
    text = system.read(f"/proc/{pid}/stat")
    stat = procfs.parse_stat(text) if text else None
    if stat is None or stat.start_ticks != start_ticks:
        return None  # gone since (or its pid already another's)
    exe = procfs.read_exe(system, pid)
    threads = []
    for tid, data in procfs.TaskFiles(system, pid, "stat", keep_open=0).read():
        if not data:
            continue
        thread = procfs.parse_thread_stat(data)
        task = f"/proc/{pid}/task/{tid}"
        now = _thread_cpu_ns(system, task, data, by_schedstat) if tid in before else None
        # (None: a thread started within the window; a delay without schedstat)
        used = None if now is None else now[0] - before[tid][0]
        delay = None if now is None or now[1] is None else now[1] - before[tid][1]
        threads.append({"tid": thread.tid, "name": thread.name, "state": _state(data), "cpu": thread.cpu,
                        "window_cpu_ns": used, "window_delay_ns": delay,
                        **_syscall(system.read(f"{task}/syscall"), names),
                        "wchan": _wchan(system.read(f"{task}/wchan"))})
    return {"pid": pid, "ppid": stat.ppid, "created_ns": procfs.start_ns(start_ticks), "comm": _comm(text),
            "window_ns": window_ns, "state": stat.state, "role": role,
            "cmdline": redact_argv(procfs.read_cmdline(system, pid)), "exe": exe, "threads": threads,
            "python": pythons.is_python(exe) or bool(role)}


def _state(stat: bytes) -> str:
    """A stat's state letter (R, S, D, T, ...), the field after the comm."""
    close = stat.rindex(b")")
    return stat[close + 2:close + 3].decode()


def _comm(stat_text: str) -> str:
    return stat_text[stat_text.index("(") + 1:stat_text.rindex(")")]


def _syscall(text: str | None, names: dict[int, str]) -> dict:
    """/proc/.../syscall: "NR ARG1 ... ARG6 SP PC", "-1 SP PC" (blocked, in
    no system call) or "running"; None where it could not be read."""
    fields = text.split() if text else []
    if not fields or fields[0] == "running":
        return {"syscall": None, "syscall_name": None, "syscall_args": None}
    number = int(fields[0])
    args = [int(a, 16) for a in fields[1:7]] if number >= 0 else None
    return {"syscall": number, "syscall_name": names.get(number), "syscall_args": args}


def _wchan(text: str | None) -> str | None:
    """Where in the kernel the thread sleeps; None while it runs ("0") or unreadable."""
    text = (text or "").strip()
    return None if text in ("", "0") else text


def _stacks(system: System, processes: list[dict]) -> dict:
    """Each Python process's threads' frames from one py-spy dump (innermost
    first, into its threads by thread id); what stopped them, if anything."""
    py_spy = find_py_spy()
    problem = "py-spy not found" if py_spy is None else ptrace_problem(system)
    if problem or not processes:
        return {"py_spy": None, "stacks_error": problem}
    with ThreadPoolExecutor(DUMPS_AT_ONCE, thread_name_prefix="writerprof-dump") as pool:
        dumps = list(pool.map(lambda p: _dump(py_spy, p["pid"]), processes))
    for process, (threads, error) in zip(processes, dumps):
        process["stack_error"] = error
        for thread in process["threads"]:
            found = threads.get(thread["tid"])
            thread["python_name"], thread["frames"] = found if found else (None, None)
    return {"py_spy": py_spy_version(py_spy), "stacks_error": None}


def _dump(py_spy: str, pid: int) -> tuple[dict[int, tuple], str | None]:
    """tid -> (Python's name of the thread, its frames) of one `py-spy dump`; or why none."""
    try:
        done = subprocess.run([py_spy, "dump", "--json", "--pid", str(pid)], capture_output=True, text=True,
                              timeout=DUMP_TIMEOUT_S, start_new_session=True)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, f"py-spy dump: {exc}"
    try:
        threads = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        threads = None
    if not isinstance(threads, list):
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return {}, (lines[0].removeprefix("Error: ") if lines else f"py-spy dump exited {done.returncode}")
    return {t.get("os_thread_id"): (t.get("thread_name"), [
        {"function": f.get("name"), "file": f.get("short_filename") or f.get("filename"), "line": f.get("line")}
        for f in t.get("frames") or []]) for t in threads if isinstance(t, dict)}, None
