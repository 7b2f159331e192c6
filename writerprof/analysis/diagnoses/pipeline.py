"""The pipeline: which side sets the pace, the queue, page faults and the
final flush (CPU contention: contention)."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import buffers
from writerprof.analysis.saves import index as saves_index
from writerprof.analysis.diagnoses.base import INFO, WARNING, Code, diagnosis, emits, per_producer, producer_of
from writerprof.run import roles as run_roles

# generation-bound: the writer waited for chunks this share of its loop (wall time);
# writer-bound: the producer waited on its writer (a full queue, a freed buffer) this share of its loop.
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
            f"the writers waited for chunks ≥ {WAIT_SHARE:.0%} of their loop (its wall time, from their first wait "
            f"for a chunk to their last call): data generation sets the pace, not storage"),
       Code("writer-bound", (INFO,),
            f"the producer waited on its writer (a full queue, a freed buffer) ≥ {WAIT_SHARE:.0%} of its loop "
            f"(Process.start() to its last hand-off): the writer sets the pace (I/O-bound when its writes and "
            f"fsync are ≥ {IO_SHARE:.0%} of the save)"),
       Code("queue-stall", (WARNING,),
            f"producer and writer both waited on the queue at once for ≥ {QUEUE_SHARE:.0%} of the save: "
            f"chunks are slow to cross the queue"))
def pipeline_balance(run, procs, saves):
    """generation-bound, writer-bound and queue-stall, from the two sides'
    measured waits over their loops' wall time. A side whose wait was not
    measured (None: no hooked put or get) says nothing: each diagnosis reads
    only the saves that measured its waits; nothing is read from a save's
    unexplained time."""
    out = []
    for group in per_producer(saves):
        proc = producer_of(procs, group)
        timed = piped(group)
        if not timed:
            continue
        got = [s for s in timed if s["get_wait_s"] is not None]  # the writer's side measured
        get_wait, loop = chunk_waits(timed)
        put_wait, free_wait, producer_loop = producer_waits(timed)
        total = sum(s["duration_s"] for s in timed)
        gens = [s for s in timed if s["gen_s"] is not None]
        cpus = [s["gen_cpu_s"] for s in gens if s["gen_cpu_s"] is not None]
        evidence = {"gen_s": sum(s["gen_s"] for s in gens) if gens else None,
                    "gen_cpu_s": sum(cpus) if cpus and len(cpus) == len(gens) else None,
                    "put_wait_s": put_wait if producer_loop else None,
                    "free_wait_s": free_wait if producer_loop else None,
                    "producer_loop_s": producer_loop or None,
                    "get_wait_s": get_wait if got else None, "writer_loop_s": loop or None,
                    "write_s": sum(s["write_s"] for s in timed), "saves": len(timed)}
        if generation_bound(get_wait, loop):
            out.append(diagnosis(
                "generation-bound", proc,
                f"the writers waited for chunks {get_wait / loop:.0%} of their loop ({get_wait:.2f} s of "
                f"{loop:.2f} s){_generation(evidence)}: data generation sets the pace, not storage",
                dict(evidence, get_wait_share=get_wait / loop)))
        elif producer_loop and (put_wait + free_wait) / producer_loop >= WAIT_SHARE:
            waited = put_wait + free_wait
            write = sum(s["critical_path"]["write"] + s["critical_path"]["fsync"] for s in timed)
            on = f"{put_wait:.2f} s on a full queue" + (f", {free_wait:.2f} s for a freed buffer" if free_wait else "")
            out.append(diagnosis(
                "writer-bound", proc,
                f"the producer waited on its writer {waited / producer_loop:.0%} of its loop ({on}, of "
                f"{producer_loop:.2f} s){_generation(evidence)}: the writer sets the pace"
                + ((", in its uploads: the save is bound by the network/object store"
                    if all(s.get("upload") for s in timed) else ", in its writes and fsync: the save is I/O-bound")
                   if write >= IO_SHARE * total else ""),
                dict(evidence, put_wait_share=waited / producer_loop, io_share=write / total)))
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


def _generation(evidence: dict) -> str:
    """The producer's measured generation, as the pace's messages say it ("" where not measured)."""
    if evidence["gen_s"] is None:
        return ""
    cpu = f", {evidence['gen_cpu_s']:.2f} s of CPU" if evidence["gen_cpu_s"] is not None else ""
    return f"; the producer generated for {evidence['gen_s']:.2f} s{cpu}"


def piped(group: list[dict]) -> list[dict]:
    """The saves of a group that went through a writer and took time: those the queue's waits are read from."""
    return [s for s in group if s["writer"] is not None and s["duration_s"] > 0]


def chunk_waits(timed: list[dict]) -> tuple[float, float]:
    """The writers' wait for chunks and their loop's wall time (writer_loop_s),
    summed over the saves that measured the wait (s)."""
    got = [s for s in timed if s["get_wait_s"] is not None and s["writer_loop_s"] is not None]
    return sum(s["get_wait_s"] for s in got), sum(s["writer_loop_s"] for s in got)


def producer_waits(timed: list[dict]) -> tuple[float, float, float]:
    """The producer's waits on its writers (on a full queue, for a freed
    buffer) and its loop's wall time (producer_loop_s), summed over the
    saves whose hand-offs were measured (s)."""
    paced = [s for s in timed if s["put_wait_s"] is not None and s["producer_loop_s"] is not None]
    return (sum(s["put_wait_s"] for s in paced), sum(s["free_wait_s"] or 0.0 for s in paced),
            sum(s["producer_loop_s"] for s in paced))


def generation_bound(get_wait: float, loop: float) -> bool:
    """Whether the writers waited for chunks WAIT_SHARE of their loop: generation set the pace."""
    return bool(loop) and get_wait / loop >= WAIT_SHARE


@emits(Code("page-fault-storm", (WARNING,),
            f"a producer's or writer's hooked calls took, inside them, more than {FAULTS_PER_PAGE:g} page faults "
            f"per page of its buffers (+{FAULTS_FLOOR}; mapping a page costs at most 1): pages are being re-faulted"))
def page_fault_storm(run, procs, saves):
    """Only the faults inside the calls (each record's are its call's own:
    the probe reads them at its start and its end), never the process's
    others: a writer's copies of each chunk into memory of its own between
    its calls fault once per page copied, and say nothing of its buffers."""
    out = []
    pages = buffers.readings(run).pages
    bounds = saves_index(run).chunk_bounds  # chunk records grouped by process
    for proc in procs:
        own = pages.get(proc["id"], 0)
        if proc["role"] not in (run_roles.WRITER, run_roles.PRODUCER) or not own:
            continue
        by_phase = _call_faults(run, bounds[proc["id"]], bounds[proc["id"] + 1])
        count = sum(by_phase.values())
        if count > FAULTS_PER_PAGE * own + FAULTS_FLOOR:
            where = ", ".join(f"{n} in its {phase} calls" for phase, n in by_phase.items())
            life = (proc["minflt"] or 0) + (proc["majflt"] or 0) if proc["minflt"] is not None else None
            out.append(diagnosis(
                "page-fault-storm", proc,
                f"{proc['role']} pid {proc['pid']} took {count} page faults inside its hooked calls ({where}), "
                f"{count / own:.1f} per page of its {own * PAGE / 2**20:.0f} MiB of buffers (mapping costs at "
                f"most 1): pages are being re-faulted"
                + (f"; {life} in the {proc['role']}'s life" if life is not None else ""),
                {"faults": count, "faults_by_phase": by_phase, "buffer_pages": own, "faults_per_page": count / own,
                 "life_faults": life}))
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


def _call_faults(run, first: int, stop: int) -> dict[str, int]:
    """Phase name -> the faults inside the calls of that phase among chunk
    records first to stop - 1 (one process's), the most first; none: left out."""
    c = run.chunk_columns
    phase = c["phase"][first:stop]
    faults = c["minflt"][first:stop].astype(np.int64) + c["majflt"][first:stop]
    counts = np.bincount(phase, weights=faults, minlength=1)
    found = {run.phase_names.get(code, str(code)): int(counts[code]) for code in np.flatnonzero(counts).tolist()}
    return dict(sorted(found.items(), key=lambda kv: -kv[1]))
