"""What a run's stall snapshots say (record --stall, writerprof.run.stalls):
for each, what every process was doing when its host's saves had made no
progress for the stall time. A thread waits on what its Python frames name
(py-spy's: a multiprocessing queue's get or put, a pipe, a SemLock, a
Condition, a child's end) or, without one, on what its system call and
wait channel say (a futex is a lock); a thread on a CPU, or runnable and
waiting for one, SPIN_SHARE of the snapshot's window or more spins. Then
who is on the other side, where the journals say it: the processes related
to a waiting one (its parent, its children) that put on queues feed it,
those that got from them drain it; a parent in join waits for its
children's end; a fork child waiting on a lock waits on one the fork
copied locked where its parent had other threads at the fork (its `fork`
event). A cycle of such waits is a deadlock.

Also each process's last queue, semaphore and shared-memory operation that
its journal holds from before the snapshot (a put or get record, a buffer
created, attached or inherited, a resource tracker call or an unlink):
the last thing it did that the probe saw.

Both the report's "stalls" section and the `stall` diagnosis read
snapshots() (found once per run)."""

from __future__ import annotations

import weakref

import numpy as np

from writerprof.analysis.clocks import host_offsets
from writerprof.probes.writerprof_probe.format import SHM_OPS, STACKS_THREAD
from writerprof.run import stalls as stall_files
from writerprof.run.stacks import in_standard_library

# Of the snapshot's window, the share a thread was on a CPU or waiting on a run
# queue for one (a busy host shares its CPUs out): one this runnable while
# nothing progresses spins.
SPIN_SHARE = 0.25
MAX_FRAMES = 8  # of a thread's stack, kept in the section (innermost first)
MAX_CYCLES = 10  # deadlocks named per snapshot

# What a thread waits on, by kind; and who is on the other side of each.
QUEUE_GET, QUEUE_PUT, PIPE_RECV, PIPE_SEND = "queue get", "queue put", "pipe receive", "pipe send"
LOCK, CONDITION, CHILD, THREAD, THREAD_QUEUE = "lock", "condition", "child end", "thread end", "thread queue"
READ, WRITE, POLL, SLEEP, SYNC, KERNEL = "read", "write", "poll", "sleep", "sync", "kernel"
FED = (QUEUE_GET, PIPE_RECV)  # fed by a process that puts
DRAINED = (QUEUE_PUT, PIPE_SEND)  # drained by one that gets

# A Python frame a thread waits in: (its file's end, its function's names, what
# it waits on, the kind). py-spy names a function with its class from 3.11 on
# ("Queue.get"), without before ("get"): the last word is compared.
_FRAMES = (
    ("multiprocessing/queues.py", ("get",), "a multiprocessing queue (Queue.get)", QUEUE_GET),
    ("multiprocessing/queues.py", ("put",), "a full multiprocessing queue (Queue.put)", QUEUE_PUT),
    ("multiprocessing/connection.py", ("recv", "recv_bytes", "recv_bytes_into", "poll"),
     "a pipe (Connection.recv)", PIPE_RECV),
    ("multiprocessing/connection.py", ("wait",), "pipes or sockets (connection.wait)", PIPE_RECV),
    ("multiprocessing/connection.py", ("send", "send_bytes"), "a full pipe (Connection.send)", PIPE_SEND),
    ("multiprocessing/synchronize.py", ("__enter__", "acquire"), "a multiprocessing lock or semaphore (SemLock)",
     LOCK),
    ("multiprocessing/synchronize.py", ("wait", "wait_for"), "a multiprocessing Condition or Event", CONDITION),
    ("multiprocessing/popen_fork.py", ("wait", "poll"), "a child process's end (Process.join)", CHILD),
    ("multiprocessing/process.py", ("join",), "a child process's end (Process.join)", CHILD),
    ("multiprocessing/pool.py", ("join",), "a pool's workers' end (Pool.join)", CHILD),
    ("subprocess.py", ("wait", "_wait", "_try_wait", "communicate"), "a subprocess's end", CHILD),
    ("queue.py", ("get", "put"), "a thread queue (queue.Queue)", THREAD_QUEUE),
    ("threading.py", ("wait", "wait_for"), "a threading Condition or Event", CONDITION),
    ("threading.py", ("acquire", "__enter__"), "a threading Semaphore", LOCK),
    ("threading.py", ("join", "_wait_for_tstate_lock"), "a thread's end (Thread.join)", THREAD),
    ("concurrent/futures/_base.py", ("result", "wait", "as_completed"), "a future's result", CONDITION),
)
_FRAME_FILES = tuple({f for f, _, _, _ in _FRAMES})
# The probe's own frames (its hooks' wrappers, its start-up), in its files or in
# the code it compiles ("<writerprof_probe ...>"): not where a thread waits.
_PROBE_FILES = "writerprof_probe"
# Without such a frame, by the system call it is in.
_SYSCALLS = {
    **dict.fromkeys(("futex", "futex_waitv"), ("a lock (futex)", LOCK)),
    **dict.fromkeys(("wait4", "waitid"), ("a child process's end", CHILD)),
    **dict.fromkeys(("read", "readv", "pread64", "recvfrom", "recvmsg"), ("a read (a pipe, socket or file)", READ)),
    **dict.fromkeys(("write", "writev", "pwrite64", "sendto", "sendmsg"),
                    ("a write (a full pipe or socket, or the device)", WRITE)),
    **dict.fromkeys(("poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_pwait2"),
                    ("poll (file descriptors)", POLL)),
    **dict.fromkeys(("nanosleep", "clock_nanosleep", "pause"), ("a sleep", SLEEP)),
    **dict.fromkeys(("fsync", "fdatasync", "sync_file_range", "msync"), ("a file sync", SYNC)),
}
_ROLE_WORDS = {"main": "main", "fork_child": "fork child", "forkserver_child": "forkserver child",
               "spawn_child": "spawn child", "forkserver": "forkserver", "resource_tracker": "resource tracker"}
_DAEMONS = ("forkserver", "resource_tracker")  # they wait by design: named only where they spin

# The journal events a snapshot's processes are looked up in: identities, forks,
# and the resource tracker's calls and unlinks (probes/writerprof_probe/tracker.py).
_TRACKER_CALL, _UNLINK = "tracker_call", "resource_unlink"
_KINDS = ["process", "fork", _TRACKER_CALL, _UNLINK]

_found: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> its snapshots, read once


def snapshots(run, procs: list[dict]) -> dict:
    """The report's "stalls" section: stall_s (record --stall's, None: not
    recorded with it, 0: off), snapshots (as read here), losses."""
    if run not in _found:
        read = stall_files.load(run)
        offsets = host_offsets(run)
        origin = run.meta.get("started_ns") or 0
        journals = _Journals(run) if read.snapshots else None
        _found[run] = {"stall_s": _seconds(run.meta.get("stall_ns")), "losses": read.losses,
                       "snapshots": [_snapshot(journals, procs, s,
                                               (s["t_ns"] + offsets.get(s["host"], 0) - origin) / 1e9)
                                     for s in read.snapshots]}
    return _found[run]


class _Journals:
    """What the snapshots look up in the run's journals, indexed once."""

    def __init__(self, run):
        self.run = run
        p = run.processes
        self.rows: dict[tuple, list[int]] = {}  # (host, pid) -> its rows
        for row, key in enumerate(zip(p["host"].tolist(), p["pid"].tolist())):
            self.rows.setdefault(key, []).append(row)
        self.events: dict[int, list] = {}  # row -> its events of _KINDS, in time order
        kept = np.isin(run.events["kind"], _KINDS)
        for proc, t_ns, kind, data in zip(run.events["proc"][kept].tolist(), run.events["t_ns"][kept].tolist(),
                                          run.events["kind"][kept].tolist(), run.events["data"][kept].tolist()):
            self.events.setdefault(proc, []).append((t_ns, kind, data))
        self.shm_order = np.argsort(run.shm["proc"], kind="stable")  # run.shm by process, each in time order
        self.shm_procs = run.shm["proc"][self.shm_order]
        codes = {name: code for code, name in run.phase_names.items()}
        self.phases = {op: codes[op] for op in ("put", "get") if op in codes}

    def row(self, host: str, pid: int, created_ns: int | None) -> int | None:
        """The row of that process (of a reused pid, the image whose start is closest)."""
        rows = self.rows.get((host, pid))
        if not rows:
            return None
        created = self.run.processes["created_ns"]
        return rows[-1] if created_ns is None else min(rows, key=lambda r: abs(int(created[r]) - created_ns))

    def of(self, row: int, kind: str, t_ns: int) -> list[dict]:
        """The process's events of that kind up to t_ns, their data with their t_ns."""
        return [{**data, "t_ns": t} for t, k, data in self.events.get(row, []) if k == kind and t <= t_ns]

    def shm(self, row: int, t_ns: int) -> np.ndarray:
        a, b = np.searchsorted(self.shm_procs, [row, row + 1])
        mine = self.run.shm[self.shm_order[a:b]]
        return mine[mine["t_ns"] <= t_ns]


def _seconds(ns) -> float | None:
    return ns / 1e9 if isinstance(ns, int) else None


def _snapshot(journals: _Journals, procs: list[dict], snapshot: dict, at_s: float) -> dict:
    t_ns, host = snapshot["t_ns"], snapshot["host"]
    window = snapshot.get("window_ns") or 0
    rows = {p["id"]: p for p in procs}
    entries = [_process(journals, rows, host, t_ns, p.get("window_ns") or window, p) for p in snapshot["processes"]]
    by_pid = {e["pid"]: e for e in entries}
    for entry in entries:
        entry["on"] = _other_side(journals, entry, by_pid)
    cycles = _cycles(entries, by_pid)
    return {"host": host, "at_s": at_s, "stalled_s": (t_ns - snapshot["last_progress_ns"]) / 1e9,
            "stall_s": _seconds(snapshot.get("stall_ns")), "stacks_error": snapshot.get("stacks_error"),
            "processes": entries, "deadlocks": cycles,
            "spinning": [e["pid"] for e in entries if e["spins"]],
            "says": _sentences(entries, by_pid, cycles)}


def _process(journals: _Journals, rows: dict, host: str, t_ns: int, window_ns: int, process: dict) -> dict:
    row = journals.row(host, process["pid"], process.get("created_ns"))
    proc = rows.get(row) if row is not None else None
    threads = [_thread(t, window_ns) for t in process["threads"] if t.get("name") != STACKS_THREAD]
    main = next((t for t in threads if t["tid"] == process["pid"]), None)
    waiting = main if main is not None and main["waits_on"] else next((t for t in threads if t["waits_on"]), None)
    spinning = [t for t in threads if t["spins"]]
    journal_role = journals.run.processes["role"][row] if row is not None else None
    return {"pid": process["pid"], "id": row, "role": proc["role"] if proc else None, "journal_role": journal_role,
            "rank": proc["rank"] if proc and proc["rank"] >= 0 else None, "parent": proc["parent"] if proc else None,
            "ppid": process.get("ppid"), "comm": process.get("comm"), "state": process.get("state"),
            "cpu_share": round(sum(t["cpu_share"] or 0 for t in threads), 3),
            "runnable_share": round(max((t["runnable_share"] or 0 for t in threads), default=0), 3),
            "spins": bool(spinning), "spinning_threads": [t["tid"] for t in spinning],
            "waits_on": None if spinning or waiting is None else waiting["waits_on"],
            "wait_kind": None if spinning or waiting is None else waiting["wait_kind"],
            "where": (spinning[0] if spinning else waiting or main or {}).get("where"),
            "waiting_thread": None if spinning or waiting is None else waiting["tid"],
            # said in the report: spins, or waits and is probed and no daemon (which waits by design)
            "named": bool(spinning) or (waiting is not None and row is not None and journal_role not in _DAEMONS),
            "stack_error": process.get("stack_error"), "last_op": _last_op(journals, row, t_ns), "threads": threads}


def _thread(thread: dict, window_ns: int) -> dict:
    used = thread.get("window_cpu_ns")
    share = used / window_ns if used is not None and window_ns > 0 else None
    # (capped: the two are counted at slightly different moments)
    runnable = None if share is None else min(1.0, share + (thread.get("window_delay_ns") or 0) / window_ns)
    spins = runnable is not None and runnable >= SPIN_SHARE
    frames = thread.get("frames") or []
    waits_on, kind = (None, None) if spins else _wait(thread, frames)
    return {"tid": thread["tid"], "name": thread.get("python_name") or thread.get("name"),
            "state": thread.get("state"), "cpu_share": None if share is None else round(share, 3),
            "runnable_share": None if runnable is None else round(runnable, 3), "spins": spins,
            "syscall": thread.get("syscall_name") or thread.get("syscall"), "wchan": thread.get("wchan"),
            "waits_on": waits_on, "wait_kind": kind, "where": _where(frames),
            "frames": [_frame_text(f) for f in frames[:MAX_FRAMES]]}


def _wait(thread: dict, frames: list[dict]) -> tuple[str | None, str | None]:
    """What the thread waits on, and its kind: from the outermost of the
    waiting frames it is in (Queue.get around Connection.recv_bytes), else
    from its system call; (None, None) where it runs or nothing says."""
    found = None
    for frame in frames:  # innermost first, through the library's frames
        file, name = frame.get("file") or "", (frame.get("function") or "").rsplit(".", 1)[-1]
        if _PROBE_FILES in file:
            continue
        if not file.endswith(_FRAME_FILES):
            break
        found = next(((what, kind) for f, names, what, kind in _FRAMES if file.endswith(f) and name in names),
                     found)
    if found is not None:
        return found
    if thread.get("state") == "D":
        return f"the kernel ({thread.get('wchan') or 'uninterruptible'})", KERNEL
    return _SYSCALLS.get(thread.get("syscall_name") or "", (None, None))


def _where(frames: list[dict]) -> str | None:
    """The innermost frame of the program's own: outside the waits' library
    files and the probe, and first outside the standard library (a loop that
    calls os.path.exists loops in its own frame, not in genericpath), then
    outside its frozen modules (a script named as one of its modules, test.py)."""
    own = [f for f in frames if not (f.get("file") or "").endswith(_FRAME_FILES)
           and _PROBE_FILES not in (f.get("file") or "")] or frames
    return _frame_text(min(own, key=_library_rank)) if own else None


def _library_rank(frame: dict) -> int:
    file = frame.get("file") or ""
    return 2 if file.startswith("<frozen ") else int(in_standard_library(file))


def _frame_text(frame: dict) -> str:
    return f"{frame.get('function') or '?'} ({frame.get('file') or '?'}:{frame.get('line') or 0})"


def _last_op(journals: _Journals, row: int | None, t_ns: int) -> dict | None:
    """The process's last queue, semaphore or shared-memory operation its
    journal holds from before t_ns: a put or get record, a buffer mapped, a
    resource tracker call or an unlink (whichever came last); with its count
    of puts and gets (who feeds whom) and of unlinks that failed."""
    if row is None:
        return None
    run, found = journals.run, []
    mine = run.chunk_columns.processes(row, row + 1)
    counts = {}
    for op, code in journals.phases.items():
        ends = mine["end_ns"][(mine["phase"] == code) & (mine["end_ns"] <= t_ns)]
        counts[op] = len(ends)
        if len(ends):
            found.append({"kind": "queue", "op": op, "t_ns": int(ends.max())})
    shm = journals.shm(row, t_ns)
    if len(shm):
        ops = {code: name for name, code in SHM_OPS.items()}
        last = shm[-1]
        name = run.buffer_names[last["name"]] if 0 <= last["name"] < len(run.buffer_names) else None
        found.append({"kind": "shared memory", "op": ops.get(int(last["op"]), "?"), "t_ns": int(last["t_ns"]),
                      "name": name})
    for kind, op in ((_TRACKER_CALL, None), (_UNLINK, "unlink")):
        events = journals.of(row, kind, t_ns)
        if kind == _UNLINK:
            counts["failed_unlinks"] = sum(e.get("outcome") not in (None, "ok") for e in events)
        if events:
            e = events[-1]
            found.append({"kind": str(e.get("rtype") or "resource").replace("_", " "), "op": op or str(e.get("op")),
                          "t_ns": e["t_ns"], "name": e.get("name"),
                          "outcome": e.get("outcome") or e.get("error") or "ok"})
    if not found:
        return None
    last = max(found, key=lambda f: f["t_ns"])
    return {**last, "before_s": round((t_ns - last["t_ns"]) / 1e9, 3), "puts": counts.get("put", 0),
            "gets": counts.get("get", 0), "failed_unlinks": counts.get("failed_unlinks", 0)}


def _other_side(journals: _Journals, entry: dict, by_pid: dict) -> list[dict]:
    """Who feeds, drains, holds or ends what the process waits on, where the journals say."""
    kind = entry["wait_kind"]
    if kind is None:
        return []
    related = [e for e in by_pid.values() if e is not entry and e["id"] is not None and entry["id"] is not None
               and (e["id"] == entry["parent"] or e["parent"] == entry["id"])]
    if kind in FED:
        return [{"pid": e["pid"], "how": "fed by"} for e in related if (e["last_op"] or {}).get("puts")]
    if kind in DRAINED:
        return [{"pid": e["pid"], "how": "drained by"} for e in related if (e["last_op"] or {}).get("gets")]
    if kind == CHILD:
        return [{"pid": e["pid"], "how": "for the end of"} for e in by_pid.values() if e["ppid"] == entry["pid"]]
    if kind == LOCK and entry["id"] is not None:
        held = _threads_at_fork(journals, entry["id"])
        if held is not None:
            return [{"pid": held["pid"], "how": "copied locked at the fork by", "threads": held["threads"]}]
    return []


def _threads_at_fork(journals: _Journals, row: int) -> dict | None:
    """Of a fork child: its parent's threads at the fork that made it (the
    parent's last `fork` event before the child began), where there were
    others than the forking one."""
    identity = next((data for _, kind, data in journals.events.get(row, []) if kind == "process"), {})
    parent = journals.row(journals.run.processes["host"][row], identity.get("forked_from"), None) if (
        identity.get("created_via") == "fork" and isinstance(identity.get("forked_from"), int)) else None
    forks = journals.of(parent, "fork", int(journals.run.processes["created_ns"][row])) if parent is not None else []
    if not forks:
        return None
    data = forks[-1]
    if (data.get("native_threads") or 0) <= 1 and (data.get("python_threads") or 0) <= 1:
        return None
    return {"pid": identity["forked_from"], "threads": [str(t) for t in data.get("threads") or []],
            "native_threads": data.get("native_threads")}


def _cycles(entries: list[dict], by_pid: dict) -> list[list[int]]:
    """The cycles of waits (A fed by B, B waiting for A's end), each once,
    from its lowest pid; MAX_CYCLES at most."""
    waits_on = {e["pid"]: [o["pid"] for o in e["on"] if o["pid"] in by_pid] for e in entries}
    found: list[list[int]] = []

    def walk(path: list[int]) -> None:
        for step in waits_on[path[-1]]:
            if len(found) >= MAX_CYCLES:
                return
            if step == path[0]:
                found.append(list(path))
            elif step > path[0] and step not in path:
                walk(path + [step])

    for start in sorted(waits_on):
        walk([start])
    return found


def who(entry: dict) -> str:
    """pid N (its role, rank R): the process as the report names it."""
    role = entry["role"] if entry["role"] not in (None, "other") else _ROLE_WORDS.get(
        entry["journal_role"] or "", entry["journal_role"] or entry["comm"] or "not probed")
    rank = f", rank {entry['rank']}" if entry["rank"] is not None else ""
    return f"pid {entry['pid']} ({role}{rank})"


def _sentences(entries: list[dict], by_pid: dict, cycles: list[list[int]]) -> list[str]:
    """One line per deadlock, then one per process named (that spins, or waits)."""
    says = ["deadlock: " + " and ".join(who(by_pid[p]) for p in cycle) + " wait on each other" for cycle in cycles]
    for entry in entries:
        if not entry["named"]:
            continue
        if entry["spins"]:
            line = (f"{who(entry)} spins: on a CPU or waiting for one {entry['runnable_share']:.0%} of the time "
                    f"({entry['cpu_share']:.0%} on one)" + (f" in {entry['where']}" if entry["where"] else "")
                    + ", and no save progressed")
        else:
            line = f"{who(entry)} waits on {entry['waits_on']}" + (f" in {entry['where']}" if entry["where"] else "")
            thread = next(t for t in entry["threads"] if t["tid"] == entry["waiting_thread"])
            kernel = ", ".join(str(v) for v in (thread["syscall"], thread["wchan"]) if v is not None)
            line += f" [{kernel}]" if kernel else ""
            for other in entry["on"]:
                line += f", {other['how']} " + (who(by_pid[other["pid"]]) if other["pid"] in by_pid
                                                else f"pid {other['pid']}")
                if other.get("threads"):
                    line += (f", which had {len(other['threads'])} threads at the fork ({', '.join(other['threads'])}):"
                             f" a lock another of them held stays locked in the child (fix: start it with forkserver"
                             f" or spawn, or fork before starting threads)")
        says.append(line + _last_op_text(entry["last_op"]))
    return says


def _last_op_text(op: dict | None) -> str:
    if not op:
        return ""
    what = op["op"] + (f" of {op['name']}" if op.get("name") else "") + (
        f" ({op['outcome']})" if op.get("outcome") not in (None, "ok") else "")
    failed = f", {op['failed_unlinks']} unlinks failed before" if op["failed_unlinks"] else ""
    return f"; its last {op['kind']} operation journaled: {what}, {op['before_s']:.1f} s before{failed}"
