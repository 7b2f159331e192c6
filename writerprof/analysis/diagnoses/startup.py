"""Start-up: the writer's own way from Process.start() to its first unit of
work (analysis.firstwork: the first chunk it took, the first byte it wrote or
sent), the re-run of the parent's __main__, and forking with live threads."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import forkthreads
from writerprof.analysis.components import STARTUP_PHASES
from writerprof.analysis.diagnoses.base import INFO, WARNING, Code, diagnosis, emits, per_producer, producer_of
from writerprof.analysis.intervals import median_interval
from writerprof.analysis.saves import index

# writer-startup: the writer's own start-up on the save's critical path, as a share of the save, in the median save.
STARTUP_SHARE = 0.20
# main-reimport: the re-run of __main__ on the critical path, share of the save time.
REIMPORT_SHARE = 0.02
# The writer's own start-up: Process.start() until its first unit of work, less
# its wait for the first chunk (first_chunk): that wait is the producer
# generating, not the writer starting; and of the phases, only what held the
# save up (the critical path) costs it: a writer that starts while the producer
# fills its first buffers costs nothing.
OWN_PHASES = tuple(p for p in STARTUP_PHASES if p != "first_chunk")
_ON_PATH = tuple(f"startup:{p}" for p in OWN_PHASES)
_WINDOW = "Process.start() to its first unit of work, less its wait for the first chunk"


@emits(Code("writer-startup", (WARNING,),
            f"the writer's own start-up ({_WINDOW}) held the median "
            f"save up for ≥ {STARTUP_SHARE:.0%} of it, on its critical path (one slow save of three does not "
            f"fire it)"))
def writer_startup(run, procs, saves):
    out = []
    for group in per_producer(saves):
        timed = [s for s in group if s["startup"] and s["duration_s"] > 0]
        if not timed:
            continue
        held = [sum(s["critical_path"].get(c, 0.0) for c in _ON_PATH) for s in timed]
        shares = [h / s["duration_s"] for h, s in zip(held, timed)]
        share = float(np.median(shares))
        if share < STARTUP_SHARE:
            continue
        low, high, coverage = median_interval(shares)
        duration = float(np.median([s["duration_s"] for s in timed]))
        own = float(np.median([s["startup_s"] for s in timed]))
        phases = {p: float(np.median([s["startup"][p] for s in timed])) for p in OWN_PHASES}
        top = max(phases, key=phases.get)
        spread = (f"{len(timed)} saves, the median's {coverage:.0%} interval {low:.0%}–{high:.0%}" if len(timed) > 1
                  else "one save")
        out.append(diagnosis(
            "writer-startup", producer_of(procs, group),
            f"the writer's own start-up ({_WINDOW}) held the median "
            f"save up for {float(np.median(held)):.3f} s of {duration:.3f} s, {share:.0%} of it ({spread}); its "
            f"phases took {own:.3f} s, most of it in {top} ({phases[top]:.3f} s)",
            {"critical_s": float(np.median(held)), "startup_s": own, "save_s": duration, "share": share,
             "share_low": low, "share_high": high, "interval_coverage": coverage, "phases_s": phases,
             "first_chunk_s": _first_chunk(timed),
             "saves": len(timed), "start_method": timed[0]["start_method"]}, cost_s=sum(held)))
    return out


def _first_chunk(saves: list[dict]) -> float | None:
    """The median wait for the first chunk over the saves that measured it:
    a writer whose gets no hook saw reads 0 there (its first write or send
    ends its start-up), not measured, so None."""
    measured = [s["startup"]["first_chunk"] for s in saves if s["get_wait_s"] is not None]
    return float(np.median(measured)) if measured else None


@emits(Code("main-reimport", (WARNING,),
            f"the children's re-run of the parent's __main__ is ≥ {REIMPORT_SHARE:.0%} of the save time on the "
            f"critical path: a heavy entry script paid once per writer"))
def main_reimport(run, procs, saves):
    out = []
    by_id = {p["id"]: p for p in procs}
    for group in per_producer(saves):
        reran = [s for s in group if s["startup"].get("main_rerun")]
        if not reran:
            continue
        per_writer = float(np.mean([s["startup"]["main_rerun"] for s in reran]))
        cost = sum(s["critical_path"].get("startup:main_rerun", 0.0) for s in reran)
        total = sum(s["duration_s"] for s in reran)
        if cost / total < REIMPORT_SHARE:
            continue
        writer = by_id[reran[0]["writer"]]
        out.append(diagnosis(
            "main-reimport", producer_of(procs, group),
            f"every {reran[0]['start_method']} writer re-runs the parent's __main__ before its target: "
            f"{per_writer:.3f} s per writer, {cost / len(reran):.3f} s per save on the critical path "
            f"({cost:.2f} s in all, {cost / total:.0%} of the save time; Python {writer['python']})",
            {"per_writer_s": per_writer, "critical_s": cost, "writers": len(reran),
             "python": writer["python"], "start_method": reran[0]["start_method"],
             "main": _main_path(run, reran[0])}, cost_s=cost))
    return out


@emits(Code("fork-with-threads", (WARNING, INFO),
            "a writer was forked while other threads were live: a lock one of them held stays locked in the "
            "child, a deadlock hazard (warning for Python threads, info when only native ones, a BLAS pool say)"))
def fork_with_threads(run, procs, saves):
    out = []
    by_id = {p["id"]: p for p in procs}
    forked = {(s["producer"]) for s in saves if s["start_method"] == "fork"}
    for row in forked:
        for kind, data in index(run).events[row]:
            if kind == "fork" and (data.get("native_threads") or 0) > 1:
                proc = by_id[row]
                # Python threads hold Python-level locks (logging, I/O buffers) that
                # nothing resets in the child; a native pool (BLAS) usually has
                # its own at-fork handlers: a hazard worth knowing, not a warning.
                severity = WARNING if (data.get("python_threads") or 0) > 1 else INFO
                native = forkthreads.native_names(data)
                named = f", and native ones run by no Python Thread ({forkthreads.describe(native)})" if native else ""
                out.append(diagnosis(
                    "fork-with-threads", proc,
                    f"producer pid {proc['pid']} forked a writer with {data['native_threads']} live threads "
                    f"(the kernel's count), {data.get('python_threads')} of them Python's "
                    f"({', '.join(data.get('threads') or [])}){named}: a lock another thread held at the fork "
                    f"stays locked in the child (a deadlock hazard for writers that use thread-based storage "
                    f"libraries)",
                    {"native_threads": data["native_threads"], "python_threads": data.get("python_threads"),
                     "threads": data.get("threads"), "forking_thread": data.get("forking_thread"),
                     "native_only": data.get("native_only")},
                    severity=severity))
                break
    return out


def _main_path(run, save) -> str | None:
    for kind, data in index(run).events[save["writer"]]:
        if kind == "main_rerun":
            return data.get("path") or data.get("module")
    return None
