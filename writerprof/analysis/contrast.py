"""A contrast of start methods: which what-ifs the plain forkserver
recording shows cannot change anything, the advice the what-ifs that run an
action of its fix are to run (its modules), and the `writerprof.contrast/1`
result: every method against the reference, and what each what-if won back
of what plain forkserver lost, with its interval."""

from __future__ import annotations

from typing import TYPE_CHECKING

from writerprof.analysis.ending import complete

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes import ContrastResult, Diagnosis, Summary, WhatIf

SCHEMA = "writerprof.contrast/1"
# A what-if: the start method it runs under, and the probe's switch (MITIGATE_ENV) it sets.
WHAT_IFS = {"forkserver+preload": ("forkserver", "preload"), "forkserver+guard": ("forkserver", "guard"),
            "forkserver+pin": ("forkserver", "pin"), "forkserver+local": ("forkserver", "local"),
            "forkserver+first-touch": ("forkserver", "first-touch")}
# The what-ifs that run an action of the plain forkserver recording's fix (the
# one fixes.MEASURED_BY says they measure), with exactly its modules.
ADVISED = ("forkserver+preload", "forkserver+guard")
# The placement what-ifs: they need a second node to place anything on.
PLACEMENT_WHAT_IFS = ("forkserver+local", "forkserver+first-touch")
# A placement warning's cost: what the what-ifs removing its cause won back, the first run of these.
COST_FROM = {"numa-mismatch": ("forkserver+local", "forkserver+first-touch"),
             "affinity-divergence": ("forkserver+pin", "forkserver+local")}
# The recording the what-ifs are judged on, and measured against.
PLAIN = "forkserver"


def cannot_apply(forkserver: Summary, methods: list[str]) -> dict[str, str]:
    """The what-ifs among methods that the plain forkserver recording shows
    would change nothing, or that it gives nothing to run: {method: why, in a
    sentence}."""
    from writerprof.analysis.fixes import MINOR_SHARE  # here: see result()

    reasons = {}
    saves = complete(forkserver["saves"])
    advised = advice(forkserver)
    reran = any(s["startup"].get("main_rerun") for s in saves)
    for method in (m for m in ADVISED if m in methods and m not in advised):
        if not reran:
            python = ", ".join(forkserver["run"]["python"])
            reasons[method] = (f"the forkserver writers did not re-run __main__ (Python {python}): nothing to "
                               f"{'preload' if method.endswith('preload') else 'guard'} away")
        elif method.endswith("preload"):
            reasons[method] = ("the fix of the forkserver recording advises no set_forkserver_preload here (the "
                               "re-run imports no module worth preloading, or the run's list holds them already)")
        else:
            reasons[method] = (f"the fix of the forkserver recording names no import to move: none costs "
                               f"{MINOR_SHARE:.0%} of the writers' re-run of __main__ in their stacks")
    if "forkserver+pin" in methods and not any(d["code"] == "affinity-divergence" for d in forkserver["diagnoses"]):
        reasons["forkserver+pin"] = "the forkserver writers already had their producer's CPUs: nothing to pin"
    one_node = [host for host, t in forkserver["topology"].items() if len(t["nodes"]) < 2]
    if one_node and len(one_node) == len(forkserver["topology"]):
        for method in PLACEMENT_WHAT_IFS:
            if method in methods:
                reasons[method] = (f"{'this host has' if len(one_node) == 1 else 'every host has'} one NUMA node "
                                   f"({', '.join(one_node)}): there is no other node to put a writer or its "
                                   f"buffers on")
    return reasons


def advice(forkserver: Summary) -> dict[str, list[str]]:
    """What the ADVISED what-ifs are to run, from the plain forkserver
    recording's fix: method -> the modules of its action, where it has one."""
    from writerprof.analysis.fixes import MEASURED_BY  # here: see result()

    actions = {a["id"]: a["modules"] for d in forkserver["diagnoses"] for a in d.get("fix") or [] if a["modules"]}
    runs = {method: fix_id for fix_id, method in MEASURED_BY.items() if method in ADVISED}
    return {method: actions[runs[method]] for method in ADVISED if runs[method] in actions}


def placement_costs(forkserver: Summary, what_ifs: list[WhatIf]) -> list[Diagnosis]:
    """The plain forkserver recording's placement warnings with their cost_s:
    the seconds per save won back by the first what-if run that removes the
    cause (COST_FROM); None, and the message says how to measure it, where none ran."""
    from writerprof.analysis.diagnoses.placement import UNMEASURED  # here: see result()

    recovered = {w["method"]: w["recovered_s"] for w in what_ifs if w["ran"] and w["recovered_s"] is not None}
    out = []
    for d in forkserver["diagnoses"]:
        if d["code"] not in COST_FROM:
            continue
        method = next((m for m in COST_FROM[d["code"]] if m in recovered), None)
        cost = dict(d, cost_s=recovered.get(method), cost_from=method)
        if method is not None:
            cost["message"] = d["message"].split(UNMEASURED)[0] + f"; cost measured by {method}"
        out.append(cost)
    return out


def result(command: list[str], methods: list[str], repeat: int, runs: list[dict],
           skipped: dict[str, str], advised: dict[str, list[str]] | None = None) -> ContrastResult:
    """runs: {"method", "repeat", "path", "summary"} per recording, in the
    order recorded; skipped: the what-ifs not run, and why (cannot_apply);
    advised: the modules the ADVISED what-ifs ran with (advice)."""
    # Here, not at the top: the CLI reads WHAT_IFS to parse --methods, and starts without numpy.
    from writerprof.analysis.compare import compare, verdict

    sides = {m: [r["summary"] for r in runs if r["method"] == m] for m in methods if m not in skipped}
    reference = methods[0]
    comparisons = {m: compare(sides[reference], sides[m], (reference, m)) for m in sides if m != reference}
    # What plain forkserver lost against the reference: what a what-if can win back.
    lost = comparisons[PLAIN]["difference_s"] if PLAIN in comparisons else None
    what_ifs = [_what_if(method, comparisons.get(method), skipped.get(method), lost, sides,
                         (advised or {}).get(method)) for method in WHAT_IFS if method in methods]
    first = next(iter(comparisons.values()), None)
    plain = next((r["summary"] for r in runs if r["method"] == PLAIN), None)
    fix = _measured_fix(first, what_ifs, reference, comparisons.get(PLAIN)) if first is not None else []
    return {
        "schema": SCHEMA,
        "command": list(command),
        "methods": list(methods),
        "repeat": repeat,
        "runs": [{"method": r["method"], "repeat": r["repeat"], "path": r["path"],
                  "saves": r["summary"]["throughput"]["saves"], "gib_s": r["summary"]["throughput"]["gib_s"],
                  "world": r["summary"]["world"]} for r in runs],
        "comparisons": comparisons,
        "what_ifs": what_ifs,
        "noise": _noise(sides, comparisons),
        "fix": fix,
        "placement_costs": placement_costs(plain, what_ifs) if plain is not None else [],
        # The first comparison's, its best fix with what the what-ifs measured. Every method but the
        # reference not applicable (a placement what-if on one node): nothing to compare.
        "verdict": (verdict(first, fix) if first is not None else
                    "nothing to contrast: no method but the reference applies here (see what_ifs)"),
        "details": (first["details"] if first is not None else []) + _not_tested(skipped),
    }


def _noise(sides: dict, comparisons: dict) -> dict:
    """Each method's spread over its repeats, and the comparisons whose noise hides their effect."""
    from writerprof.analysis import noise

    return {"sides": {m: noise.spread(*noise.units(summaries, "repeat")) for m, summaries in sides.items()},
            "warnings": [f"{m}: {c['noise']['message']}" for m, c in comparisons.items() if c["noise"]["hides"]]}


def _measured_fix(first: dict, what_ifs: list, reference: str, plain: dict | None) -> list:
    """The first comparison's fix, with the recoveries the what-ifs measured
    (the reference's: all of plain forkserver's loss), none above the first
    comparison's difference."""
    from writerprof.analysis import fixes

    recovered = {w["method"]: {"recovered_s": w["recovered_s"], "ci95_s": w["recovered_ci95_s"],
                               "modules": w["modules"]} for w in what_ifs if w["recovered_s"] is not None}
    if plain is not None:
        recovered[reference] = {"recovered_s": plain["difference_s"], "ci95_s": plain["total"]["ci95_s"],
                                "modules": None}
    return fixes.for_difference(fixes.measured(first["fix"], recovered), first["difference_s"])


def _not_tested(skipped: dict[str, str]) -> list[dict]:
    """The what-ifs asked for that did not run, under their heading in the verdict's details."""
    return [{"heading": "Not tested", "lines": [f"{m}: {why}" for m, why in skipped.items()]}] if skipped else []


def _what_if(method: str, comparison, reason: str | None, lost: float | None, sides: dict,
             modules: list[str] | None) -> WhatIf:
    """comparison: the reference against this what-if (None: it is the
    reference, or was not run); sides: method -> its summaries."""
    entry: WhatIf = {"method": method, "ran": reason is None, "reason": reason, "gib_s": None,
                     "recovered_s": None, "recovered_ci95_s": None, "recovered_share": None,
                     "modules": list(modules) if method in ADVISED and modules is not None else None}
    if comparison is None:
        return entry
    entry["gib_s"] = comparison["throughput"]["b_gib_s"]
    if lost is not None:
        recovered = lost - comparison["difference_s"]
        entry.update(recovered_s=recovered, recovered_share=recovered / lost if lost else None,
                     recovered_ci95_s=_recovered_interval(sides[method], sides[PLAIN]))
    return entry


def _recovered_interval(what_if: list[Summary], plain: list[Summary]) -> list[float] | None:
    """The 95% interval of plain forkserver's mean save less the what-if's (analysis.intervals)."""
    import numpy as np

    from writerprof.analysis import intervals

    def durations(summaries):
        return [np.array([[s["duration_s"]] for s in complete(x["saves"])]).reshape(-1, 1) for x in summaries]

    (interval,) = intervals.difference_intervals(durations(what_if), durations(plain))
    return list(interval) if interval is not None else None
