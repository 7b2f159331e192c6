"""A multiprocessing program's wall time and what it went to, for a contrast
of start methods on a program that makes no checkpoint saves (a Pool map, a
ProcessPoolExecutor, a DataLoader's workers, a Process per task).

The children are the processes a probed Process.start() started. Each
child's life is cut into phases from the probe's records: start-up
(STARTUP: its interpreter or after-fork start, the re-run of the parent's
__main__, unpickling its Process with the target and its arguments,
multiprocessing's bootstrap, a pool's initializer), then its work, less
its waits for its next task (a queue get: the parent's pickling and the
queue), then its exit.

CMD's wall time is cut instant by instant among what was going on then,
the furthest along first (PARTS, in that order): a child running a task; a
child waiting for a task; a child in start-up, in the phase of the child
started first among those starting; the forkserver starting and
preloading; the parent in Process.start() (pickling the Process and its
arguments, then the rest: the fork, or handing the pickle to the forkserver,
or the exec); a child exiting; else the parent's own (its interpreter and
imports, its work, its joins). The parts add up to the wall time exactly,
so the difference of two start methods' mean wall times is the sum of the
differences of their parts. An instant where a child works while another
starts is work: the start-up it hid costs nothing there.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from writerprof.analysis.clocks import host_offsets

STARTUP = ("interpreter", "main_rerun", "unpickle", "bootstrap", "initializer")
PARTS = (("work", "task_wait") + tuple(f"startup:{p}" for p in STARTUP)
         + ("forkserver", "start:pickle", "start", "exit", "parent"))
# A pool's worker loop: its target's code up to its first wait for a task is its initializer.
POOL_WORKERS = ("multiprocessing.pool.worker", "concurrent.futures.process._process_worker")
FORKSERVER = "forkserver"


def program(run) -> dict:
    """The run's wall time, its PARTS (seconds, adding up to it), and its
    children: how many were started, their start-up phases (mean seconds
    per child, each phase's own time), the tasks they took."""
    offsets = host_offsets(run)
    t0, t1 = _span(run)
    starts = _starts(run, offsets)
    children = _children(run, offsets, starts)
    intervals: dict[str, list[tuple[int, int]]] = {p: [] for p in PARTS}
    for child in children:
        for part, spans in child["spans"].items():
            intervals[part] += spans
    for start in starts:
        pickled = min(start["end"], start["start"] + start["pickle_ns"])
        intervals["start:pickle"].append((start["start"], pickled))
        intervals["start"].append((pickled, start["end"]))
    intervals[FORKSERVER] += _forkserver_starts(run, offsets)
    parts = sweep(intervals, t0, t1)
    return {
        "wall_s": (t1 - t0) / 1e9,
        "parts": parts,
        "children": _child_stats(children),
        "tasks": _task_stats(run, children),
        "main": next((c["main"] for c in children if c["main"]), None),
        "child_rows": [c["row"] for c in children],
    }


def sweep(intervals: dict[str, list[tuple[int, int]]], t0: int, t1: int) -> dict[str, float]:
    """Seconds of [t0, t1] per part: each instant to the first part of PARTS
    with an interval over it, "parent" where none has one."""
    spans = {p: np.array([(max(a, t0), min(b, t1)) for a, b in intervals.get(p, ()) if min(b, t1) > max(a, t0)],
                         dtype=np.int64).reshape(-1, 2) for p in PARTS}
    edges = np.unique(np.concatenate([[t0, t1]] + [s.ravel() for s in spans.values()]))
    lengths = np.diff(edges)
    label = np.full(len(lengths), len(PARTS) - 1)  # "parent"
    for i, part in reversed(list(enumerate(PARTS[:-1]))):  # the first part covering a piece wins
        if not len(spans[part]):
            continue
        depth = np.zeros(len(edges), dtype=np.int64)
        np.add.at(depth, np.searchsorted(edges, spans[part][:, 0]), 1)
        np.add.at(depth, np.searchsorted(edges, spans[part][:, 1]), -1)
        label[np.cumsum(depth)[:-1] > 0] = i
    seconds = np.bincount(label, weights=lengths, minlength=len(PARTS)) / 1e9
    return {p: float(s) for p, s in zip(PARTS, seconds)}


def _span(run) -> tuple[int, int]:
    """CMD's time line as record measured it; a recording that was cut ends at its last event."""
    t0 = run.meta.get("started_ns") or int(run.processes["created_ns"].min())
    t1 = run.meta.get("ended_ns") or int(run.events["t_ns"].max())
    return int(t0), int(max(t1, t0))


def _starts(run, offsets) -> list[dict]:
    """The Process.start() calls that started a child: its span, pickling, child."""
    out = []
    for ev in run.events_of("process_start"):
        d = ev["data"]
        if not d.get("started") or d.get("start_ns") is None or d.get("end_ns") is None:
            continue
        shift = offsets.get(ev["host"], 0)
        out.append({"host": ev["host"], "parent": int(ev["proc"]), "child_pid": d.get("child_pid"),
                    "method": d.get("method"), "target": d.get("target"),
                    "start": int(d["start_ns"]) + shift, "end": int(d["end_ns"]) + shift,
                    "pickle_ns": int(d.get("pickle_ns") or 0), "pickle_bytes": int(d.get("pickle_bytes") or 0)})
    return out


def _forkserver_starts(run, offsets) -> list[tuple[int, int]]:
    """Each forkserver from its creation to its first fork: its start-up and preload."""
    procs = run.processes
    out = []
    for row in np.flatnonzero(procs["role"] == FORKSERVER):
        forks = run.events[(run.events["proc"] == row) & (run.events["kind"] == "fork")]
        if len(forks):
            shift = offsets.get(procs["host"][row], 0)
            out.append((int(procs["created_ns"][row]) + shift, int(forks["t_ns"].min()) + shift))
    return out


def _children(run, offsets, starts: list[dict]) -> list[dict]:
    """Each started child with its phases' spans (by part) and own seconds."""
    procs = run.processes
    chunks = run.chunk_columns
    codes = {name: code for code, name in run.phase_names.items()}
    get = codes.get("get")
    out = []
    for start in starts:
        rows = np.flatnonzero((procs["host"] == start["host"]) & (procs["pid"] == start["child_pid"])
                              & (procs["created_ns"] + offsets.get(start["host"], 0) >= start["start"] - 10**9))
        if not len(rows):
            continue  # a child the probe never saw: its time stays the parent's
        row = int(rows[0])
        shift = offsets.get(start["host"], 0)
        events = run.events[run.events["proc"] == row]
        last = {kind: data for kind, data in zip(events["kind"].tolist(), events["data"].tolist())}
        mine = (chunks["proc"] == row) & (chunks["phase"] == get) if get is not None and len(chunks) else None
        gets = (np.stack([chunks["start_ns"][mine], chunks["end_ns"][mine]], axis=1) + shift
                if mine is not None and mine.any() else np.zeros((0, 2), dtype=np.int64))
        gets = gets[np.argsort(gets[:, 0])]
        out.append(_child(row, start, int(procs["created_ns"][row]) + shift, last, gets, shift,
                          int(events["t_ns"].max()) + shift, int(procs["exited_ns"][row])))
    return out


def _child(row, start, created, last, gets, shift, last_record, exited) -> dict:
    """A child's phases from its records (times on the recording host's clock)."""
    def at(kind, key="start_ns"):
        data = last.get(kind)
        value = data.get(key, data.get("t_ns")) if data else None
        return int(value) + shift if value is not None else None

    target_start = at("target_start")
    target_end = at("target_end")
    pool = start["target"] in POOL_WORKERS
    marks = [("interpreter", created), ("main_rerun", at("main_rerun")), ("unpickle", at("unpickle")),
             ("bootstrap", at("unpickle", "end_ns") or at("bootstrap"))]
    ready = target_start
    if pool and target_start is not None and len(gets):
        marks.append(("initializer", target_start))
        ready = int(gets[0, 0])
    marks = [(name, t) for name, t in marks if t is not None]
    spans: dict[str, list[tuple[int, int]]] = {p: [] for p in PARTS}
    phases = dict.fromkeys(STARTUP, 0.0)
    if ready is not None:
        times = np.maximum.accumulate([created] + [t for _, t in marks[1:]] + [ready]).tolist()
        for (name, _), a, b in zip(marks, times, times[1:]):
            if b > a:
                spans[f"startup:{name}"].append((a, b))
                phases[name] += (b - a) / 1e9
    # Its work runs to its target's end; one that left none (a pool worker
    # terminated while it waited for a task) stopped working at its last record.
    end = target_end if target_end is not None else max(last_record, int(gets[:, 1].max()) if len(gets) else 0)
    if target_start is not None:
        waits = gets[(gets[:, 1] > target_start) & (gets[:, 0] < end)]
        spans["task_wait"] += [(int(a), int(b)) for a, b in waits]
        edges = [max(ready, target_start)] + [x for w in waits for x in (int(w[0]), int(w[1]))] + [end]
        spans["work"] += [(a, b) for a, b in zip(edges[::2], edges[1::2]) if b > a]
    gone = at("exit", "t_ns") or (exited + shift if exited > 0 else None)
    if gone is not None and gone > end:
        spans["exit"].append((end, gone))
    return {"row": row, "method": start["method"], "target": start["target"], "spans": spans, "phases": phases,
            "startup_s": sum(phases.values()), "tasks": len(gets),
            "first_task_s": float(gets[0, 1] - gets[0, 0]) / 1e9 if len(gets) else None,
            "get_s": float((gets[:, 1] - gets[:, 0]).sum()) / 1e9,
            "pickle_s": start["pickle_ns"] / 1e9, "pickle_bytes": start["pickle_bytes"],
            "start_call_s": (start["end"] - start["start"]) / 1e9,
            "main": (last.get("main_rerun") or {}).get("path") or (last.get("main_rerun") or {}).get("module")}


def _child_stats(children: list[dict]) -> dict:
    n = len(children)
    tasks = [c["tasks"] for c in children]
    return {
        "started": n,
        "methods": sorted({c["method"] for c in children if c["method"]}),
        "targets": dict(Counter(c["target"] for c in children)),
        "took_tasks": sum(1 for t in tasks if t),
        "tasks_per_child": float(np.mean(tasks)) if n else None,
        "phases": {p: float(np.mean([c["phases"][p] for c in children])) if n else 0.0 for p in STARTUP},
        "startup_s": float(np.mean([c["startup_s"] for c in children])) if n else None,
        "first_task_s": mean_of(c["first_task_s"] for c in children),
        "start_call_s": float(np.mean([c["start_call_s"] for c in children])) if n else None,
        "pickle_s": float(np.mean([c["pickle_s"] for c in children])) if n else None,
        "pickle_bytes": float(np.mean([c["pickle_bytes"] for c in children])) if n else None,
    }


def _task_stats(run, children: list[dict]) -> dict:
    """The tasks the children took from their queues (a get each: a pool's
    batch of tasks), the mean wait and unpickling of one, and the pickling
    the processes did for their queues (the probe's `pickling` event, a
    process's count at its exit: none from a process killed first)."""
    gets = sum(c["tasks"] for c in children)
    pickled = [e for e in run.events_of("pickling") if "pickled_calls" in e["data"]]
    calls = sum(int(e["data"]["pickled_calls"]) for e in pickled)
    return {"gets": gets, "get_s": sum(c["get_s"] for c in children) / gets if gets else None,
            "pickled_calls": calls if pickled else None,
            "pickle_s": sum(int(e["data"].get("pickled_ns") or 0) for e in pickled) / 1e9 / calls if calls else None,
            "pickled_bytes": sum(int(e["data"].get("pickled_bytes") or 0) for e in pickled) / calls if calls else None}


def mean_of(values) -> float | None:
    """The mean of the values measured (None: none was)."""
    measured = [v for v in values if v is not None]
    return float(np.mean(measured)) if measured else None
