"""Where a writer's start-up ends: at its first unit of work, the first of

- the first chunk it took: the return of its first hooked get (a queue's or
  a pipe's, the probe's generic hooks, or a spec's: a hand-off received);
- the first byte it wrote or sent anywhere: a write or send the interposer
  journaled (to a file, or to a peer: a socket, TLS's plaintext), or a
  hooked write,

once its target ran (its target_start, where the probe journaled one: a
write before it, a .pyc the re-run's imports cache, a log line of the
re-run, is the start-up's own). Whether the writer ever writes a file does
not matter: one that uploads its chunks works from the first it takes.

Its wait for the first chunk, from its first get's start until it took it,
is waiting (the producer's first fill), not start-up: STARTUP_PHASES'
first_chunk."""

from __future__ import annotations

import weakref

import numpy as np

from writerprof.run import io as io_calls

NONE = -1  # no such call
_LATEST = np.iinfo(np.int64).max


_found: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> firsts(run), found once


def firsts(run) -> dict[str, np.ndarray]:
    """Per process row: "wait", the start of its first wait for a chunk (its
    first hooked get), and "work", the start of its first unit of work; each
    once its target ran, NONE where there is none."""
    if run not in _found:
        _found[run] = _firsts(run)
    return _found[run]


def _firsts(run) -> dict[str, np.ndarray]:
    n = len(run.processes)
    c = {name: run.chunk_columns[name] for name in ("proc", "phase", "start_ns", "end_ns")}  # views
    codes = {name: code for code, name in run.phase_names.items()}
    began = _target_starts(run, n)
    get, write = codes.get("get", NONE), codes.get("write", NONE)
    is_get, is_write = c["phase"] == get, c["phase"] == write
    # A call's process's target start, for the calls of these two phases only (the columns are big).
    chosen = np.flatnonzero(is_get | is_write)
    proc = c["proc"][chosen]
    after = c["start_ns"][chosen] >= began[proc]
    gets = chosen[after & is_get[chosen]]
    writes = chosen[after & is_write[chosen]]
    wait = _earliest(n, c["proc"][gets], c["start_ns"][gets])
    work = np.minimum(_earliest(n, c["proc"][gets], c["end_ns"][gets]),
                      _earliest(n, c["proc"][writes], c["start_ns"][writes]))
    io = run.io
    if len(io):
        # Its data out: a file's writes, a peer's sends (TLS's plaintext, not its handshake: io_calls.sent).
        moved = (io_calls.sent(run) | (np.isin(io["op"], io_calls.WRITE_CODES) & ~io_calls.on_peer(run)))
        moved &= io["result"] > 0
        moved &= (io["proc"] >= 0) & (io["proc"] < n)
        rows = np.flatnonzero(moved)
        rows = rows[io["start_ns"][rows] >= began[io["proc"][rows]]]
        work = np.minimum(work, _earliest(n, io["proc"][rows], io["start_ns"][rows]))
    return {"wait": np.where(wait == _LATEST, NONE, wait), "work": np.where(work == _LATEST, NONE, work)}


def _earliest(n: int, proc: np.ndarray, t: np.ndarray) -> np.ndarray:
    out = np.full(n, _LATEST, dtype=np.int64)
    np.minimum.at(out, proc.astype(np.int64), t.astype(np.int64))
    return out


def _target_starts(run, n: int) -> np.ndarray:
    """Per process row: when its target began (its first target_start), the earliest time where none was journaled."""
    out = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    e = run.events[run.events["kind"] == "target_start"]
    for proc, data in zip(e["proc"].tolist()[::-1], e["data"].tolist()[::-1]):  # the first one wins
        t = data.get("t_ns")
        if type(t) is int:
            out[proc] = t
    return out
