"""A save that stalled: record --stall took a snapshot (writerprof.analysis.stalls
names the waits in it)."""

from __future__ import annotations

from writerprof.analysis import stalls
from writerprof.analysis.diagnoses.base import INFO, WARNING, Code, diagnosis, emits

SAID = 6  # of a snapshot's lines, those the message holds (the report's stalls section has them all)


@emits(Code("stall", (WARNING, INFO),
            f"no save progressed for record --stall's time while CMD ran; a snapshot names the waits, who feeds "
            f"or holds them, deadlocks, spinners (runnable ≥ {stalls.SPIN_SHARE:.0%}): a warning if deadlocked, "
            f"all waiting or spinning on failing calls, else info"))
def stalled(run, procs, saves):
    out = []
    rows = {p["id"]: p for p in procs}
    for snapshot in stalls.snapshots(run, procs)["snapshots"]:
        says = snapshot["says"] or ["no process it holds was seen waiting or spinning"]
        named = [e for e in snapshot["processes"] if e["named"]]
        first = next((e for e in named if e["role"] == "writer"), named[0] if named else None)
        more = f"; and {len(says) - SAID} more (the report's stalls section)" if len(says) > SAID else ""
        stuck = _stuck(snapshot, named)
        busy = "" if stuck else (": processes ran on a CPU without failing calls, as a computation between saves "
                                 "does (or a livelock whose failing calls no hook saw); a longer --stall skips it")
        out.append(diagnosis(
            "stall", rows.get(first["id"]) if first else None,
            f"no save made progress for {snapshot['stalled_s']:.1f} s on {snapshot['host']} (snapshot at "
            f"{snapshot['at_s']:.1f} s){busy}: " + "; ".join(says[:SAID]) + more,
            {"host": snapshot["host"], "at_s": snapshot["at_s"], "stalled_s": snapshot["stalled_s"],
             "stall_s": snapshot["stall_s"], "processes": len(snapshot["processes"]),
             "waiting": [e["pid"] for e in named if not e["spins"]],
             "spinning": snapshot["spinning"], "deadlocks": snapshot["deadlocks"]},
            severity=WARNING if stuck else INFO))
    return out


def _stuck(snapshot: dict, named: list[dict]) -> bool:
    """Whether the snapshot shows a save that cannot go on: a deadlock; the
    named processes all waiting, none on a CPU; or spinning on calls that
    fail (the journal's failed unlinks). Processes on a CPU otherwise may be
    computing: a model's steps between checkpoints look the same."""
    if snapshot["deadlocks"]:
        return True
    spinning = [e for e in snapshot["processes"] if e["spins"]]
    if spinning:
        return any((e["last_op"] or {}).get("failed_unlinks") for e in spinning)
    return bool(named)
