"""Start-up: the writer's way from Process.start() to its first write, the
re-run of the parent's __main__, and forking with live threads."""

from __future__ import annotations

import numpy as np

from writerprof.analysis.diagnoses.base import INFO, WARNING, Code, diagnosis, emits, per_producer, producer_of
from writerprof.analysis.saves import index

# writer-startup: Process.start() to first write, as a share of the save.
STARTUP_SHARE = 0.20
# main-reimport: the re-run of __main__ on the critical path, share of the save time.
REIMPORT_SHARE = 0.02


@emits(Code("writer-startup", (WARNING,),
            f"Process.start() to the writer's first write is ≥ {STARTUP_SHARE:.0%} of the save; broken into "
            f"phases, its cost is its time on the critical path"))
def writer_startup(run, procs, saves):
    out = []
    for group in per_producer(saves):
        timed = [s for s in group if s["startup_s"] is not None and s["duration_s"] > 0]
        if not timed:
            continue
        startup = float(np.mean([s["startup_s"] for s in timed]))
        duration = float(np.mean([s["duration_s"] for s in timed]))
        if startup / duration < STARTUP_SHARE:
            continue
        phases = {p: float(np.mean([s["startup"][p] for s in timed])) for p in timed[0]["startup"]}
        cost = sum(s["critical_path"][c] for s in timed for c in s["critical_path"] if c.startswith("startup:"))
        top = max(phases, key=phases.get)
        out.append(diagnosis(
            "writer-startup", producer_of(procs, group),
            f"writer start-up (Process.start() to first write) takes {startup:.3f} s of a {duration:.3f} s "
            f"save ({startup / duration:.0%}), most of it in {top} ({phases[top]:.3f} s); "
            f"{cost / len(timed):.3f} s per save on the critical path",
            {"startup_s": startup, "save_s": duration, "phases_s": phases, "saves": len(timed),
             "start_method": timed[0]["start_method"]}, cost_s=cost))
    return out


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
                out.append(diagnosis(
                    "fork-with-threads", proc,
                    f"producer pid {proc['pid']} forked a writer with {data['native_threads']} live native "
                    f"threads, {data.get('python_threads')} of them Python's ({', '.join(data.get('threads') or [])}): "
                    f"a lock another thread held at the fork stays locked in the child (a deadlock hazard "
                    f"for writers that use thread-based storage libraries)",
                    {"native_threads": data["native_threads"], "python_threads": data.get("python_threads"),
                     "threads": data.get("threads"), "forking_thread": data.get("forking_thread")},
                    severity=severity))
                break
    return out


def _main_path(run, save) -> str | None:
    for kind, data in index(run).events[save["writer"]]:
        if kind == "main_rerun":
            return data.get("path") or data.get("module")
    return None
