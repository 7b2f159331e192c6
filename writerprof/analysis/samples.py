"""The sampler's records (per process and per thread), tied to the probed
processes they were taken of; and the NUMA node of the CPU each was read on."""

from __future__ import annotations

import weakref

import numpy as np

from writerprof.run import topology

# An exec'd process's creation time is rounded down to a clock tick; a forked
# one's is read just after the fork: two ticks of slack cover both.
CREATED_SLACK_NS = 20_000_000


_computed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> its rows, found once
_computed_threads: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def sample_rows(run) -> np.ndarray:
    """For each of run.samples, the row of run.processes it was taken of, or
    -1 (a process the probe was not in): same host and pid, the newest created
    by then, and not after it exited (the pid may be another process's by then)."""
    if run not in _computed:
        _computed[run] = record_rows(run, run.samples)
    return _computed[run]


def thread_rows(run) -> np.ndarray:
    """sample_rows for run.threads."""
    if run not in _computed_threads:
        _computed_threads[run] = record_rows(run, run.threads)
    return _computed_threads[run]


def node_table(run) -> np.ndarray:
    """CPU -> NUMA node per host as one table, a row per host (run.hosts) and a
    last column for CPUs off the map; -1 where unknown. Index it with cpu_column."""
    node_of = [topology.cpu_nodes(run.topology[h]) if h in run.topology else {} for h in run.hosts]
    width = max((max(nodes) for nodes in node_of if nodes), default=0) + 2
    lut = np.full((max(len(node_of), 1), width), -1, dtype=np.int64)
    for h, nodes in enumerate(node_of):
        for cpu, node in nodes.items():
            lut[h, cpu] = node
    return lut


def cpu_column(lut: np.ndarray, cpu: np.ndarray) -> np.ndarray:
    """The column of node_table for each CPU number (the last for one off the map)."""
    cpu = cpu.astype(np.int64)
    width = lut.shape[1]
    return np.where((cpu >= 0) & (cpu < width - 1), cpu, width - 1)


def record_rows(run, s: np.ndarray) -> np.ndarray:
    """sample_rows of any records with host_index, pid and t_ns (int32: a
    10M-chunk run's 8M samples' rows are kept for the whole report)."""
    p = run.processes
    rows = np.full(len(s), -1, dtype=np.int32)
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
