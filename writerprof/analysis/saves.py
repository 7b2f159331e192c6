"""Saves: one per writer a producer started. For each, its start-up phases,
the time each side spent in each phase, and its critical path: the save's
wall time cut into causes that add up to it exactly.

The critical path follows the producer. While it generates, the save waits on
generation; before it starts the writer, on setup; during Process.start(), on
the start. Any other time the producer is blocked (on a full queue, or
waiting for the writer's result), and the save waits on whatever the writer
is doing then: a start-up phase, a write, an fsync, ... If the writer is
waiting for a chunk too, the save waits on the queue itself. Time in which
neither side was in a recorded activity is the unexplained remainder.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from writerprof.analysis.samples import CREATED_SLACK_NS

# Start-up phases, in order: Process.start() until the child exists; the
# child's own start until the parent's __main__ is re-run (interpreter start
# under spawn, after-fork handlers otherwise); the re-run; unpickling the
# Process (imports the target's module); multiprocessing's bootstrap; the
# target's code until its first wait for a chunk; that wait for the first chunk.
STARTUP_PHASES = ("start", "interpreter", "main_rerun", "unpickle", "bootstrap", "target_setup",
                  "first_chunk")
# Critical-path components. "unexplained" is not one: it is what is left.
COMPONENTS = ("setup",) + tuple(f"startup:{p}" for p in STARTUP_PHASES[:-1]) + (
    "generation", "queue", "write", "fadvise", "fsync", "close", "teardown")
UNEXPLAINED = len(COMPONENTS)
_CODE = {name: i for i, name in enumerate(COMPONENTS)}
# The writer's hooked calls and the component a save waits on while in them.
_WRITER_PHASES = {"get": "queue", "write": "write", "fadvise": "fadvise", "fsync": "fsync",
                  "close": "close"}
_SAVE_PHASES = ("save", "producer")  # a producer call spanning one save, when hooked
# Components grouped for the one-word bottleneck of a save.
BOTTLENECK_GROUPS = {
    "start-up": tuple(c for c in COMPONENTS if c.startswith("startup:")),
    "generation": ("generation",), "write": ("write", "fadvise", "close"), "fsync": ("fsync",),
    "queue": ("queue",), "setup/teardown": ("setup", "teardown"),
}


@dataclass(frozen=True)
class _Index:
    """The run's chunks and events grouped by process, found once."""

    chunks_by_proc: np.ndarray  # run.chunks ordered by process, then time
    chunk_bounds: np.ndarray
    events: list  # per process: [(kind, data)] in time order

    def chunks(self, proc: int) -> np.ndarray:
        """The process's chunk records in time order (a view, not a copy)."""
        return self.chunks_by_proc[self.chunk_bounds[proc]:self.chunk_bounds[proc + 1]]


_indexed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> its _Index, made once


def index(run) -> _Index:
    if run not in _indexed:
        _indexed[run] = _make_index(run)
    return _indexed[run]


def _make_index(run) -> _Index:
    order = np.argsort(run.chunks["proc"], kind="stable")  # stays in time order within a process
    # Whole records moved as opaque bytes: several times faster than field by field.
    void = np.dtype((np.void, run.chunks.dtype.itemsize))
    by_proc = run.chunks.view(void)[order].view(run.chunks.dtype)
    bounds = np.searchsorted(by_proc["proc"], np.arange(len(run.processes) + 1))
    grouped = np.argsort(run.events["proc"], kind="stable")  # stays in time order within a process
    kinds, data = run.events["kind"][grouped].tolist(), run.events["data"][grouped].tolist()
    edges = np.searchsorted(run.events["proc"][grouped], np.arange(len(run.processes) + 1)).tolist()
    events = [list(zip(kinds[a:b], data[a:b])) for a, b in zip(edges, edges[1:])]
    return _Index(by_proc, bounds, events)


def find(run, idx: _Index | None = None) -> list[dict]:
    """Every save of the run, in the order they started."""
    idx = idx or index(run)
    codes = {name: code for code, name in run.phase_names.items()}
    child_rows = _children_by_pid(run)
    saves = []
    for proc in range(len(run.processes)):
        starts = [d for kind, d in idx.events[proc] if kind == "process_start" and d.get("started")]
        if not starts:
            continue
        chunks = idx.chunks(proc)
        save_calls = chunks[np.isin(chunks["phase"], [codes.get(p, -1) for p in _SAVE_PHASES])]
        count = 0
        for start in starts:
            writer = _child(run, child_rows, proc, start)
            if writer is None or not any(k == "bootstrap" for k, _ in idx.events[writer]):
                if writer is not None:  # a child that is not a writer (a pool worker, ...)
                    continue
            count += 1
            saves.append(_save(run, idx, codes, proc, chunks, save_calls, start, writer, count))
    paths = _critical_paths([part for _, part in saves], codes)
    for (save, _), path in zip(saves, paths):
        save["critical_path"] = {name: float(s) for name, s in zip(COMPONENTS, path[:-1])}
        save["unexplained_s"] = float(path[-1])
        save["bottleneck"] = _bottleneck(path)
    return sorted((save for save, _ in saves), key=lambda s: s["start_ns"])


def _children_by_pid(run) -> dict:
    out: dict = {}
    for row, (host, pid) in enumerate(zip(run.processes["host"], run.processes["pid"])):
        out.setdefault((host, int(pid)), []).append(row)
    return out


def _child(run, child_rows, proc: int, start: dict) -> int | None:
    """The journal of the child that Process.start() started, if the probe was in it."""
    host = run.processes["host"][proc]
    rows = child_rows.get((host, start.get("child_pid")), [])
    rows = [r for r in rows if run.processes["created_ns"][r] >= start["start_ns"] - CREATED_SLACK_NS]
    return min(rows, key=lambda r: run.processes["created_ns"][r]) if rows else None


def _spans(chunks: np.ndarray, code: int | None) -> np.ndarray:
    return chunks[chunks["phase"] == code] if code is not None else chunks[:0]


def _save(run, idx, codes, proc, chunks, save_calls, start, writer, count) -> dict:
    t_start, t_started = int(start["start_ns"]), int(start["end_ns"])
    window = _window(save_calls, t_start, t_started)
    writer_chunks = idx.chunks(writer) if writer is not None else run.chunks[:0]
    writer_events = idx.events[writer] if writer is not None else []
    if window is None:  # no hooked call spans the save: from the start to the writer's end
        ends = [int(writer_chunks["end_ns"].max())] if len(writer_chunks) else []
        ends += [int(d["t_ns"]) for k, d in writer_events if k == "exit"]
        window = (t_start, max(ends + [t_started]))
    w0, w1 = window
    inside = chunks[np.searchsorted(chunks["start_ns"], w0):np.searchsorted(chunks["start_ns"], w1, "right")]
    inside = inside[inside["end_ns"] <= w1]
    thread = _main_thread(save_calls, w0, w1)
    mine = inside[inside["tid"] == thread] if thread is not None else inside
    gen = _spans(mine, codes.get("gen"))
    startup, boundaries = _startup(run, writer, writer_events, writer_chunks, codes, t_start)
    loop = writer_chunks[np.isin(writer_chunks["phase"], list(_loop_components(codes)))]
    part = _Part(w0, w1, t_start, t_started, gen["start_ns"], gen["end_ns"], boundaries,
                 loop["start_ns"], loop["end_ns"], loop["depth"], loop["phase"])
    # Per phase code: seconds, calls and bytes of the writer's calls, and the producer's.
    size = max(run.phase_names, default=0) + 1
    writer_s = np.bincount(writer_chunks["phase"], writer_chunks["end_ns"] - writer_chunks["start_ns"], size) / 1e9
    calls = np.bincount(writer_chunks["phase"], minlength=size)
    nbytes = np.bincount(writer_chunks["phase"], writer_chunks["bytes"].clip(0), size)
    producer_s = np.bincount(mine["phase"], mine["end_ns"] - mine["start_ns"], size) / 1e9
    at = {name: codes.get(name, size) for name in ("gen", "put", "get", "write", "fadvise", "fsync", "close")}
    writer_s, calls, nbytes, producer_s = (np.append(a, 0) for a in (writer_s, calls, nbytes, producer_s))
    nbytes = int(nbytes[at["write"]])
    duration = (w1 - w0) / 1e9
    p = run.processes
    return {
        "save": count,
        "host": p["host"][proc],
        "rank": int(p["rank"][proc]),
        "producer": proc,
        "producer_pid": int(p["pid"][proc]),
        "writer": writer,
        "writer_pid": int(start["child_pid"]) if start.get("child_pid") is not None else None,
        "start_method": start.get("method"),
        "target": start.get("target"),
        "start_ns": w0,
        "end_ns": w1,
        "duration_s": duration,
        "bytes": nbytes,
        "chunks": int(calls[at["write"]]),
        "gib_s": nbytes / duration / 2**30 if duration > 0 else None,
        "startup": startup,
        "startup_s": sum(startup.values()) if startup else None,
        "gen_s": float(producer_s[at["gen"]]),
        "put_wait_s": float(producer_s[at["put"]]),
        "get_wait_s": float(writer_s[at["get"]]),
        **{f"{phase}_s": float(writer_s[at[phase]]) for phase in ("write", "fadvise", "fsync", "close")},
    }, part


def _window(save_calls, t_start, t_started) -> tuple[int, int] | None:
    """The innermost hooked save (or producer) call around this Process.start()."""
    around = save_calls[(save_calls["start_ns"] <= t_start) & (save_calls["end_ns"] >= t_started)]
    if not len(around):
        return None
    inner = around[np.argmin(around["end_ns"] - around["start_ns"])]
    return int(inner["start_ns"]), int(inner["end_ns"])


def _main_thread(save_calls, w0, w1):
    """The thread the save call ran on: the producer's own timeline."""
    spans = save_calls[(save_calls["start_ns"] == w0) & (save_calls["end_ns"] == w1)]
    return int(spans["tid"][0]) if len(spans) else None


def _startup(run, writer, events, chunks, codes, t_start) -> tuple[dict, list]:
    """Start-up phase -> seconds, and the phases' (name, start_ns) boundaries
    up to the writer's first wait for a chunk (its loop starts there)."""
    if writer is None:
        return {}, []
    spans = {k: d for k, d in events if k in ("main_rerun", "unpickle")}
    at = {k: int(d["t_ns"]) for k, d in events if k in ("bootstrap", "target_start")}
    created = max(int(run.processes["created_ns"][writer]), t_start)
    marks = [("start", t_start), ("interpreter", created)]
    for name in ("main_rerun", "unpickle"):
        if name in spans:
            marks.append((name, int(spans[name]["start_ns"])))
    for name in ("bootstrap", "target_start"):
        if name in at:
            marks.append(("bootstrap" if name == "bootstrap" else "target_setup", at[name]))
    loop = chunks[np.isin(chunks["phase"], [codes.get(p, -1) for p in _WRITER_PHASES])]
    if len(loop):
        marks.append(("first_chunk", int(loop["start_ns"].min())))
    writes = _spans(chunks, codes.get("write"))
    end = int(writes["start_ns"].min()) if len(writes) else None
    if end is None:
        return {}, marks
    times = [max(t, marks[0][1]) for _, t in marks]  # never before Process.start()
    times = [int(t) for t in np.maximum.accumulate(times)]
    phases = {name: 0.0 for name in STARTUP_PHASES}
    for (name, _), a, b in zip(marks, times, times[1:] + [end]):
        phases[name] += max(0, min(b, end) - a) / 1e9
    return phases, list(zip([n for n, _ in marks], times))


def _label_at(points, starts, ends, labels) -> np.ndarray:
    """The label of the interval (of non-overlapping ones) each point is in, or -1."""
    if not len(starts):
        return np.full(len(points), -1)
    order = np.argsort(starts, kind="stable")
    starts, ends, labels = starts[order], ends[order], labels[order]
    at = np.searchsorted(starts, points, side="right") - 1
    inside = (at >= 0) & (points < ends[np.maximum(at, 0)])
    return np.where(inside, labels[np.maximum(at, 0)], -1)


@dataclass(frozen=True)
class _Part:
    """What one save's critical path is made from (times in ns)."""

    w0: int
    w1: int
    t_start: int  # Process.start() called
    t_started: int  # and returned
    gen_start: np.ndarray  # the producer's gen calls
    gen_end: np.ndarray
    boundaries: list  # the writer's start-up phases: (name, start_ns)
    loop_start: np.ndarray  # the writer's calls in its loop
    loop_end: np.ndarray
    loop_depth: np.ndarray
    loop_phase: np.ndarray


def _loop_components(codes) -> dict[int, int]:
    """Phase code of a writer's loop call -> the component a save waits on in it."""
    return {codes[p]: _CODE[c] for p, c in _WRITER_PHASES.items() if p in codes}


# All saves are cut at once: a time t of save i becomes the key i << _SHIFT |
# (t - its start), so that one sorted array holds every save's timeline and
# the saves cannot overlap (a save may last up to 2**44 ns, 4.9 hours).
_SHIFT = 44


def _critical_paths(parts: list[_Part], codes) -> np.ndarray:
    """Seconds of each component, then the unexplained, per save."""
    n = len(parts)
    if not n:
        return np.zeros((0, UNEXPLAINED + 1))
    w0 = np.array([p.w0 for p in parts], dtype=np.int64)
    w1 = np.array([p.w1 for p in parts], dtype=np.int64)

    def keys(times, save):
        times = np.asarray(times, dtype=np.int64)
        return (save.astype(np.int64) << _SHIFT) | (np.clip(times, w0[save], w1[save]) - w0[save])

    def gather(arrays):
        """Every save's array end to end, and the save each element is of."""
        return np.concatenate(arrays), np.repeat(np.arange(n), [len(a) for a in arrays])

    saves = np.arange(n)
    t_start, t_started = (np.array([getattr(p, f) for p in parts], dtype=np.int64) for f in ("t_start", "t_started"))
    gen_start, gen_save = gather([p.gen_start for p in parts])
    gen_end, _ = gather([p.gen_end for p in parts])
    loop_start, loop_save = gather([p.loop_start for p in parts])
    loop_end, _ = gather([p.loop_end for p in parts])
    loop_depth, _ = gather([p.loop_depth for p in parts])
    loop_phase, _ = gather([p.loop_phase for p in parts])
    # The writer's start-up phases: each until the next begins, the last until its loop does.
    up_name, up_start, up_end, up_save = [], [], [], []
    for i, p in enumerate(parts):
        marks = [(name, t) for name, t in p.boundaries if name != "first_chunk"]
        stop = min([t for name, t in p.boundaries if name == "first_chunk"] or [p.w1])
        for (name, t), (_, t_next) in zip(marks, marks[1:] + [(None, stop)]):
            up_name.append(_CODE["startup:" + name])
            up_start.append(t)
            up_end.append(t_next)
            up_save.append(i)
    up_save = np.array(up_save, dtype=np.int64)
    last_loop_end = np.full(n, np.iinfo(np.int64).max)  # as a key; none: no teardown
    if len(loop_end):
        ends = np.full(n, -1, dtype=np.int64)
        np.maximum.at(ends, loop_save, loop_end)
        has = ends >= 0
        last_loop_end[has] = keys(ends[has], saves[has])
    points = np.concatenate([
        keys(w0, saves), keys(w1, saves), keys(t_start, saves), keys(t_started, saves),
        keys(gen_start, gen_save), keys(gen_end, gen_save), keys(loop_start, loop_save),
        keys(loop_end, loop_save), keys(up_start, up_save)])
    points.sort()  # then drop repeats (np.unique hashes: several times slower here)
    points = points[np.append(True, points[1:] != points[:-1])]
    same = (points[1:] >> _SHIFT) == (points[:-1] >> _SHIFT)  # a segment lies within one save
    lengths = np.diff(points)[same]
    mid = points[:-1][same] + lengths // 2
    seg_save = mid >> _SHIFT
    # What the writer is doing: start-up phases, then its calls (deeper calls
    # inside outer ones win), after its last call its teardown, else nothing known.
    label = np.full(len(mid), UNEXPLAINED)
    found = _label_at(mid, keys(up_start, up_save), keys(up_end, up_save), np.array(up_name, dtype=np.int64))
    label = np.where(found >= 0, found, label)
    label = np.where(mid >= last_loop_end[seg_save], _CODE["teardown"], label)
    components = _loop_components(codes)
    component_of = np.full(max(components, default=0) + 1, UNEXPLAINED)
    component_of[list(components)] = list(components.values())
    for depth in range(int(loop_depth.max()) + 1 if len(loop_depth) else 0):
        level = loop_depth == depth
        found = _label_at(mid, keys(loop_start[level], loop_save[level]), keys(loop_end[level], loop_save[level]),
                          component_of[loop_phase[level]])
        label = np.where(found >= 0, found, label)
    # What the producer is doing wins where it is doing something.
    label = np.where(mid < keys(t_start, saves)[seg_save], _CODE["setup"], label)
    label = np.where((mid >= keys(t_start, saves)[seg_save]) & (mid < keys(t_started, saves)[seg_save]),
                     _CODE["startup:start"], label)
    found = _label_at(mid, keys(gen_start, gen_save), keys(gen_end, gen_save),
                      np.full(len(gen_start), _CODE["generation"]))
    label = np.where(found >= 0, found, label)
    width = UNEXPLAINED + 1
    totals = np.bincount(seg_save * width + label, weights=lengths, minlength=n * width)
    return totals.reshape(n, width) / 1e9


def _bottleneck(path: np.ndarray) -> str:
    totals = {group: sum(path[_CODE[c]] for c in members) for group, members in BOTTLENECK_GROUPS.items()}
    return max(totals, key=totals.get)
