"""What each recorded process is in the checkpoint pipeline, from what it
did: one answer for every report, plot and export.

- writer: wrote a checkpoint file (writerprof.run.files) or uploaded a
  checkpoint's object (writerprof.analysis.uploads), whoever it is: a rank
  saving its own (torch.save), a writer child, a pool worker. Where the
  interposer did not journal a process, its write calls' bytes decide
  (files.MIN_SAVE_BYTES).
- producer: made the data a writer wrote: created shared-memory buffers, or
  started a process (Process.start) that then wrote.
- reader: read data files (not its own code), wrote none: a DataLoader worker.
- forkserver, resource tracker: known by how they were started, whatever they did.
- other: anything else (a launcher, a shell, a process that only started others)."""

from __future__ import annotations

import weakref

import numpy as np

from writerprof.analysis import uploads
from writerprof.probes.writerprof_probe.format import SHM_OPS
from writerprof.run import columns, files

PRODUCER = "producer"
WRITER = "writer"
READER = "reader"
FORKSERVER = "forkserver"
RESOURCE_TRACKER = "resource_tracker"
OTHER = "other"


def roles(run) -> np.ndarray:
    """The role of each row of run.processes."""
    n = len(run.processes)
    out = np.full(n, OTHER, dtype=object)
    out[files.read_bytes(run) > 0] = READER
    producing = np.zeros(n, dtype=bool)  # made buffers, or started a process that wrote
    producing[run.shm["proc"][run.shm["op"] == SHM_OPS["create"]]] = True
    producing[run.events["proc"][writer_starts(run)]] = True
    out[producing] = PRODUCER
    out[writers(run)] = WRITER
    # The daemons are known by how they were started, whatever they did.
    for role in (FORKSERVER, RESOURCE_TRACKER):
        out[run.processes["role"] == role] = role
    return out


_writers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> writers(run), found once


def writers(run) -> np.ndarray:
    """Per process row: whether it wrote a checkpoint file or uploaded a checkpoint's object (found once per run)."""
    if run not in _writers:
        _writers[run] = _wrote(run)
    return _writers[run]


def _wrote(run) -> np.ndarray:
    n = len(run.processes)
    wrote = np.zeros(n, dtype=bool)
    wrote[files.checkpoint_spans(run)["proc"]] = True
    wrote[[u.proc for u in uploads.checkpoints(run)]] = True
    # Processes the interposer did not journal: their hooked write calls.
    c = run.chunk_columns
    write = {code for code, name in run.phase_names.items() if name == "write"}
    if len(c) and write:
        by_proc = np.zeros(n)
        for block in columns.blocks(len(c)):
            is_write = np.flatnonzero(np.isin(c["phase"][block], list(write))) + block.start
            by_proc += np.bincount(c["proc"][is_write], weights=c["bytes"][is_write].clip(0), minlength=n)
        wrote |= (by_proc >= files.MIN_SAVE_BYTES) & ~files.interposed(run)
    return wrote


def writer_starts(run) -> np.ndarray:
    """The Process.start() calls that started a writer: the rows of
    run.events of kind process_start that started a child (Process.start's
    child_pid: under forkserver its parent is the daemon) which wrote."""
    p, e = run.processes, run.events
    wrote = writers(run)
    writing = set(zip(p["host"][wrote].tolist(), p["pid"][wrote].tolist()))
    rows = np.flatnonzero(e["kind"] == "process_start")
    # As lists: an element of a numpy column at a time cost more than the test (20k starts).
    hosts, data = p["host"][e["proc"][rows]].tolist(), e["data"][rows].tolist()
    return rows[np.array([(host, d.get("child_pid")) in writing  # (one that failed has no child_pid)
                          for host, d in zip(hosts, data)], dtype=bool).reshape(-1)]
