"""The times a run's records may have: a process's records lie within its
life, which lies within the recording. Records outside (random bytes, a
damaged file) are dropped and said, so that the analysis sees times a clock
could have read. And two journals of one pid that are one process exec'ing."""

from __future__ import annotations

from itertools import compress, repeat
from operator import itemgetter
from pathlib import Path

import numpy as np

from writerprof.probes.writerprof_probe import format as journal
from writerprof.run import fields


def rel(root: Path, file: str | Path) -> str:
    """A run directory's file as loss lines name it."""
    return Path(file).relative_to(root).as_posix()


SLACK_NS = 60 * 10**9  # clocks read by different processes, a process starting before record noted the start
MAX_LIFE_NS = 1 << 49  # 6.5 days: the longest recording read when run.json cannot say how long it was
EXEC_TICK_NS = 10**7  # /proc starttime's precision (USER_HZ 100): an exec'd image's created_ns is its pid's


def _life(meta: dict) -> int:
    """How long any process of the recording can have lived, at most."""
    start, end = meta.get("started_ns"), meta.get("ended_ns")
    if start is not None and end is not None and end >= start:
        return min(end - start + 2 * SLACK_NS, MAX_LIFE_NS)
    return MAX_LIFE_NS


def _window(anchor: int, meta: dict) -> tuple[int, int]:
    return anchor - SLACK_NS, anchor + _life(meta)


def host_window(meta: dict, host: str, journals: list) -> tuple[int, int]:
    """The times a record of that host can have: the recording's on the
    recording host; elsewhere (another clock), around its processes' starts."""
    if host == journal.safe_host(meta.get("host") or "") and meta.get("started_ns") is not None:
        return _window(meta["started_ns"], meta)
    anchors = sorted(j.identity["t_ns"] for j in journals)
    if not anchors:
        return 0, fields.MAX_TIME
    lo, hi = _window(anchors[len(anchors) // 2], meta)
    return max(lo - _life(meta), 0), hi


def in_recording(root: Path, meta: dict, host: str, journals: list, losses: list[str]) -> list:
    """The journals whose process started within the recording (on the recording
    host's clock; on another host's, near its other processes' start)."""
    lo, hi = host_window(meta, host, journals)
    kept = []
    for j in journals:
        if lo <= j.identity["t_ns"] <= hi:
            kept.append(j)
        else:
            losses.append(f"{j.rel}: its identity's time ({j.identity['t_ns']} ns) is not within the recording: "
                          f"journal skipped ({j.count} chunk records)")
    for j in kept:  # and each process's events within its life
        lo, hi = _window(j.identity["t_ns"], meta)
        inside = _within(j.events[1:], lo, hi)
        outside(len(j.events) - 1 - len(inside), f"{j.rel}: {{}} event{{}} with times outside the process's "
                                                 f"life dropped", losses)
        j.events[1:] = inside
    return kept


def _within(events: list[dict], lo: int, hi: int) -> list[dict]:
    """The events whose times (t_ns and any start_ns, end_ns) are all in
    [lo, hi]; every one (the common case) found by a min and a max over all
    their times, without a check per event."""
    every = list(map(itemgetter("t_ns"), events))  # a kept event has an int t_ns (fields.clean_events)
    for k in ("start_ns", "end_ns"):
        every += map(itemgetter(k), compress(events, map(dict.__contains__, events, repeat(k))))
    if not every or (lo <= min(every) and max(every) <= hi):
        return events
    return [e for e in events if all(lo <= e[k] <= hi for k in ("t_ns", "start_ns", "end_ns") if k in e)]


def outside(count: int, template: str, losses: list[str]) -> None:
    if count:
        losses.append(template.format(count, "s" * (count != 1)))


def chunk_windows(journals: list, meta: dict) -> np.ndarray:
    """Per journal (a row of run.processes): the first and last time its records may have."""
    return np.array([_window(j.identity["t_ns"], meta) for j in journals], dtype=np.int64).reshape(-1, 2)


def implausible(records: np.ndarray, procs: np.ndarray, counts: np.ndarray, windows: np.ndarray):
    """Which chunk records (counts[i] of process procs[i], one after another)
    have times outside their process's window, or end before they start;
    None if none has (the common case, found by a min and a max per process)."""
    start, end = records["start_ns"], records["end_ns"]
    has = counts > 0
    firsts = (np.cumsum(counts) - counts)[has]
    if not len(firsts) or ((np.minimum.reduceat(start, firsts) >= windows[procs[has], 0]).all()
                           and (np.maximum.reduceat(end, firsts) <= windows[procs[has], 1]).all()
                           and (start <= end).all()):
        return None
    lo, hi = np.repeat(windows[procs, 0], counts), np.repeat(windows[procs, 1], counts)
    return ~((start >= lo) & (start <= end) & (end <= hi))


def impossible_losses(dropped: np.ndarray, journals: list, losses: list[str]) -> None:
    """The loss lines of the chunk records dropped as implausible, per process."""
    for proc in np.flatnonzero(dropped):
        outside(int(dropped[proc]), f"{journals[proc].chunks_rel}: {{}} chunk record{{}} with impossible times "
                                    f"(outside the process's life, or ending before they start) dropped", losses)


def plausible_samples(root: Path, samples: np.ndarray, hosts: list[str], files: list, losses: list[str]):
    if not len(samples):
        return samples
    windows = np.array([w for *_, w in files], dtype=np.int64).reshape(-1, 2)
    lo, hi = windows[samples["host_index"], 0], windows[samples["host_index"], 1]
    ok = (samples["t_ns"] >= lo) & (samples["t_ns"] <= hi)
    bad = np.bincount(samples["host_index"][~ok], minlength=len(hosts)).tolist()
    for host_index, count in enumerate(bad):
        outside(count, f"{rel(root, files[host_index][1])}: {{}} sampler record{{}} with times outside the "
                        f"recording dropped", losses)
    return samples if ok.all() else samples[ok]


def execs(journals: list, losses: list[str]) -> None:
    """A journal followed by one of the same pid on the same host whose
    identity says it was exec'd, with the same start (created_ns within a
    clock tick), is one process that exec'd: two images, not a process
    killed and its pid reused. The later image's identity gets exec_of (the
    earlier's row of run.processes) and the earlier's missing exit is no loss."""
    by_pid: dict[tuple[int, int], list] = {}
    for j in journals:
        by_pid.setdefault((j.host_index, j.identity["pid"]), []).append(j)
    row = {id(j): i for i, j in enumerate(journals)}
    for images in by_pid.values():
        images.sort(key=lambda j: j.identity["t_ns"])
        for before, after in zip(images, images[1:]):
            if (after.identity.get("created_via") == "exec" and not _exited(before)
                    and abs(after.identity["created_ns"] - before.identity["created_ns"]) < EXEC_TICK_NS
                    and after.identity["t_ns"] >= before.events[-1]["t_ns"]):
                before.exec_to = after
                after.identity["exec_of"] = row[id(before)]
                if before.unexited_loss in losses:
                    losses.remove(before.unexited_loss)


def _exited(j) -> bool:
    return any(e["kind"] == "exit" for e in j.events)


