"""Why B's saves take a different time from A's: the difference in mean save
time cut into the critical-path components, which add up to it exactly with
the unexplained remainder; then what differs in placement and in the
kernel's counts, and a verdict of three lines at most (the difference with
its interval, the top cause with its share, the best fix with what it
recovers), its details after it under headings.

Each side is one or more run summaries (contrast's repeats): their saves are
pooled, and matched by their order within each producer for the per-save table.

Every component carries a 95% interval (the components' hold at 95%
together, not each alone) and its own duration (its hooked calls' total)
beside its critical-path seconds. Where both sides have several runs the
interval is the bootstrap's (analysis.intervals: repeats resampled, and the
saves within them); where a side has one run, the run-to-run spread's
(analysis.noise.run_intervals: a run taken to vary as much as one of its
saves does), since the saves of one run leave out how much runs vary, and
within it the verdict names no cause but the runs a side that would resolve
the difference. The start-up phases are also read together, as one part.
The verdict names as causes only the significant parts (interval clear of
zero, and not negligible) of a difference told from the noise; its details
word a component whose critical-path seconds fell while its own duration
did not as overlapping the cause, not as faster; and it says when the whole
difference is within the noise (analysis.noise). Every figure in it says
whether it is per save.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from writerprof.analysis import fixes, intervals, noise as run_noise
from writerprof.analysis.ending import complete
from writerprof.analysis.processes import mean_shares
from writerprof.analysis.saves import COMPONENTS, STARTUP_PHASES
from writerprof.run import roles as run_roles

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes import Comparison, Summary

SCHEMA = "writerprof.compare/1"

# Each component's name in a table.
LABELS = {
    "setup": "setup (buffers)", "startup:start": "start-up: start",
    "startup:interpreter": "start-up: interpreter", "startup:main_rerun": "start-up: __main__ re-run",
    "startup:unpickle": "start-up: unpickle", "startup:bootstrap": "start-up: bootstrap",
    "startup:target_setup": "start-up: target setup", "generation": "generation",
    "queue": "queue (both sides waiting)", "write": "write", "fadvise": "fadvise", "fsync": "fsync",
    "close": "close", "teardown": "teardown (writer exit, cleanup)", "startup": "start-up, its phases together",
}
# What each component is, for sentences.
DESCRIPTIONS = {
    "setup": "setting up the buffers before the writer starts",
    "startup:start": "starting the writer process",
    "startup:interpreter": "the writer's interpreter start-up",
    "startup:main_rerun": "the writer re-running the parent's __main__ at start-up",
    "startup:unpickle": "the writer unpickling its Process (importing the target's module)",
    "startup:bootstrap": "multiprocessing's bootstrap in the writer",
    # (what it sets up is the target's: buffers attached, a file opened, an S3 client made)
    "startup:target_setup": "the writer's own set-up before its first chunk or byte out",
    "generation": "data generation",
    "queue": "chunks crossing the queue",
    "write": "the writer's writes or uploads",
    "fadvise": "posix_fadvise calls",
    "fsync": "the final fsync",
    "close": "closing the file",
    "teardown": "the writer's exit and the save's cleanup",
    "startup": "the writer's start-up, its phases together",
}
# A component's own duration: the save's field of its hooked calls (start-up
# phases: their span); setup, queue and teardown have none of their own.
OWN = {"generation": "gen_s", "write": "write_s", "fadvise": "fadvise_s", "fsync": "fsync_s", "close": "close_s",
       **{c: c.split(":", 1)[1] for c in COMPONENTS if c.startswith("startup:")}}
# Differences too small to name as a cause, whatever their interval: below
# both a millisecond and this share of A's mean save.
NEGLIGIBLE_S = 0.001
NEGLIGIBLE_SHARE = 0.01
# A component whose critical-path seconds fell by x overlapped (rather than
# sped up) when its own duration fell by less than this share of x.
OVERLAP_SHARE = 0.5
# Shares below this are not named in the verdict (next causes, offsets, noise).
NAMED_SHARE = 0.05
# The start-up phases as one part as well: the critical path moves a writer's
# start-up between its phases (the producer stalls in whichever it waits
# through), so their sum varies less than each. Named where no phase alone is.
STARTUP = "startup"
STARTUP_PARTS = tuple(c for c in COMPONENTS if c.startswith("startup:"))


def side(summaries: list[dict]) -> dict:
    saves = [s for summary in summaries for s in complete(summary["saves"])]
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
        "own": {c: _measured_mean([_own(s, c) for s in saves]) if c in OWN else None for c in COMPONENTS},
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
        "fix": _fixes(d for summary in summaries for d in summary["diagnoses"]),
    }


def _measured_mean(values: list) -> float | None:
    """The mean of the saves that measured it (None: a phase no hook saw), None if none did."""
    measured = [v for v in values if v is not None]
    return float(np.mean(measured)) if measured else None


def _own(save: dict, component: str) -> float | None:
    key = OWN[component]
    return save["startup"].get(key, 0.0) if component.startswith("startup:") else save[key]


def _fixes(diagnoses) -> list[dict]:
    """The warnings' fixes, each action once, tagged with its warning's code.
    One action (by its id) of several runs or ranks, whose numbers differ, is
    one: the first's text, the mean of their recoveries."""
    kept: dict[tuple, dict] = {}
    recoveries: dict[tuple, list] = defaultdict(list)
    for d in diagnoses:
        for action in d.get("fix") or []:
            key = (d["code"], action["id"])
            kept.setdefault(key, {"code": d["code"], **action})
            if action["recovery_s"] is not None:
                recoveries[key].append(action["recovery_s"])
    return [{**f, "recovery_s": _mean(recoveries[key]) if recoveries[key] else None} for key, f in kept.items()]


# The columns of a save resampled for the intervals: the components, the
# unexplained rest, the save's time, the start-up phases together, then the
# components' own durations.
_OWN_COLUMNS = tuple(c for c in COMPONENTS if c in OWN)
_SAVE_AT, _STARTUP_AT = len(COMPONENTS) + 1, len(COMPONENTS) + 2


def _matrix(summary: dict) -> np.ndarray:
    return np.array([[s["critical_path"][c] for c in COMPONENTS]
                     + [s["unexplained_s"], s["duration_s"], sum(s["critical_path"][c] for c in STARTUP_PARTS)]
                     + [_own(s, c) for c in _OWN_COLUMNS] for s in complete(summary["saves"])],
                    dtype=float).reshape(-1, len(COMPONENTS) + 3 + len(_OWN_COLUMNS))


def _sizes(summary: dict) -> np.ndarray:
    return np.array([s["bytes"] for s in complete(summary["saves"])])


def compare(a: list[Summary], b: list[Summary], names: tuple[str, str] | None = None) -> Comparison:
    """names: what to call A and B (default: their start methods)."""
    A, B = side(a), side(b)
    for one, name in zip((A, B), names or (None, None)):
        one["name"] = name or "/".join(one["start_methods"]) or "these"
    if A["name"] == B["name"]:  # "fork saves are slower than fork" says nothing of which
        A["name"], B["name"] = f"A ({A['name']})", f"B ({B['name']})"
    if not A["saves"] or not B["saves"]:
        empty = "A" if not A["saves"] else "B"
        raise ValueError(f"run {empty} has no saves to compare")
    difference = B["mean_save_s"] - A["mean_save_s"]
    # The parts' intervals hold together (each is read as a cause or not); the save's alone.
    together = list(range(len(COMPONENTS))) + [_STARTUP_AT]
    if len(a) > 1 and len(b) > 1:
        spread = [None] * (_STARTUP_AT + 1)
        ci = intervals.difference_intervals([_matrix(x) for x in a], [_matrix(x) for x in b], together=together)
    else:
        spread = run_noise.run_intervals([_matrix(x) for x in a], [_sizes(x) for x in a],
                                         [_matrix(x) for x in b], [_sizes(x) for x in b], _SAVE_AT, together)
        ci = [r["ci95_s"] if r is not None else None for r in spread]
    floor = max(NEGLIGIBLE_S, NEGLIGIBLE_SHARE * A["mean_save_s"])
    components = [_part(name, A["components"][name], B["components"][name], A["own"][name], B["own"][name],
                        ci[i], spread[i], floor, difference) for i, name in enumerate(COMPONENTS)]
    startup = _part(STARTUP, sum(A["components"][c] for c in STARTUP_PARTS),
                    sum(B["components"][c] for c in STARTUP_PARTS), None, None, ci[_STARTUP_AT],
                    spread[_STARTUP_AT], floor, difference)
    total_sig = intervals.excludes_zero(ci[_SAVE_AT])
    total = {"ci95_s": list(ci[_SAVE_AT]) if ci[_SAVE_AT] is not None else None,
             "significant": total_sig and abs(difference) >= floor if total_sig is not None else None}
    noise = run_noise.noise(a, b, difference, (A["name"], B["name"]), spread[_SAVE_AT])
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
    causes, fix = _causes_and_fix(A, B, difference, components, startup, noise)
    result = {
        "schema": SCHEMA,
        "a": A,
        "b": B,
        "per_rank": per_rank,
        "throughput": {"a_gib_s": A["gib_s"], "b_gib_s": B["gib_s"],
                       "change": B["gib_s"] / A["gib_s"] - 1 if A["gib_s"] and B["gib_s"] else None},
        "difference_s": difference,
        "components": components,
        "writer_startup": startup,
        "unexplained_s": unexplained,
        "total": total,
        "per_save": per_save,
        "noise": noise,
        "causes": [c["name"] for c in causes],
        "fix": fix,
    }
    result["verdict"] = verdict(result, fix)
    result["details"] = details(result)
    return result


def _part(name, a_s, b_s, own_a, own_b, ci, spread, floor, difference) -> dict:
    """A part of the difference (a component, or the start-up phases together) with its interval."""
    diff = b_s - a_s
    sig = intervals.excludes_zero(ci)
    return {"name": name, "label": LABELS[name], "description": DESCRIPTIONS[name], "a_s": a_s, "b_s": b_s,
            "diff_s": diff, "share": diff / difference if difference else None,
            "ci95_s": list(ci) if ci is not None else None,
            "significant": sig and abs(diff) >= floor if sig is not None else None,
            "a_own_s": own_a, "b_own_s": own_b,
            "own_diff_s": own_b - own_a if own_a is not None and own_b is not None else None,
            "runs_needed": _runs_needed(spread, diff)}


def _runs_needed(spread: dict | None, diff: float) -> int | None:
    """Runs a side for a part's run-to-run interval to resolve its difference (None: over repeats)."""
    if spread is None:
        return None
    return run_noise.needed(run_noise.pooled((spread["sd_a_s"], spread["sd_b_s"])), diff, spread["z"])


def _causes_and_fix(A, B, difference, components, startup, noise) -> tuple[list[dict], list[dict]]:
    """The causes (the significant parts in the difference's direction, largest first) and their fix."""
    # One run a side and the difference within the run-to-run spread: no cause, whatever a part shows.
    causes = [c for c in components + [startup]
              if c["significant"] and c["diff_s"] * difference > 0 and not _within(noise)]
    if any(c["name"] in STARTUP_PARTS for c in causes):  # the phases together only where none alone is named
        causes = [c for c in causes if c is not startup]
    causes.sort(key=lambda c: -abs(c["diff_s"]))
    slower = B if difference > 0 else A
    named = _named(causes)
    # The fixes of the warnings acting on a cause, each action once (the most specific warning's).
    fix, seen = [], set()
    for f in sorted(slower["fix"], key=lambda f: len(fixes.ACTS_ON.get(f["code"], ()))):
        if named & set(fixes.ACTS_ON.get(f["code"], ())) and f["id"] not in seen:
            seen.add(f["id"])
            fix.append(f)
    if "fork-with-threads" in A["diagnoses"] + B["diagnoses"]:
        fix = fixes.with_fork_hazard(fix)
    return causes, fixes.for_difference(fix, difference)  # none above the difference, none too small to show


def _within(noise) -> bool:
    """One run a side, and the difference within their run-to-run spread."""
    return noise["unit"] == "run" and noise["hides"]


def verdict(comparison: dict, fix: list[dict]) -> str:
    """At most three lines: the difference in mean save time with its
    interval, the top cause with its share, the best fix (fix's likeliest
    action that says what it recovers) with that. Where no cause is named,
    the second line says why, and what would tell."""
    c = comparison
    A, B, difference, noise = c["a"], c["b"], c["difference_s"], c["noise"]
    if abs(difference) < 0.01 * A["mean_save_s"]:
        return (f"{B['name']} and {A['name']} saves take the same time within 1%: {A['mean_save_s']:.3f} and "
                f"{B['mean_save_s']:.3f} s per save.")
    lines = [_difference(c)]
    causes = _cause_parts(c)
    if _within(noise):
        more = (f"more runs are needed; about {noise['needed']} runs a side would resolve it (95%, 80% power)"
                if noise["needed"] is not None else noise["message"])
        lines.append(f"No cause is named: {more}.")
    elif c["total"]["significant"] is False and not causes:
        lines.append("No cause is named" + (f": about {noise['needed']} repeats of each would resolve it (95%, 80% "
                                            f"power)" if noise["hides"] and noise["needed"] else "") + ".")
    elif not causes:
        lines.append(_no_part_clear(c))
    else:
        lines.append(_top_cause(c, causes[0]))
        if fix:
            lines.append(_best_fix(fix))
    return "\n".join(lines)


def _difference(c) -> str:
    """The verdict's first line: the difference in mean save time, its interval and the throughput's change."""
    A, B, difference, total = c["a"], c["b"], c["difference_s"], c["total"]
    said = [f"95% interval {_interval(total['ci95_s'])} s"] if total["ci95_s"] is not None else []
    change = c["throughput"]["change"]
    said += [f"throughput {change:+.0%}"] if change is not None else []
    text = (f"{B['name']} saves are {abs(difference):.2f} s {'slower' if difference > 0 else 'faster'} than "
            f"{A['name']}: {A['mean_save_s']:.3f} → {B['mean_save_s']:.3f} s per save")
    if _within(c["noise"]) and total["ci95_s"] is not None:
        text += ", within the run-to-run spread"
    elif total["significant"] is False:
        text += ", not distinguishable from noise"
    return text + (f" ({'; '.join(said)})" if said else "") + "."


def _top_cause(c, top) -> str:
    """The largest cause and its share of the difference; a share over 100%, with what offsets it."""
    difference = c["difference_s"]
    share = top["diff_s"] / difference
    said = f"{top['description']}{_main_said(top, c['a'], c['b'])}, {_signed(top['diff_s'])} s{_pm(top)} per save"
    if c["total"]["significant"] is False:  # a part clear of the noise, of a difference that is not
        return f"Clear of the noise though the difference is not: {said} (no share of a difference that is noise)."
    text = f"Top cause: {said}"
    if share <= 1:
        return text + f", {share:.0%} of the difference."
    named = _named([top])
    against = max((p for p in c["components"] if p["name"] not in named and p["diff_s"] * difference < 0),
                  key=lambda p: abs(p["diff_s"]), default=None)
    most = f", most of it {against['label']} {_signed(against['diff_s'])} s" if against is not None else ""
    return (text + f": more than all of the difference ({share:.0%}), as the other parts together went the "
                   f"other way by {_signed(difference - top['diff_s'])} s per save{most}.")


def _best_fix(fix: list[dict]) -> str:
    """The likeliest action that says what it recovers (the likeliest if none does)."""
    best = next((action for action in fix if action["recovery_s"] is not None), fix[0])
    recovers = fixes.recovery_text(best)
    of = f" (of {len(fix)}, below)" if len(fix) > 1 else " (below)"
    return f"Best fix{of}: {fixes.headline(best)}" + (f"; {recovers}" if recovers else "") + "."


def _no_part_clear(c) -> str:
    """No part is a cause though the difference is clear: with one run a side, the runs a side the largest
    part would need."""
    if c["noise"]["unit"] != "run":
        return "No single part of the save is distinguishable from noise: no cause is named."
    text = "No single part of the save is clear of the run-to-run spread"
    difference = c["difference_s"]
    largest = max((p for p in c["components"] if p["diff_s"] * difference > 0 and p["runs_needed"] is not None),
                  key=lambda p: abs(p["diff_s"]), default=None)
    if largest is None:
        return text + "."
    return text + f": about {largest['runs_needed']} runs a side would resolve the largest, {largest['label']}."


def _cause_parts(c) -> list[dict]:
    """The comparison's causes, as its parts (a component, or the start-up phases together)."""
    parts = {p["name"]: p for p in c["components"] + [c["writer_startup"]]}
    return [parts[name] for name in c["causes"]]


# The details' headings: each printed only where the run has lines for it (details).
OTHER_CAUSES, OFFSETS, CLEAR_EVEN_SO, NOISE, UNRESOLVED = (
    "Other causes", "Offsets", "Clear of the noise even so, offsetting each other", "Noise",
    "Not distinguishable from noise")
DETAIL_HEADINGS = (OTHER_CAUSES, OFFSETS, CLEAR_EVEN_SO, NOISE, UNRESOLVED)


def details(comparison: dict) -> list[dict]:
    """What the verdict leaves out, under headings ({"heading", "lines"},
    only those with lines): the other causes and the parts that went the
    other way; where the difference is noise, the parts clear of it even so;
    the noise (unless the verdict says it all); the parts of some size not
    distinguishable from noise. Within one run a side's spread, the noise
    alone: no part is told from it."""
    c = comparison
    causes, noise = _cause_parts(c), c["noise"]
    sections = []
    if c["total"]["significant"] is False and not _within(noise):
        clear = sorted((p for p in c["components"] if p["significant"] and p not in causes[:1]),
                       key=lambda p: -abs(p["diff_s"]))
        sections.append((CLEAR_EVEN_SO,
                         [f"{p['description']}{_main_said(p, c['a'], c['b'])}: {_signed(p['diff_s'])} s{_pm(p)} "
                          f"per save" for p in clear]))
    elif not _within(noise):
        sections += [(OTHER_CAUSES, _other_causes(c, causes[1:])), (OFFSETS, _offsets(c, causes))]
    if noise["message"] and noise["message"] not in c["verdict"]:
        sections.append((NOISE, [noise["message"]]))
    if not _within(noise):
        sections.append((UNRESOLVED, _unresolved(c, causes)))
    return [{"heading": heading, "lines": lines} for heading, lines in sections if lines]


def _other_causes(c, others) -> list[str]:
    difference = c["difference_s"]
    return [f"{p['description']}{_main_said(p, c['a'], c['b'])}: {_signed(p['diff_s'])} s{_pm(p)} per save, "
            f"{p['diff_s'] / difference:.0%} of the difference" for p in others
            if p["diff_s"] / difference >= NAMED_SHARE]


def _offsets(c, causes) -> list[str]:
    """The significant components that went the other way: an overlap when
    their own duration did not fall with their critical-path seconds."""
    difference = c["difference_s"]
    slower_name = c["b"]["name"] if difference > 0 else c["a"]["name"]
    against = [p for p in c["components"] if p["significant"] and p["diff_s"] * difference < 0
               and abs(p["diff_s"] / difference) >= NAMED_SHARE]
    overlapped_with = _overlap_partner(causes)
    lines = []
    for p in sorted(against, key=lambda p: -abs(p["diff_s"])):
        # Seconds off the slower side's critical path, and how much its own time fell there.
        off = -p["diff_s"] if difference > 0 else p["diff_s"]
        own_fell = (-p["own_diff_s"] if difference > 0 else p["own_diff_s"]) if p["own_diff_s"] is not None else None
        own = (f"; its own time {p['a_own_s']:.2f} → {p['b_own_s']:.2f} s per save"
               if p["a_own_s"] is not None and p["b_own_s"] is not None else "")
        said = f"{p['description']}, {_signed(p['diff_s'])} s{_pm(p)} per save on the critical path"
        if own_fell is not None and own_fell < OVERLAP_SHARE * off and overlapped_with:
            lines.append(f"{said}: it overlapped {overlapped_with} in {slower_name}{own} (off the critical "
                         f"path, not faster)")
        elif own_fell is not None and own_fell >= OVERLAP_SHARE * off:
            lines.append(f"{said}: faster in {slower_name}{own}")
        else:
            lines.append(f"{said}: less of it on {slower_name}'s critical path{own}")
    return lines


def _overlap_partner(causes) -> str | None:
    """What an offset overlapped: the largest cause, start-up phases as the writer's start-up."""
    if not causes:
        return None
    top = causes[0]["name"]
    return "the writer's start-up" if top.startswith(STARTUP) else DESCRIPTIONS[top]


def _named(causes) -> set[str]:
    """The components the causes name: the start-up phases where they are named together."""
    named = {c["name"] for c in causes}
    return named | set(STARTUP_PARTS) if STARTUP in named else named


def _unresolved(c, causes) -> list[str]:
    """The components of some size that are not significant."""
    named, difference = _named(causes), c["difference_s"]
    noisy = [p for p in c["components"] if p["name"] not in named and not p["significant"]
             and p["ci95_s"] is not None and abs(p["diff_s"]) >= NAMED_SHARE * abs(difference)]
    return [f"{p['label']} {_signed(p['diff_s'])} s{_pm(p)} per save"
            for p in sorted(noisy, key=lambda p: -abs(p["diff_s"]))]


def _main_said(c, A, B) -> str:
    """The __main__ re-run's script, by name (the fix says where it is)."""
    main = B["main"] or A["main"]
    return f" ({main.rsplit('/', 1)[-1]})" if c["name"] == "startup:main_rerun" and main else ""


def _half(ci) -> float:
    return (ci[1] - ci[0]) / 2


def _signed(value: float) -> str:
    return f"{value:+.2f}" if abs(value) >= 0.01 else f"{value:+.3f}"


def _digits(half: float) -> str:
    return f"{half:.2f}" if half >= 0.01 else f"{half:.3f}"


def _pm(c) -> str:
    return f" ±{_digits(_half(c['ci95_s']))}" if c["ci95_s"] is not None else ""


def _interval(ci) -> str:
    """An interval in seconds, to the digits its ends need."""
    digits = 2 if max(abs(ci[0]), abs(ci[1])) >= 0.1 else 3
    return f"{ci[0]:+.{digits}f} to {ci[1]:+.{digits}f}"


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
