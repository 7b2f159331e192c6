"""Saves: one per checkpoint file written or object uploaded. A writer child
that wrote one (or did one upload) is its Process.start()'s save, with its
start-up phases; every other checkpoint file is a save of its own
(filesaves), every other upload too (uploadsaves). For each, the time each side spent
in each phase, and its critical path (criticalpath): the save's wall time
cut into causes that add up to it exactly.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from writerprof.analysis import filesaves, firstwork, handoffs, hostwise, nesting, uploads, uploadsaves
# The components' names, imported from here by the views.
from writerprof.analysis.components import COMPONENTS, STARTUP_PHASES, loop_components  # noqa: F401
from writerprof.analysis.criticalpath import critical_paths
from writerprof.analysis.samples import CREATED_SLACK_NS
from writerprof.probes.writerprof_probe.format import SHM_OPS

SHM_CREATE = SHM_OPS["create"]

# The phases whose own seconds (nesting.own_ns) a save reports: the producer's and its writer's.
_MEASURED = ("gen", "put", "get", "write", "fadvise", "fsync", "close")
_SAVE_PHASES = ("save", "producer")  # a producer call spanning one save, when hooked
# Components grouped for the one-word bottleneck of a save: the group with the
# most critical-path seconds (bound_by), shown beside its seconds. Its
# columns' own durations can say otherwise (start-up's 0.9 s of which only
# 0.2 s held the save up, generation overlapping the rest).
# An upload's writes are its requests to the object store: its save's write
# group is named NETWORK.
NETWORK = "network/object store"
BOTTLENECK_GROUPS = {
    "start-up": tuple(c for c in COMPONENTS if c.startswith("startup:")),
    "generation": ("generation",), "write": ("write", "fadvise", "close"),
    NETWORK: ("write", "fadvise", "close"), "fsync": ("fsync",),
    "queue": ("queue",), "setup/teardown": ("setup", "teardown"),
}


@dataclass(frozen=True)
class _Index:
    """The run's chunks and events grouped by process, found once."""

    chunks_of: range  # rows of run.chunk_columns in process, then time order (all: they are so grouped)
    chunk_bounds: np.ndarray  # process p's are chunks_of[bounds[p]:bounds[p + 1]]
    events: list  # per process: [(kind, data)] in time order


_indexed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> its _Index, made once


def index(run) -> _Index:
    if run not in _indexed:
        _indexed[run] = _make_index(run)
    return _indexed[run]


def _make_index(run) -> _Index:
    proc = run.chunk_columns["proc"]
    order = range(len(proc))  # chunk_columns are grouped by process, in time order within one
    bounds = np.searchsorted(proc, np.arange(len(run.processes) + 1, dtype=proc.dtype))  # proc's type: no copy of it
    e = run.events
    grouped = np.argsort(e["proc"], kind="stable")  # stays in time order within a process
    kinds, data = e["kind"][grouped].tolist(), e["data"][grouped].tolist()
    edges = np.searchsorted(e["proc"][grouped], np.arange(len(run.processes) + 1)).tolist()
    events = [list(zip(kinds[a:b], data[a:b])) for a, b in zip(edges, edges[1:])]
    return _Index(order, bounds, events)


def _part_index(idx: _Index, first: int, stop: int) -> _Index:
    """The index of process rows first to stop - 1 as a run of their own (hostwise.part), cut from the run's."""
    bounds = idx.chunk_bounds[first:stop + 1]
    return _Index(range(int(bounds[-1] - bounds[0])), bounds - bounds[0], idx.events[first:stop])


def in_parts(run, idx: _Index, parts: list[tuple[int, int]], each=None) -> list[tuple[int, list[dict], object]]:
    """[(first process row, the saves of rows first to stop - 1, each(the
    part, first, stop, those saves) or None)] per part (hostwise.parts), for
    hostwise.joined: each, what else is found a part at a time, is given
    the saves in the part's own rows."""
    out = []
    for first, stop in parts:
        part = hostwise.part(run, first, stop)
        _indexed[part] = _part_index(idx, first, stop)  # (for whatever asks the part's: not made again)
        found = find(part)
        out.append((first, found, each(part, first, stop, found) if each else None))
    return out


def find(run, idx: _Index | None = None) -> list[dict]:
    """Every save of the run, in the order they started."""
    # Long, and one function on purpose: each step reads the column views and
    # per-process bounds built at its top, for every save at once (vectorised).
    idx = idx or index(run)
    parts = hostwise.parts(run)
    if parts is not None:  # a big run: a few hosts at a time (their saves are theirs alone), a bounded peak
        return hostwise.joined(in_parts(run, idx, parts))
    codes = {name: code for code, name in run.phase_names.items()}
    # Field by field (views): whole records are wide, and there are millions of them.
    c = {name: run.chunk_columns[name] for name in ("proc", "phase", "depth", "tid", "writer_seq", "start_ns",
                                                    "end_ns", "bytes")}
    # A call's time less the hooked calls inside it (close less its fsync), for the phases a save reports.
    c["own_ns"] = nesting.own_ns(c, phases=[codes[p] for p in _MEASURED if p in codes])
    per_proc = _per_process(run, c)
    found = _starts(run, idx, codes, c)
    children = len(found)  # the writer children's saves; then the files' (filesaves), the uploads' (uploadsaves)
    found += filesaves.found(run, found)
    file_saves = len(found)
    found += uploadsaves.found(run, found[:children])
    filesaves.numbered(found[children:])
    if not found:
        return []
    n = len(found)
    proc, writer = (np.array([f[k] for f in found], dtype=np.int64) for k in ("proc", "writer"))
    w0, w1, thread = (np.array([f[k] for f in found], dtype=np.int64) for k in ("w0", "w1", "thread"))
    # The producer's calls of each save: in its window, on its thread.
    owner = _owner(c, proc, w0, w1, thread)
    mine = owner >= 0
    save_of = owner[mine]
    size = max(run.phase_names, default=0) + 1
    producer_s, producer_calls = _tables(save_of, c["phase"][mine], [c["own_ns"][mine], None], n, size)
    producer_s = producer_s / 1e9  # (not in place: a table of no calls is bincount's ints)
    put_s, puts = _put_waits(c, owner, found, codes.get("put", -1), n)
    # The producer's loop: Process.start()'s end to its last hand-off, and its waits in it (handoffs).
    last_put = _last_puts(c, owner, found, codes.get("put", -1), n)
    t_started = np.array([f["t_started"] for f in found], dtype=np.int64)
    producer_loop = np.where(last_put >= 0, np.maximum(last_put - t_started, 0), -1).tolist()
    waits = handoffs.loop_waits(c, owner, found, codes.get("get", -1), last_put)
    free_s = (np.bincount(owner[waits], weights=c["own_ns"][waits], minlength=n) / 1e9).tolist()
    is_gen = mine & (c["phase"] == codes.get("gen", -1))
    gen = {"start_ns": c["start_ns"][is_gen], "end_ns": c["end_ns"][is_gen], "save": owner[is_gen]}
    # Where the producer's fill is no hooked call: its time between hand-offs (handoffs).
    gen_code = codes.get("gen", size)
    hooked_gen = (np.pad(producer_calls, ((0, 0), (0, 1)))[:, min(gen_code, size)]
                  + (np.arange(n) >= children))  # (a file's or an upload's save of its own has no hand-offs)
    inferred = handoffs.between(c, owner, found, codes.get("put", -1), hooked_gen, waits)
    gen = {k: np.concatenate([gen[k], inferred[k].astype(gen[k].dtype)]) for k in gen}
    inferred_s = (np.bincount(inferred["save"], weights=inferred["end_ns"] - inferred["start_ns"], minlength=n)
                  / 1e9).tolist()
    has_inferred = np.bincount(inferred["save"], minlength=n).tolist()
    inferred_cpu = handoffs.cpu_seconds(run, proc.tolist(), inferred, n)
    task_waits = filesaves.task_waits(run, c, found, codes.get("get", -1))
    # The writer's loop: every call of its own, the save's.
    save_of_writer = np.full(len(run.processes), -1)
    child = writer[:children]
    save_of_writer[child[child >= 0]] = np.flatnonzero(child >= 0)
    in_loop = np.isin(c["phase"], list(loop_components(codes)))
    in_loop[in_loop] = save_of_writer[c["proc"][in_loop]] >= 0
    loop = {name: c[name][in_loop] for name in ("start_ns", "end_ns", "depth", "phase", "proc")}
    loop["save"] = save_of_writer[loop["proc"]]
    file_loop = filesaves.loop(run, found[children:file_saves], children, codes)
    # Each upload's: a writer child's one, or the save's own.
    of_writer = uploads.by_writer(run)
    upload_at = [f["upload"] if "upload" in f else (of_writer.get(f["writer"]) or [None])[0] if i < children
                 else None for i, f in enumerate(found)]
    upload_loop = uploadsaves.loop(run, [(u, i) for i, u in enumerate(upload_at) if u is not None],
                                   codes.get("write", -1), int(loop["depth"].max(initial=0)) + 1)
    loop = {name: np.concatenate([loop[name], file_loop[name].astype(loop[name].dtype),
                                  upload_loop[name].astype(loop[name].dtype)]) for name in loop}
    writer_loop = _writer_loops(found, loop, task_waits, n)
    del c, owner, mine, in_loop, is_gen  # the columns are big: let them go before the next peak
    paths = critical_paths(found, w0, w1, gen, loop, codes)
    at = {name: codes.get(name, size) for name in _MEASURED}
    # As lists: a numpy scalar per field of a save cost more than the save.
    seconds, calls, nbytes = (np.pad(t, ((0, 1), (0, 1))).tolist() for t in per_proc)  # row -1, column `size`: none
    producer_s, producer_calls = (np.pad(t, ((0, 0), (0, 1))).tolist() for t in (producer_s, producer_calls))
    hosts, ranks, pids = (run.processes[name][proc].tolist() for name in ("host", "rank", "pid"))
    put_s, puts, paths = put_s.tolist(), puts.tolist(), paths.tolist()
    proc, writer, w0, w1 = proc.tolist(), writer.tolist(), w0.tolist(), w1.tolist()
    span_of = filesaves.spans_by_writer(run)
    saves = []
    for i, f in enumerate(found):
        row, start, path = writer[i], f["start"], paths[i]
        own = seconds[row]
        critical = dict(zip(COMPONENTS, path[:-1]))
        upload = upload_at[i]
        bound, bound_s = bound_by(critical, upload=upload is not None)
        duration = (w1[i] - w0[i]) / 1e9
        # A file save's figures are its file's, an upload's its upload's; a writer child's, its calls' (a
        # hooked close holds the fsync inside it), but for the bytes of its checkpoint file where the
        # interposer saw it.
        on_file = (uploadsaves.figures(run, upload) if upload is not None
                   else filesaves.figures(run, f["span"] if "span" in f else (span_of.get(row) or [None])[0]))
        of_its_own = i >= children  # a file's or an upload's save, no writer child's
        from_file = of_its_own or upload is not None
        written = on_file["bytes"] if on_file["path"] is not None else nbytes[row][at["write"]]
        saves.append({
            "save": f["count"],
            "host": hosts[i],
            "rank": ranks[i],
            "producer": proc[i],
            "producer_pid": pids[i],
            "writer": row if row >= 0 else None,
            "writer_pid": (int(start["child_pid"]) if start.get("child_pid") is not None
                           else int(run.processes["pid"][row]) if row >= 0 else None),
            "start_method": start.get("method"),
            "target": start.get("target"),
            "start_ns": w0[i],
            "end_ns": w1[i],
            "duration_s": duration,
            "path": on_file["path"],
            "bytes": written,
            "chunks": on_file["chunks"] if from_file else calls[row][at["write"]],
            "parts": on_file.get("parts"),
            "gib_s": written / duration / 2**30 if duration > 0 else None,
            "startup": f["startup"],
            "startup_s": startup_seconds(f["startup"]),
            "gen_s": (inferred_s[i] if has_inferred[i]
                      else measured(producer_s[i][at["gen"]], producer_calls[i][at["gen"]])),
            "gen_from": (handoffs.BETWEEN if has_inferred[i]
                         else handoffs.HOOKED if producer_calls[i][at["gen"]] else None),
            "gen_cpu_s": inferred_cpu[i],
            "put_wait_s": measured(put_s[i], puts[i]),
            "free_wait_s": free_s[i] if puts[i] else None,
            "producer_loop_s": producer_loop[i] / 1e9 if producer_loop[i] >= 0 else None,
            "writer_loop_s": writer_loop[i],
            # (a file save's writer takes no chunks off a queue: its wait for the work, a pool's task)
            "get_wait_s": task_waits[i] if of_its_own else measured(own[at["get"]], calls[row][at["get"]]),
            **({k: on_file[k] for k in ("write_s", "fadvise_s", "fsync_s", "close_s")} if from_file else {
                "write_s": own[at["write"]], "fadvise_s": own[at["fadvise"]], "fsync_s": own[at["fsync"]],
                "close_s": own[at["close"]]}),
            "write_threads_s": on_file.get("write_threads_s"),
            "critical_path": critical,
            "unexplained_s": path[-1],
            "bottleneck": bound,
            "bottleneck_s": bound_s,
            "upload": on_file.get("upload"),
        })
    return sorted(saves, key=lambda s: s["start_ns"])


def _writer_loops(found: list[dict], loop: dict[str, np.ndarray], task_waits: list, n: int) -> list[float | None]:
    """Per save: its writer's loop in wall time, what its wait for chunks is
    a share of: from the end of its start-up's own phases (its first wait
    for a chunk, or its first unit of work) or else its first call of the
    save, to its last call's end; a pool's task wait before a save of its
    own (task_waits) added. Its calls alone would leave out what no hook
    times (a copy, an upload's sends where none is journaled). None: no call."""
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    np.minimum.at(first, loop["save"], loop["start_ns"])
    np.maximum.at(last, loop["save"], loop["end_ns"])
    out: list[float | None] = []
    for i, f in enumerate(found):
        began = next((t for name, t in f["boundaries"] if name == "first_chunk"), int(first[i]))
        out.append(None if last[i] < 0 else max(0, int(last[i]) - began) / 1e9 + (task_waits[i] or 0.0))
    return out


def _tables(rows, phases, weights: list, n_rows, n_phases) -> list[np.ndarray]:
    """(row, phase) tables of summed weights, one per weights (None: the calls)."""
    flat = rows.astype(np.int64) * n_phases + phases  # made once for all
    return [np.bincount(flat, weights=w, minlength=n_rows * n_phases).reshape(n_rows, n_phases) for w in weights]


def measured(seconds, count) -> float | None:
    """A phase's seconds, or None where no hooked call of it was recorded
    (the producer's gen, put, the writer's get): not measured, which is not 0."""
    return float(seconds) if count else None


def _put_waits(c, owner, found, put, n) -> tuple[np.ndarray, np.ndarray]:
    """Per save: seconds and count of the producer's puts, each the wait of
    the save whose writer takes the chunk. A put the save's window and thread
    own (owner) is that save's; one they do not (another thread of the
    producer, or no hooked call spanning the save) goes to the save of the
    writer the producer started last before it (the record's writer_seq),
    as long as that writer was not yet done (the save's end)."""
    rows, save = _put_saves(c, owner, found, put)
    mine = save >= 0
    seconds = np.bincount(save[mine], weights=c["own_ns"][rows][mine], minlength=n) / 1e9
    return seconds, np.bincount(save[mine], minlength=n)


def _last_puts(c, owner, found, put, n) -> np.ndarray:
    """Per save: the end of the producer's last put that is its wait (_put_waits), -1 for none."""
    rows, save = _put_saves(c, owner, found, put)
    last = np.full(n, -1, dtype=np.int64)
    mine = save >= 0
    np.maximum.at(last, save[mine], c["end_ns"][rows][mine])
    return last


def _put_saves(c, owner, found, put) -> tuple[np.ndarray, np.ndarray]:
    """The rows of c that are puts, and the save each is the wait of (-1: none's), by _put_waits' rule."""
    rows = np.flatnonzero(c["phase"] == put)
    save = owner[rows]
    loose = save < 0
    if loose.any() and found:
        proc = np.array([f["proc"] for f in found], dtype=np.int64)
        seq = np.array([f["start"].get("writer_seq", -1) for f in found], dtype=np.int64)
        keys = (proc << 32) | (seq + 1)
        order = np.argsort(keys)
        r = rows[loose]
        wanted = (c["proc"][r].astype(np.int64) << 32) | (c["writer_seq"][r].astype(np.int64) + 1)
        at = np.minimum(np.searchsorted(keys[order], wanted), len(order) - 1)
        match = order[at]
        w1 = np.array([f["w1"] for f in found], dtype=np.int64)
        ok = (keys[match] == wanted) & (c["writer_seq"][r] >= 0) & (c["end_ns"][r] <= w1[match])
        save[loose] = np.where(ok, match, -1)
    return rows, save


def _per_process(run, c):
    """Per process and phase code: seconds, calls and bytes of its calls."""
    n, size = len(run.processes), max(run.phase_names, default=0) + 1
    seconds, calls, nbytes = _tables(c["proc"], c["phase"], [c["own_ns"], None, c["bytes"].clip(0)], n, size)
    return seconds / 1e9, calls.astype(np.int64), nbytes.astype(np.int64)


def _starts(run, idx, codes, c) -> list[dict]:
    """Each save's producer, writer, Process.start() event, window, thread and start-up."""
    child_rows = _children_by_pid(run)
    # Columns as lists: read a value at a time, a save at a time.
    firsts = {name: column.tolist() for name, column in _first_calls(run, idx, c).items()}
    hosts, created = run.processes["host"].tolist(), run.processes["created_ns"].tolist()
    # The hooked calls that span a save, per process (few: one a save), as
    # (start_ns, end_ns, tid) values: each process's are read a save at a time.
    rows = np.flatnonzero(np.isin(c["phase"], [codes.get(p, -1) for p in _SAVE_PHASES]))
    calls_of: dict = {}
    spans = zip(*(c[k][rows].tolist() for k in ("start_ns", "end_ns", "tid")))
    for proc, call in zip(c["proc"][rows].tolist(), spans):
        calls_of.setdefault(proc, []).append(call)
    is_save = filesaves.child_saves(run)
    created_buffers: dict = {}  # process row -> when it created its buffers, in order
    made = run.shm[run.shm["op"] == SHM_CREATE]
    for proc, t in zip(made["proc"].tolist(), made["t_ns"].tolist()):
        created_buffers.setdefault(proc, []).append(t)
    found = []
    for proc in range(len(run.processes)):
        starts = [d for kind, d in idx.events[proc] if kind == "process_start" and d.get("started")]
        if not starts:
            continue
        save_calls = calls_of.get(proc, [])
        count = 0
        made = created_buffers.get(proc, [])
        since = None  # the previous Process.start()'s end: buffers made after it are the next save's
        for start in starts:
            writer = _child(child_rows, hosts, created, proc, start)
            if writer is not None and not is_save[writer]:
                continue  # a child that saved nothing (a DataLoader worker), or many (filesaves, uploadsaves)
            count += 1
            t_start, t_started = int(start["start_ns"]), int(start["end_ns"])
            window = _window(save_calls, t_start, t_started)
            if window is None:  # no hooked call spans the save: from its first event to the writer's end
                ends = [t_started]
                if writer is not None:
                    ends += [firsts["last_end"][writer]] if firsts["last_end"][writer] >= 0 else []
                    ends += [int(d["t_ns"]) for k, d in idx.events[writer] if k == "exit"]
                # Its first event: the creation of the buffers it hands its writer, where it made them.
                mine = [t for t in made if (since is None or t > since) and t <= t_start]
                window = (min([t_start] + mine), max(ends))
            since = t_started
            thread = _main_thread(save_calls, *window)
            startup, boundaries = _startup(created, writer, idx.events[writer] if writer is not None else [],
                                           firsts, t_start)
            found.append({"proc": proc, "writer": -1 if writer is None else writer, "start": start,
                          "count": count, "w0": window[0], "w1": window[1],
                          "thread": -1 if thread is None else thread, "t_start": t_start,
                          "t_started": t_started, "startup": startup, "boundaries": boundaries})
    return found


def _first_calls(run, idx, c) -> dict[str, np.ndarray]:
    """Per process: the start of its first wait for a chunk and of its first
    unit of work (firstwork), and the end of its last call (-1: none)."""
    n = len(run.processes)
    out = dict(firstwork.firsts(run))
    ends = c["end_ns"]  # in process order (chunk_columns): each process's calls together
    bounds = idx.chunk_bounds
    out["last_end"] = np.full(n, -1, dtype=np.int64)
    has = bounds[1:] > bounds[:-1]
    if has.any():
        out["last_end"][has] = np.maximum.reduceat(ends, bounds[:-1][has])
    return out


def _owner(c, proc, w0, w1, thread) -> np.ndarray:
    """For each chunk record, the save whose producer made it inside the
    save's window on the save's thread (-1: none)."""
    owner = np.full(len(c["proc"]), -1)
    producers = np.isin(c["proc"], proc)
    owner[producers] = _owner_of(
        {name: c[name][producers] for name in ("proc", "tid", "start_ns", "end_ns")}, proc, w0, w1, thread)
    return owner


def _owner_of(c, proc, w0, w1, thread) -> np.ndarray:
    n = max(int(proc.max()), int(c["proc"].max()) if len(c["proc"]) else 0) + 1
    # Times from each process's own first one: hosts' clocks are unrelated.
    base = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(base, c["proc"], c["start_ns"])
    np.minimum.at(base, proc, w0)
    chunk_time = c["start_ns"] - base[c["proc"]]
    save_time = w0 - base[proc]
    shift = nesting.key_bits(max(int(chunk_time.max()) if len(c["proc"]) else 0, int(save_time.max())), n)
    order = np.lexsort((w0, proc))
    save_keys = (proc[order] << shift) | save_time[order]
    chunk_keys = (c["proc"].astype(np.int64) << shift) | chunk_time
    at = np.searchsorted(save_keys, chunk_keys, side="right") - 1
    save = order[np.maximum(at, 0)]
    inside = ((at >= 0) & (proc[save] == c["proc"]) & (c["end_ns"] <= w1[save])
              & ((thread[save] < 0) | (c["tid"] == thread[save])))
    return np.where(inside, save, -1)


def _children_by_pid(run) -> dict:
    out: dict = {}
    for row, (host, pid) in enumerate(zip(run.processes["host"], run.processes["pid"])):
        out.setdefault((host, int(pid)), []).append(row)
    return out


def _child(child_rows, hosts, created, proc: int, start: dict) -> int | None:
    """The journal of the child that Process.start() started, if the probe was
    in it (hosts, created: run.processes' columns as lists)."""
    rows = child_rows.get((hosts[proc], start.get("child_pid")), [])
    rows = [r for r in rows if created[r] >= start["start_ns"] - CREATED_SLACK_NS]
    return min(rows, key=lambda r: created[r]) if rows else None


def _window(save_calls, t_start, t_started) -> tuple[int, int] | None:
    """The innermost hooked save (or producer) call around this Process.start()."""
    around = [(end - start, start, end) for start, end, _ in save_calls if start <= t_start and end >= t_started]
    if not around:
        return None
    _, start, end = min(around, key=lambda a: a[0])  # the first of the shortest
    return start, end


def _main_thread(save_calls, w0, w1):
    """The thread the save call ran on: the producer's own timeline."""
    return next((tid for start, end, tid in save_calls if start == w0 and end == w1), None)


def _startup(created, writer, events, firsts, t_start) -> tuple[dict, list]:
    """Start-up phase -> seconds up to the writer's first unit of work
    (firstwork), the last of them its wait for the first chunk, and the
    phases' (name, start_ns) boundaries; created: run.processes' column,
    firsts: _first_calls', as lists."""
    if writer is None:
        return {}, []
    last = dict(events)  # kind -> its last event's data
    marks = [("start", t_start), ("interpreter", max(created[writer], t_start))]
    for name in ("main_rerun", "unpickle"):
        if name in last:
            marks.append((name, int(last[name]["start_ns"])))
    for name in ("bootstrap", "target_start"):
        if name in last:
            marks.append(("bootstrap" if name == "bootstrap" else "target_setup", int(last[name]["t_ns"])))
    end = firsts["work"][writer]
    if end < 0:
        return {}, marks
    # Its wait for the first chunk, where it waited before its first unit of work.
    wait = firsts["wait"][writer]
    marks.append(("first_chunk", min(wait, end) if wait >= 0 else end))
    times = [max(t, marks[0][1]) for _, t in marks]  # never before Process.start()
    times = list(accumulate(times, max))  # (np.maximum.accumulate: slower on a few)
    phases = dict.fromkeys(STARTUP_PHASES, 0.0)
    for (name, _), a, b in zip(marks, times, times[1:] + [end]):
        phases[name] += max(0, min(b, end) - a) / 1e9
    return phases, list(zip([n for n, _ in marks], times))


def startup_seconds(startup: dict[str, float]) -> float | None:
    """A save's start-up: its writer's own phases, without its wait for the
    first chunk (the producer's first fill); None where not known."""
    return sum(v for phase, v in startup.items() if phase != "first_chunk") if startup else None


def group_seconds(critical_path: dict[str, float], group: str) -> float:
    """A bottleneck group's critical-path seconds in a save's critical_path."""
    return sum([critical_path.get(c, 0.0) for c in BOTTLENECK_GROUPS[group]])


def bound_by(critical_path: dict[str, float], upload: bool = False) -> tuple[str, float]:
    """The bottleneck of a save: the group (BOTTLENECK_GROUPS) with the most
    critical-path seconds, and those seconds; an upload's writes are the
    network's and the object store's (NETWORK), a file's the write group's."""
    left_out = "write" if upload else NETWORK
    group = None
    for name in BOTTLENECK_GROUPS:  # the first of the largest, in BOTTLENECK_GROUPS' order (a save each: a loop)
        if name != left_out:
            seconds = group_seconds(critical_path, name)
            if group is None or seconds > most:
                group, most = name, seconds
    return group, most
