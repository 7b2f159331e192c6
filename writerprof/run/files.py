"""The files each process wrote and read, from the interposer's records
(Run.io), and which of them are checkpoint files: one definition for the
roles, the saves and the reports.

A process's write span of a file is its calls on that path from the first
(the open, or the first write where the open was not seen) to the last
(the close, or the last write or sync), calls through different fds of one
path joined where they overlap (numpy's tofile writes through a dup of the
Python file's fd, which is the one synced and closed). One path written
again after its close is a new span.

A span is a checkpoint file when it wrote MIN_SAVE_BYTES or more (logs,
JSON results and the like are smaller) to a file outside /dev/shm (where
MPI and PyTorch set up their shared memory, writing it whole). `record --save-files GLOB` replaces
that rule: then the spans whose path matches one of the globs are the
checkpoint files, whatever their size."""

from __future__ import annotations

import fnmatch
import weakref

import numpy as np

from writerprof.run.io import CLOSE_CODES, READ_CODES, SYNC_CODES, WRITE_CODES, on_peer

MIN_SAVE_BYTES = 1 << 20
SHARED_MEMORY = "/dev/shm/"  # not storage: no checkpoint file by the default rule
# Files a process reads to run, not data: its modules and libraries, its
# venv's configuration, the probe's compiled wrappers (calls.py's cache).
CODE_SUFFIXES = (".py", ".pyc", ".so", ".pth", ".pyd", "/pyvenv.cfg", ".marshal")

SPANS = np.dtype([
    ("proc", "<i4"), ("path", "<i4"), ("start_ns", "<i8"), ("end_ns", "<i8"), ("first_write_ns", "<i8"),
    ("last_write_ns", "<i8"), ("bytes", "<i8"), ("writes", "<i8"), ("write_ns", "<i8"), ("syncs", "<i8"),
    ("sync_ns", "<i8"), ("close_ns", "<i8"), ("checkpoint", "?"),
])

_spans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def save_globs(run) -> list[str]:
    return [g for g in (run.meta.get("save_files") or []) if isinstance(g, str)]


def write_spans(run) -> np.ndarray:
    """Every write span of the run (SPANS), in start order; made once per run."""
    if run not in _spans:
        _spans[run] = _write_spans(run, save_globs(run))
    return _spans[run]


def matches(path: str, globs: list[str]) -> bool:
    """Whether `record --save-files` names this path (a file's, an upload's key)."""
    return any(fnmatch.fnmatchcase(path, g) for g in globs)


def checkpoint_spans(run) -> np.ndarray:
    spans = write_spans(run)
    return spans[spans["checkpoint"]]


def _write_spans(run, globs: list[str]) -> np.ndarray:
    io = run.io
    if not len(io):
        return np.zeros(0, SPANS)
    on_file = (io["path"] >= 0) & ~on_peer(run)  # a socket's peer is no file
    key = (io["proc"].astype(np.int64) << 32) | io["file"].astype(np.int64)
    written = np.isin(io["op"], WRITE_CODES)
    # Each open of a file (proc, file number) is a session; those of a
    # (proc, path) written through any of them count (a dup's writes, the
    # original fd's fsync and close).
    pair = (io["proc"].astype(np.int64) << 32) | io["path"].astype(np.int64)
    mine = np.isin(pair, np.unique(pair[written & on_file])) & on_file
    rows = np.flatnonzero(mine)
    if not len(rows):
        return np.zeros(0, SPANS)
    order = rows[np.lexsort((io["start_ns"][rows], key[rows]))]
    k = key[order]
    first = np.flatnonzero(np.append(True, k[1:] != k[:-1]))
    r = io[order]
    is_write = np.isin(r["op"], WRITE_CODES)
    is_sync = np.isin(r["op"], SYNC_CODES)
    is_close = np.isin(r["op"], CLOSE_CODES)
    took = r["end_ns"] - r["start_ns"]
    moved = np.where(is_write, r["result"].clip(0), 0)
    big = np.iinfo(np.int64).max

    def per(values, fn):
        return fn.reduceat(values, first)

    session = {
        "proc": r["proc"][first], "path": r["path"][first], "start_ns": per(r["start_ns"], np.minimum),
        "end_ns": per(r["end_ns"], np.maximum),
        "first_write_ns": per(np.where(is_write, r["start_ns"], big), np.minimum),
        "last_write_ns": per(np.where(is_write, r["end_ns"], 0), np.maximum),
        "bytes": per(moved, np.add), "writes": per(is_write.astype(np.int64), np.add),
        "write_ns": per(np.where(is_write, took, 0), np.add), "syncs": per(is_sync.astype(np.int64), np.add),
        "sync_ns": per(np.where(is_sync, took, 0), np.add), "close_ns": per(np.where(is_close, took, 0), np.add),
    }
    return _joined(session, run.io_paths, globs)


def _joined(session: dict, paths: np.ndarray, globs: list[str]) -> np.ndarray:
    """Sessions of one process and path that overlap in time as one span."""
    order = np.lexsort((session["start_ns"], session["path"], session["proc"]))
    out = []
    for i in order.tolist():
        row = {name: int(v[i]) for name, v in session.items()}
        last = out[-1] if out else None
        if last and last["proc"] == row["proc"] and last["path"] == row["path"] and row["start_ns"] <= last["end_ns"]:
            last["end_ns"] = max(last["end_ns"], row["end_ns"])
            last["first_write_ns"] = min(last["first_write_ns"], row["first_write_ns"])
            last["last_write_ns"] = max(last["last_write_ns"], row["last_write_ns"])
            for name in ("bytes", "writes", "write_ns", "syncs", "sync_ns", "close_ns"):
                last[name] += row[name]
        else:
            out.append(row)
    out = [row for row in out if row["writes"]]
    spans = np.zeros(len(out), SPANS)
    for name in SPANS.names[:-1]:
        spans[name] = [row[name] for row in out]
    if globs:
        matched = np.array([matches(p, globs) for p in paths], dtype=bool)
        spans["checkpoint"] = matched[spans["path"]] if len(spans) else False
    else:
        shared = np.array([p.startswith(SHARED_MEMORY) for p in paths], dtype=bool)
        spans["checkpoint"] = (spans["bytes"] >= MIN_SAVE_BYTES) & ~(shared[spans["path"]] if len(spans) else False)
    return np.sort(spans, order="start_ns", kind="stable")


def read_bytes(run) -> np.ndarray:
    """Per process row: bytes it read from data files (not its code: CODE_SUFFIXES)."""
    io = run.io
    out = np.zeros(len(run.processes), dtype=np.int64)
    if not len(io):
        return out
    data_path = np.array([not p.endswith(CODE_SUFFIXES) and not p.startswith(("/proc/", "/sys/"))
                          for p in run.io_paths], dtype=bool)
    reads = np.isin(io["op"], READ_CODES) & (io["path"] >= 0) & ~on_peer(run)
    reads[reads] = data_path[io["path"][reads]]
    np.add.at(out, io["proc"][reads], io["result"][reads].clip(0))
    return out


def interposed(run) -> np.ndarray:
    """Per process row: whether the interposer journaled its file calls."""
    out = np.zeros(len(run.processes), dtype=bool)
    out[run.io["proc"]] = True  # (not np.unique: it imports numpy.ma, ~0.03 CPU s of record's summary)
    return out
