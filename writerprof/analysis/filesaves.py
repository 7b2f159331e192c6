"""Saves found from the files written: a save is one checkpoint file's write
span (writerprof.run.files), whoever wrote it (an object's upload is one
too: uploadsaves). A writer child that wrote one checkpoint file is its
Process.start()'s save (writerprof.analysis.saves, with its start-up);
every other checkpoint file is a save of its own here:
a rank's torch.save, a thread's, each file a pool worker wrote. Its window
is the span (the file's open to its last call), its critical path the
writer's calls on that file (write, fsync, fadvise, close) and the
unexplained rest: what the writer did between them is not measured here."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import uploads
from writerprof.run import files, roles
from writerprof.run import io as io_calls



def spans_by_writer(run) -> dict[int, list[int]]:
    """Process row -> the rows of files.checkpoint_spans it wrote."""
    out: dict[int, list[int]] = {}
    for i, proc in enumerate(files.checkpoint_spans(run)["proc"].tolist()):
        out.setdefault(proc, []).append(i)
    return out


def found(run, writer_saves: list[dict]) -> list[dict]:
    """The file saves (as saves._starts' entries, with "span": its row of
    files.checkpoint_spans): the checkpoint files not a writer child's save."""
    spans = files.checkpoint_spans(run)
    taken = {f["writer"] for f in writer_saves if f["writer"] >= 0}
    starter = starters(run)
    out = []
    for i, span in enumerate(spans.tolist()):
        row = dict(zip(spans.dtype.names, span))
        writer = row["proc"]
        if writer in taken:
            continue
        producer, start = starter.get(writer, (writer, {}))
        out.append({"proc": producer, "writer": writer, "start": start,
                    "w0": row["start_ns"], "w1": row["end_ns"], "thread": -1, "t_start": row["start_ns"],
                    "t_started": row["start_ns"], "startup": {}, "boundaries": [], "span": i})
    return out


def numbered(own: list[dict]) -> None:
    """The saves of their own (a file's, an upload's: found's and
    uploadsaves.found's) numbered per producer in the order they started."""
    count: dict[int, int] = {}
    for f in sorted(own, key=lambda f: f["w0"]):
        count[f["proc"]] = count.get(f["proc"], 0) + 1
        f["count"] = count[f["proc"]]


def starters(run) -> dict[int, tuple[int, dict]]:
    """Process row -> (the row that started it with Process.start(), that event's data)."""
    p = run.processes
    rows = {}
    for row, key in enumerate(zip(p["host"].tolist(), p["pid"].tolist())):
        rows.setdefault(key, []).append(row)
    out = {}
    for e in run.events[run.events["kind"] == "process_start"]:
        data = e["data"]
        for child in rows.get((p["host"][e["proc"]], data.get("child_pid")), ()):
            if p["created_ns"][child] >= int(data.get("start_ns", 0)) - 10**9 and child not in out:
                out[child] = (int(e["proc"]), data)
    return out


def loop(run, saves: list[dict], first: int, codes: dict[str, int]) -> dict[str, np.ndarray]:
    """The writer's calls on each file save's file, as saves.find's loop
    arrays (first: the index of saves[0] among all saves)."""
    names = ("start_ns", "end_ns", "depth", "phase", "proc", "save")
    io = run.io
    phase_of = io_calls.phase_table(codes)
    timed = np.flatnonzero((phase_of[io["op"]] >= 0) & (io["path"] >= 0))
    if not saves or not len(timed):
        return {name: np.zeros(0, np.int64) for name in names}
    # The calls by (process, path), then start: each save's are a slice.
    key = (io["proc"][timed].astype(np.int64) << 32) | io["path"][timed]
    order = timed[np.lexsort((io["start_ns"][timed], key))]
    key = np.sort(key, kind="stable")
    start = io["start_ns"][order]
    spans = files.checkpoint_spans(run)[[f["span"] for f in saves]]
    wanted = (spans["proc"].astype(np.int64) << 32) | spans["path"]
    lo, hi = np.searchsorted(key, wanted), np.searchsorted(key, wanted, side="right")
    slices = []
    for k, (a, b, s0, s1) in enumerate(zip(lo.tolist(), hi.tolist(), spans["start_ns"].tolist(),
                                         spans["end_ns"].tolist())):
        a, b = a + np.searchsorted(start[a:b], s0), a + np.searchsorted(start[a:b], s1, side="right")
        slices.append((order[a:b], first + k))
    rows = np.concatenate([r for r, _ in slices])
    return {"start_ns": io["start_ns"][rows], "end_ns": io["end_ns"][rows], "depth": np.zeros(len(rows), np.int64),
            "phase": phase_of[io["op"][rows]], "proc": io["proc"][rows].astype(np.int64),
            "save": np.concatenate([np.full(len(r), save) for r, save in slices])}


def figures(run, span: int | None) -> dict:
    """A file save's bytes, calls and each phase's seconds, from its span (a
    row of files.checkpoint_spans; None: none known, only its path None)."""
    if span is None:
        return {"path": None}
    span = files.checkpoint_spans(run)[span]
    return {"bytes": int(span["bytes"]), "chunks": int(span["writes"]), "write_s": span["write_ns"] / 1e9,
            "fsync_s": span["sync_ns"] / 1e9, "close_s": span["close_ns"] / 1e9, "fadvise_s": 0.0,
            "path": str(run.io_paths[span["path"]])}


# The targets of pools' workers: a worker takes tasks, its start is no save's.
POOL_WORKERS = ("concurrent.futures.process._process_worker", "multiprocessing.pool.worker")


def child_saves(run) -> np.ndarray:
    """Per process row: whether, as a started child, it is its Process.start()'s
    save: it wrote a checkpoint file or uploaded an object, only one of
    either where the interposer saw its files, and is no pool's worker (each
    file a pool's worker writes is a save of its own: filesaves)."""
    made = np.zeros(len(run.processes), dtype=np.int64)
    for of_writer in (spans_by_writer(run), uploads.by_writer(run)):
        for row, done in of_writer.items():
            made[row] += len(done)
    return roles.writers(run) & ((made == 1) | ~files.interposed(run)) & ~pool_workers(run)


def pool_workers(run) -> np.ndarray:
    """Per process row: whether it is a pool's worker (its Process ran POOL_WORKERS' loop)."""
    pooled = np.zeros(len(run.processes), dtype=bool)
    booted = run.events[run.events["kind"] == "bootstrap"]
    pooled[booted["proc"][[data.get("target") in POOL_WORKERS for data in booted["data"].tolist()]]] = True
    return pooled


def task_waits(run, c, found: list[dict], get: int) -> list[float | None]:
    """Per save: for a pool worker's file (or upload) save, the worker's
    waits for its task (its loop's get calls) since its previous such save
    ended, or its start, up to this one's; None for the others (a rank's get is its wait
    for data, not for this save) and where it made none."""
    out: list[float | None] = [None] * len(found)
    pooled = pool_workers(run)
    mine = [(i, f) for i, f in enumerate(found) if ("span" in f or "upload" in f) and pooled[f["writer"]]]
    if not mine or get < 0:
        return out
    is_get = c["phase"] == get
    proc, start, end = c["proc"][is_get], c["start_ns"][is_get], c["end_ns"][is_get]
    last_end: dict[int, int] = {}
    for i, f in sorted(mine, key=lambda pair: pair[1]["w0"]):
        writer = f["writer"]
        waits = (proc == writer) & (end <= f["w0"]) & (start >= last_end.get(writer, 0))
        if waits.any():
            out[i] = float((end[waits] - start[waits]).sum()) / 1e9
        last_end[writer] = f["w1"]
    return out

