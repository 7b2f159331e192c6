"""A producer's loop: from the end of Process.start() to its last hand-off
to the save's writer (a put on a queue or pipe, timed by the probe's generic
hooks), its waits in it, and its generation where its fill is no hooked
call: its time between hand-offs.

Its waits are its puts (a full queue) and its own hooked gets in the loop
(loop_waits: a buffer its writer freed, a reply): the writer setting the
pace. Between one hooked call of these and the next on the save's thread it
is doing its own work: filling the next buffer. From the end of
Process.start() to its first put, and from each call's end to the next
one's start, is the save's generation, labelled as inferred
(Save["gen_from"]); it is never the queue's time, nor a wait for a free
buffer. Its threads' CPU time in those gaps (the sampler's per-thread
readings, where any cover them) says whether it computed or slept there
(Save["gen_cpu_s"])."""

from __future__ import annotations

import numpy as np

from writerprof.analysis.runqueue import growth
from writerprof.analysis.samples import thread_rows
from writerprof.analysis.threads import STACKS_THREAD

HOOKED = "calls"  # Save["gen_from"]: the fill is a hooked call (a spec's gen)
BETWEEN = "between hand-offs"  # inferred here


def loop_waits(c, owner, found: list[dict], get: int, last_put: np.ndarray) -> np.ndarray:
    """The rows of c that are a producer's hooked gets in a save's loop
    (owned: saves.find's owner), from the end of Process.start() to the end
    of its last put (last_put: per save, -1 for none)."""
    rows = np.flatnonzero((c["phase"] == get) & (owner >= 0))
    save = owner[rows]
    started = np.array([f["t_started"] for f in found], dtype=np.int64)
    inside = (c["start_ns"][rows] >= started[save]) & (c["end_ns"][rows] <= last_put[save])
    return rows[inside]


def between(c, owner, found: list[dict], put: int, hooked_gen: np.ndarray,
            waits: np.ndarray) -> dict[str, np.ndarray]:
    """The generation pieces (start_ns, end_ns, save) of the saves without a
    hooked gen call (hooked_gen[i]: that save's count of them) whose puts
    (owned: saves.find's owner) were made on one thread: the gaps between
    them and the waits (loop_waits' rows) on that thread."""
    rows = np.flatnonzero((c["phase"] == put) & (owner >= 0))
    save = owner[rows]
    rows, save = rows[hooked_gen[save] == 0], save[hooked_gen[save] == 0]
    starts, ends, of = [], [], []
    order = np.lexsort((c["start_ns"][rows], save))
    rows, save = rows[order], save[order]
    for i in np.unique(save).tolist():
        mine = rows[save == i]
        if len(np.unique(c["tid"][mine])) != 1:
            continue  # hand-offs from several threads: no one thread's gaps
        waited = waits[(owner[waits] == i) & (c["tid"][waits] == c["tid"][mine[0]])]
        mine = np.concatenate([mine, waited])
        mine = mine[np.argsort(c["start_ns"][mine], kind="stable")]
        begin = np.concatenate([[found[i]["t_started"]], c["end_ns"][mine][:-1]])
        stop = c["start_ns"][mine]
        kept = stop > begin
        starts.append(begin[kept])
        ends.append(stop[kept])
        of.append(np.full(int(kept.sum()), i))
    if not starts:
        empty = np.zeros(0, np.int64)
        return {"start_ns": empty, "end_ns": empty, "save": empty}
    return {"start_ns": np.concatenate(starts), "end_ns": np.concatenate(ends), "save": np.concatenate(of)}


def cpu_seconds(run, producer_rows: list[int], pieces: dict[str, np.ndarray], n: int) -> list[float | None]:
    """Per save: its producer's CPU seconds (every thread but the probe's)
    within its inferred generation pieces, each reading's CPU time spread
    evenly over its interval; None where no reading covers them."""
    out: list[float | None] = [None] * n
    t = run.threads
    if not len(t) or not len(pieces["save"]):
        return out
    rows = thread_rows(run)
    # A reading's CPU time is the thread's total: what it used in its interval is the growth since its previous.
    cpu = growth((rows.astype(np.int64) << 32) | t["tid"].astype(np.int64), t["t_ns"], t["utime_ns"] + t["stime_ns"])
    keep = (rows >= 0) & (t["name"] != STACKS_THREAD)
    rows, t, cpu = rows[keep], t[keep], cpu[keep]
    span = np.maximum(t["t_ns"] - t["since_ns"], 1)
    for i in np.unique(pieces["save"]).tolist():
        mine = rows == producer_rows[i]
        if not mine.any():
            continue
        a, b = pieces["start_ns"][pieces["save"] == i], pieces["end_ns"][pieces["save"] == i]
        since, until = t["since_ns"][mine], t["t_ns"][mine]
        overlap = np.clip(np.minimum(until[:, None], b[None, :]) - np.maximum(since[:, None], a[None, :]), 0, None)
        if overlap.sum() == 0:
            continue
        out[i] = float((cpu[mine] * overlap.sum(axis=1) / span[mine]).sum() / 1e9)
    return out
