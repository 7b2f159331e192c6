"""Process.start() calls, as the probe journaled them: which start methods a
run used, and when a producer called Process.start() for each writer (the
journaled time, or an estimate from the writer's first unit of work less its
start-up phases when the call's record is missing)."""

from __future__ import annotations

import numpy as np

from writerprof.run import roles


def start_methods(run) -> list[str]:
    """The start methods of the run's Process.start() calls that started a
    writer (a DataLoader's readers, a launcher's helpers are not the saves')."""
    return sorted({d.get("method") for d in run.events["data"][roles.writer_starts(run)]} - {None})


def start_times(run, producers) -> dict[tuple[int, int], int]:
    """(producer row, child pid) -> start_ns of the Process.start() that
    started that child, on the producer's host's clock; for these producers."""
    if not producers:  # (np.isin of nothing sorts with np.unique, which imports numpy.ma: record's floor)
        return {}
    e = run.events
    chosen = (e["kind"] == "process_start") & np.isin(e["proc"], list(producers))
    return {(int(proc), d.get("child_pid")): d.get("start_ns")
            for proc, d in zip(e["proc"][chosen], e["data"][chosen]) if d.get("started")}


def estimated_start_ns(work_ns: int | None, save: dict) -> float | None:
    """When Process.start() was called, without its record: the writer's
    first unit of work (analysis.firstwork) less the save's start-up phases,
    its wait for the first chunk too (they end there)."""
    if work_ns is None or save["writer"] is None or not save["startup"]:
        return None
    return int(work_ns) - sum(save["startup"].values()) * 1e9
