"""The sampler's records, tied to the probed processes they were taken of."""

from __future__ import annotations

import weakref

import numpy as np

# An exec'd process's creation time is rounded down to a clock tick; a forked
# one's is read just after the fork: two ticks of slack cover both.
CREATED_SLACK_NS = 20_000_000


_computed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> its rows, found once


def sample_rows(run) -> np.ndarray:
    """For each of run.samples, the row of run.processes it was taken of, or
    -1 (a process the probe was not in): same host and pid, the newest created
    by then, and not after it exited (the pid may be another process's by then)."""
    if run not in _computed:
        _computed[run] = _sample_rows(run)
    return _computed[run]


def _sample_rows(run) -> np.ndarray:
    p, s = run.processes, run.samples
    rows = np.full(len(s), -1, dtype=np.int64)
    if not len(s) or not len(p):
        return rows
    number = {host: i for i, host in enumerate(run.hosts)}
    host_index = np.array([number[h] for h in p["host"]], dtype=np.int64)
    process_key = (host_index << 32) | p["pid"].astype(np.int64)
    sample_key = (s["host_index"].astype(np.int64) << 32) | s["pid"].astype(np.int64)
    # One merged sequence by (key, time), a process at its creation (less the
    # slack) before a sample at the same time; each sample takes the last
    # process before it, if that one has its key.
    keys = np.concatenate([process_key, sample_key])
    times = np.concatenate([p["created_ns"] - CREATED_SLACK_NS, s["t_ns"]])
    is_sample = np.concatenate([np.zeros(len(p), bool), np.ones(len(s), bool)])
    order = np.lexsort((is_sample, times, keys))
    position = np.where(~is_sample[order], np.arange(len(order)), -1)
    last_process = order[np.maximum.accumulate(position)]  # an index < len(p), or order[-1]
    sampled = is_sample[order]
    row = np.where(np.maximum.accumulate(position)[sampled] >= 0, last_process[sampled], -1)
    which = order[sampled] - len(p)  # the sample each of those is
    found = (row >= 0) & (row < len(p))
    found[found] = process_key[row[found]] == sample_key[which[found]]
    exited = p["exited_ns"][np.where(found, row, 0)]
    found &= (exited < 0) | (s["t_ns"][which] <= exited + CREATED_SLACK_NS)
    rows[which[found]] = row[found]
    return rows
