"""Saves found from the objects uploaded (writerprof.analysis.uploads), as
file saves are from the files written (filesaves): a writer child that did
one upload is its Process.start()'s save (writerprof.analysis.saves, with
its start-up); every other upload is a save of its own. Its window is the
upload's (its first request's start to its last response's end), its
writes the union of its requests' times: parts in parallel on threads
count once (its critical path), their sum is its thread time."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import filesaves, uploads


def found(run, writer_saves: list[dict]) -> list[dict]:
    """The upload saves (as saves._starts' entries, with "upload": its index
    into uploads.checkpoints): the uploads not a writer child's save."""
    taken = {f["writer"] for f in writer_saves if f["writer"] >= 0}
    starter = filesaves.starters(run)
    out = []
    for i, upload in enumerate(uploads.checkpoints(run)):
        if upload.proc in taken:
            continue
        producer, start = starter.get(upload.proc, (upload.proc, {}))
        out.append({"proc": producer, "writer": upload.proc, "start": start, "w0": upload.start_ns,
                    "w1": upload.end_ns, "thread": -1, "t_start": upload.start_ns, "t_started": upload.start_ns,
                    "startup": {}, "boundaries": [], "upload": i})
    return out


def loop(run, pairs: list[tuple[int, int]], write: int, depth: int) -> dict[str, np.ndarray]:
    """The writes of each (upload, save) of pairs as saves.find's loop
    arrays: its requests' union, as calls of the phase code write at depth
    (above the writer's hooked calls: its wait on the threads that upload is
    the upload's time)."""
    found = uploads.checkpoints(run)
    pieces = [(found[u].intervals, found[u].proc, save) for u, save in pairs]
    start = np.concatenate([s for (s, _), _, _ in pieces] or [np.zeros(0, np.int64)])
    sizes = [len(s) for (s, _), _, _ in pieces]
    return {"start_ns": start, "end_ns": np.concatenate([e for (_, e), _, _ in pieces] or [np.zeros(0, np.int64)]),
            "depth": np.full(len(start), depth, np.int64), "phase": np.full(len(start), write, np.int64),
            "proc": np.repeat([p for _, p, _ in pieces], sizes).astype(np.int64),
            "save": np.repeat([s for _, _, s in pieces], sizes).astype(np.int64)}


def figures(run, index: int) -> dict:
    """An upload save's bytes, writes and seconds (as filesaves.figures'),
    and the upload itself (its key, parts, times, status)."""
    u = uploads.checkpoints(run)[index]
    t0 = u.start_ns
    return {"bytes": u.bytes, "chunks": sum(r.sends for r in u.parts), "write_s": u.critical_ns / 1e9,
            "fsync_s": 0.0, "close_s": 0.0, "fadvise_s": 0.0, "path": u.key if u.key is not None else u.peer,
            "parts": u.part_count, "write_threads_s": u.thread_ns / 1e9,
            "upload": {"kind": u.kind, "key": u.key, "peer": u.peer, "upload_id": u.upload_id, "bytes": u.bytes,
                       "sent_bytes": u.sent, "mismatches": u.mismatches, "parts": u.part_count,
                       "critical_s": u.critical_ns / 1e9, "threads_s": u.thread_ns / 1e9,
                       "status": u.status, "http_status": u.http_status,
                       "requests": [{"role": r.role, "part": r.number, "tid": r.tid, "start_s": (r.start_ns - t0) / 1e9,
                                     "seconds": (r.end_ns - r.start_ns) / 1e9, "bytes": r.length, "sent_bytes": r.sent,
                                     "status": r.status or None} for r in u.requests]}}

