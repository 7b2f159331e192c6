"""The pipeline: which side sets the pace, the queue, page faults and the
final flush (CPU contention: contention)."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import buffers
from writerprof.analysis.diagnoses.base import INFO, WARNING, Code, diagnosis, emits, per_producer, producer_of
from writerprof.run import roles as run_roles

# generation-bound: the writer waited for chunks this share of its loop;
# writer-bound: the producer waited on the full queue this share of its loop.
WAIT_SHARE = 0.5
# writer-bound says "I/O-bound" when writes and fsync are this share of the save.
IO_SHARE = 0.5
# queue-stall: both sides waited at once (the queue itself) this share of the save.
QUEUE_SHARE = 0.10
# page-fault-storm: faults in hooked calls per page of the process's own
# buffers; mapping a page costs at most one fault (fault-around makes it less).
# FAULTS_FLOOR more than that at least: a few faults on tiny buffers are no storm.
FAULTS_PER_PAGE = 2.0
FAULTS_FLOOR = 1000
PAGE = buffers.PAGE
# fsync-bound: the final flush on the critical path, share of the save time.
FSYNC_SHARE = 0.30


@emits(Code("generation-bound", (INFO,),
            f"the writers waited for chunks ≥ {WAIT_SHARE:.0%} of their loop: data generation sets the pace, "
            f"not storage"),
       Code("writer-bound", (INFO,),
            f"the producer waited on the full queue ≥ {WAIT_SHARE:.0%} of its loop: the writer sets the pace "
            f"(I/O-bound when its writes and fsync are ≥ {IO_SHARE:.0%} of the save)"),
       Code("queue-stall", (WARNING,),
            f"producer and writer both waited on the queue at once for ≥ {QUEUE_SHARE:.0%} of the save: "
            f"chunks are slow to cross the queue"))
def pipeline_balance(run, procs, saves):
    """generation-bound, writer-bound and queue-stall, from the two sides'
    waits. A side whose wait was not measured (None: no hooked put or get)
    says nothing: each diagnosis reads only the saves that measured its waits."""
    out = []
    for group in per_producer(saves):
        proc = producer_of(procs, group)
        timed = piped(group)
        if not timed:
            continue
        got = [s for s in timed if s["get_wait_s"] is not None]  # the writer's side measured
        put = [s for s in timed if s["put_wait_s"] is not None]  # the producer's
        get_wait, loop = chunk_waits(timed)
        # The producer's loop: its gen and put; where its gen was not measured, the whole save
        # (the loop's upper bound: the put's share is then a lower bound, never an overstatement).
        producer_loop = sum(s["duration_s"] if s["gen_s"] is None else s["gen_s"] + s["put_wait_s"] for s in put)
        put_wait = sum(s["put_wait_s"] for s in put)
        total = sum(s["duration_s"] for s in timed)
        gens = [s["gen_s"] for s in timed if s["gen_s"] is not None]
        evidence = {"gen_s": sum(gens) if gens else None, "put_wait_s": put_wait if put else None,
                    "get_wait_s": get_wait if got else None,
                    "write_s": sum(s["write_s"] for s in timed), "saves": len(timed)}
        if generation_bound(get_wait, loop):
            out.append(diagnosis(
                "generation-bound", proc,
                f"the writers waited for chunks {get_wait / loop:.0%} of their loop ({get_wait:.2f} s): "
                f"data generation sets the pace, not storage",
                dict(evidence, get_wait_share=get_wait / loop)))
        elif producer_loop and put_wait / producer_loop >= WAIT_SHARE:
            write = sum(s["critical_path"]["write"] + s["critical_path"]["fsync"] for s in timed)
            out.append(diagnosis(
                "writer-bound", proc,
                f"the producer waited on a full queue {put_wait / producer_loop:.0%} of its loop "
                f"({put_wait:.2f} s): the writer sets the pace"
                + (", in its writes and fsync: the save is I/O-bound" if write >= IO_SHARE * total else ""),
                dict(evidence, put_wait_share=put_wait / producer_loop, io_share=write / total)))
        # The critical path's queue is the writer's get while the producer is not generating:
        # both sides waiting only where both were measured (a producer's unhooked fill would
        # read as the queue).
        both = [s for s in got if s["gen_s"] is not None]
        queue = sum(s["critical_path"]["queue"] for s in both)
        both_total = sum(s["duration_s"] for s in both)
        if both and queue / both_total >= QUEUE_SHARE:
            out.append(diagnosis(
                "queue-stall", proc,
                f"producer and writer both waited on the queue at once for {queue:.2f} s "
                f"({queue / both_total:.0%} of the save time): chunks are slow to cross the queue",
                dict(evidence, queue_s=queue), cost_s=queue))
    return out


def piped(group: list[dict]) -> list[dict]:
    """The saves of a group that went through a writer and took time: those the queue's waits are read from."""
    return [s for s in group if s["writer"] is not None and s["duration_s"] > 0]


def chunk_waits(timed: list[dict]) -> tuple[float, float]:
    """The writers' wait for chunks and their loop (its writes, waits, fsync,
    close and fadvise), summed over the saves that measured the wait (s)."""
    got = [s for s in timed if s["get_wait_s"] is not None]
    loop = sum(s["write_s"] + s["get_wait_s"] + s["fsync_s"] + s["close_s"] + s["fadvise_s"] for s in got)
    return sum(s["get_wait_s"] for s in got), loop


def generation_bound(get_wait: float, loop: float) -> bool:
    """Whether the writers waited for chunks WAIT_SHARE of their loop: generation set the pace."""
    return bool(loop) and get_wait / loop >= WAIT_SHARE


@emits(Code("page-fault-storm", (WARNING,),
            f"a producer's or writer's hooked calls took more than {FAULTS_PER_PAGE:g} page faults per page of "
            f"its buffers (+{FAULTS_FLOOR}; mapping a page costs at most 1): pages are being re-faulted"))
def page_fault_storm(run, procs, saves):
    out = []
    faults = _call_faults(run)
    pages = buffers.readings(run).pages
    for proc in procs:
        own = pages.get(proc["id"], 0)
        count = faults.get(proc["id"], 0)
        if proc["role"] not in (run_roles.WRITER, run_roles.PRODUCER) or not own:
            continue
        if count > FAULTS_PER_PAGE * own + FAULTS_FLOOR:
            out.append(diagnosis(
                "page-fault-storm", proc,
                f"{proc['role']} pid {proc['pid']} took {count} page faults in its hooked calls, "
                f"{count / own:.1f} per page of its {own * PAGE / 2**20:.0f} MiB of buffers "
                f"(mapping costs at most 1): pages are being re-faulted",
                {"faults": count, "buffer_pages": own, "faults_per_page": count / own}))
    return out


@emits(Code("fsync-bound", (INFO,),
            f"the final fsync is ≥ {FSYNC_SHARE:.0%} of the save time: the device's flush dominates"))
def fsync_bound(run, procs, saves):
    out = []
    for group in per_producer(saves):
        fsync = sum(s["critical_path"]["fsync"] for s in group)
        total = sum(s["duration_s"] for s in group)
        if total and fsync / total >= FSYNC_SHARE:
            out.append(diagnosis(
                "fsync-bound", producer_of(procs, group),
                f"the final fsync is {fsync / total:.0%} of the save time ({fsync / len(group):.3f} s per "
                f"save): the device's flush dominates",
                {"fsync_s": fsync, "save_s": total, "saves": len(group)}, cost_s=fsync))
    return out


def _call_faults(run) -> dict[int, int]:
    c = run.chunk_columns
    # Summed over each process's rows (chunk_columns are grouped by process): no temporary of every record.
    bounds = np.searchsorted(c["proc"], np.arange(len(run.processes) + 1, dtype=c["proc"].dtype))
    counts = np.zeros(len(run.processes), dtype=np.int64)
    has = bounds[1:] > bounds[:-1]
    for name in ("minflt", "majflt"):
        if has.any():
            counts[has] += np.add.reduceat(c[name], bounds[:-1][has], dtype=np.int64)
    return {i: int(n) for i, n in enumerate(counts)}
