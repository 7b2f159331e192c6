"""Why B's saves take a different time from A's: the difference in mean save
time cut into the critical-path components, which add up to it exactly with
the unexplained remainder; then what differs in placement and in the
kernel's counts, and a verdict naming the largest cause with its number.

Each side is one or more run summaries (contrast's repeats): their saves are
pooled, and matched by their order within each producer for the per-save table.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from writerprof.analysis.processes import mean_shares
from writerprof.analysis.saves import COMPONENTS, STARTUP_PHASES
from writerprof.analysis.shapes import Comparison, Summary
from writerprof.run import roles as run_roles

SCHEMA = "writerprof.compare/1"

# Each component's name in a table.
LABELS = {
    "setup": "setup (buffers)", "startup:start": "start-up: start",
    "startup:interpreter": "start-up: interpreter", "startup:main_rerun": "start-up: __main__ re-run",
    "startup:unpickle": "start-up: unpickle", "startup:bootstrap": "start-up: bootstrap",
    "startup:target_setup": "start-up: target setup", "generation": "generation",
    "queue": "queue (both sides waiting)", "write": "write", "fadvise": "fadvise", "fsync": "fsync",
    "close": "close", "teardown": "teardown (writer exit, cleanup)",
}
# What each component is, for sentences.
DESCRIPTIONS = {
    "setup": "setting up the buffers before the writer starts",
    "startup:start": "starting the writer process",
    "startup:interpreter": "the writer's interpreter start-up",
    "startup:main_rerun": "the writer re-running the parent's __main__ at start-up",
    "startup:unpickle": "the writer unpickling its Process (importing the target's module)",
    "startup:bootstrap": "multiprocessing's bootstrap in the writer",
    "startup:target_setup": "the writer attaching its buffers and opening its file",
    "generation": "data generation",
    "queue": "chunks crossing the queue",
    "write": "the writer's writes",
    "fadvise": "posix_fadvise calls",
    "fsync": "the final fsync",
    "close": "closing the file",
    "teardown": "the writer's exit and the save's cleanup",
}


def side(summaries: list[dict]) -> dict:
    saves = [s for summary in summaries for s in summary["saves"]]
    procs = [p for summary in summaries for p in summary["processes"]]
    n = len(saves)
    mean = {c: _mean([s["critical_path"][c] for s in saves]) for c in COMPONENTS}
    mean_save = _mean([s["duration_s"] for s in saves])
    nbytes = sum(s["bytes"] for s in saves)
    total_s = sum(s["duration_s"] for s in saves)
    writers = [p for p in procs if p["role"] == run_roles.WRITER]
    producers = [p for p in procs if p["role"] == run_roles.PRODUCER]
    return {
        "runs": [summary["run"]["path"] for summary in summaries],
        "start_methods": sorted({m for summary in summaries for m in summary["run"]["start_methods"]}),
        "python": sorted({v for summary in summaries for v in summary["run"]["python"]}),
        "saves": n,
        "mean_save_s": mean_save,
        "bytes_per_save": nbytes / n if n else 0,
        "gib_s": nbytes / total_s / 2**30 if total_s else None,
        "components": mean,
        "unexplained_s": _mean([s["unexplained_s"] for s in saves]),
        "startup": {p: _mean([s["startup"].get(p, 0.0) for s in saves if s["startup"]]) for p in STARTUP_PHASES},
        "per_save": _by_order(saves),
        "per_rank": _by_rank(saves),
        "aggregate_gib_s": _mean([s["aggregate"]["mean_gib_s"] for s in summaries
                                  if s.get("aggregate", {}).get("mean_gib_s") is not None]) or None,
        "placement": {
            "writer_cpus": _distinct(p["allowed_cpus"] for p in writers),
            "producer_cpus": _distinct(p["allowed_cpus"] for p in producers),
            "writer_nodes": mean_shares(p["worked_nodes"] for p in writers),
            "buffer_nodes": mean_shares(p["buffer_nodes"] for p in producers),
            "writer_parent": _distinct(_parent_role(summary["processes"], p) for summary in summaries
                                       for p in summary["processes"] if p["role"] == run_roles.WRITER),
        },
        "kernel": {
            "writer_faults_per_gib": _per_gib(sum(p["minflt"] or 0 for p in writers), nbytes),
            "producer_faults_per_gib": _per_gib(sum(p["minflt"] or 0 for p in producers), nbytes),
            "writer_switches_per_save": sum(p["nonvoluntary_switches"] or 0 for p in writers) / n if n else None,
            "producer_switches_per_save":
                sum(p["nonvoluntary_switches"] or 0 for p in producers) / n if n else None,
        },
        "diagnoses": sorted({d["code"] for summary in summaries for d in summary["diagnoses"]
                             if d["severity"] == "warning"}),
        "main": next((d["evidence"].get("main") for summary in summaries for d in summary["diagnoses"]
                      if d["code"] == "main-reimport"), None),
    }


def compare(a: list[Summary], b: list[Summary], names: tuple[str, str] | None = None) -> Comparison:
    """names: what to call A and B (default: their start methods)."""
    A, B = side(a), side(b)
    for one, name in zip((A, B), names or (None, None)):
        one["name"] = name or "/".join(one["start_methods"]) or "these"
    if not A["saves"] or not B["saves"]:
        empty = "A" if not A["saves"] else "B"
        raise ValueError(f"run {empty} has no saves to compare")
    difference = B["mean_save_s"] - A["mean_save_s"]
    components = []
    for name in COMPONENTS:
        diff = B["components"][name] - A["components"][name]
        components.append({"name": name, "label": LABELS[name], "description": DESCRIPTIONS[name], "a_s": A["components"][name],
                           "b_s": B["components"][name], "diff_s": diff,
                           "share": diff / difference if difference else None})
    unexplained = B["unexplained_s"] - A["unexplained_s"]
    per_save = []
    for index in sorted(set(A["per_save"]) & set(B["per_save"])):
        sa, sb = A["per_save"][index], B["per_save"][index]
        per_save.append({"save": index, "a_s": sa["duration_s"], "b_s": sb["duration_s"],
                         "diff_s": sb["duration_s"] - sa["duration_s"],
                         "components": {c: sb["components"][c] - sa["components"][c] for c in COMPONENTS}})
    per_rank = []
    for rank in sorted(set(A["per_rank"]) & set(B["per_rank"])):
        ra, rb = A["per_rank"][rank], B["per_rank"][rank]
        diffs = {c: rb["components"][c] - ra["components"][c] for c in COMPONENTS}
        top = max(diffs, key=lambda c: abs(diffs[c]))
        per_rank.append({"rank": rank, "a_s": ra["duration_s"], "b_s": rb["duration_s"],
                         "diff_s": rb["duration_s"] - ra["duration_s"], "top": top, "top_s": diffs[top]})
    return {
        "schema": SCHEMA,
        "a": A,
        "b": B,
        "per_rank": per_rank,
        "throughput": {"a_gib_s": A["gib_s"], "b_gib_s": B["gib_s"],
                       "change": B["gib_s"] / A["gib_s"] - 1 if A["gib_s"] and B["gib_s"] else None},
        "difference_s": difference,
        "components": components,
        "unexplained_s": unexplained,
        "per_save": per_save,
        "verdict": verdict(A, B, difference, components),
    }


def verdict(A, B, difference, components) -> str:
    a_name, b_name = A["name"], B["name"]
    change = B["gib_s"] / A["gib_s"] - 1 if A["gib_s"] and B["gib_s"] else None
    rate = f" ({change:+.0%} throughput)" if change is not None else ""
    if abs(difference) < 0.01 * A["mean_save_s"]:
        return f"{b_name} and {a_name} saves take the same time within 1% ({A['mean_save_s']:.3f} s vs {B['mean_save_s']:.3f} s)."
    slower = difference > 0
    top = max(components, key=lambda c: c["diff_s"] if slower else -c["diff_s"])
    what = top["description"]
    if top["name"] == "startup:main_rerun" and (B["main"] or A["main"]):
        what += f" ({(B['main'] or A['main']).rsplit('/', 1)[-1]})"
    text = (f"{b_name} saves are {abs(difference):.2f} s {'slower' if slower else 'faster'} than {a_name}"
            f"{rate}; {abs(top['diff_s']):.2f} s of that ({top['diff_s'] / difference:.0%}) is {what}.")
    second = sorted(components, key=lambda c: -c["diff_s"] if slower else c["diff_s"])[1]
    if second["diff_s"] / difference >= 0.15:
        text += f" Next: {second['description']}, {abs(second['diff_s']):.2f} s ({second['diff_s'] / difference:.0%})."
    # A cause larger than the whole difference: something went the other way.
    against = sorted(components, key=lambda c: c["diff_s"] if slower else -c["diff_s"])[0]
    if -against["diff_s"] / difference >= 0.15:
        text += (f" Partly offset by {against['description']}, {against['diff_s']:+.2f} s "
                 f"({'faster' if slower else 'slower'} in {b_name}).")
    return text


def _mean(values) -> float:
    values = list(values)
    return float(np.mean(values)) if values else 0.0


def _by_order(saves) -> dict[int, dict]:
    """Save index (its order within its producer) -> mean duration and components."""
    groups = defaultdict(list)
    for s in saves:
        groups[s["save"]].append(s)
    return {i: {"duration_s": _mean([s["duration_s"] for s in g]),
                "components": {c: _mean([s["critical_path"][c] for s in g]) for c in COMPONENTS}}
            for i, g in groups.items()}


def _by_rank(saves) -> dict[int, dict]:
    """Rank -> its mean save time and components (ranks of MPI runs; a run
    without MPI has the one rank -1)."""
    groups = defaultdict(list)
    for s in saves:
        groups[s["rank"]].append(s)
    return {rank: {"duration_s": _mean([s["duration_s"] for s in g]),
                   "components": {c: _mean([s["critical_path"][c] for s in g]) for c in COMPONENTS}}
            for rank, g in groups.items()}


def _distinct(values) -> list:
    out = []
    for v in values:
        if v not in out:
            out.append(v)
    return out


def _parent_role(procs, writer) -> str | None:
    """The role of the process that started the writer (ids are rows of one run)."""
    parent = procs[writer["parent"]] if writer["parent"] is not None else None
    return parent["role"] if parent else None


def _per_gib(count, nbytes) -> float | None:
    return count / (nbytes / 2**30) if nbytes else None
