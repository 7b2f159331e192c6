"""A contrast of start methods: which what-ifs the plain forkserver
recording shows cannot change anything, and the `writerprof.contrast/1`
result: every method against the reference, and what each what-if won back
of what plain forkserver lost."""

from __future__ import annotations

from writerprof.analysis.shapes import ContrastResult, Diagnosis, Summary, WhatIf

SCHEMA = "writerprof.contrast/1"
# A what-if: the start method it runs under, and the probe's switch (MITIGATE_ENV) it sets.
WHAT_IFS = {"forkserver+preload": ("forkserver", "preload"), "forkserver+pin": ("forkserver", "pin"),
            "forkserver+local": ("forkserver", "local"), "forkserver+first-touch": ("forkserver", "first-touch")}
# The placement what-ifs: they need a second node to place anything on.
PLACEMENT_WHAT_IFS = ("forkserver+local", "forkserver+first-touch")
# A placement warning's cost: what the what-ifs removing its cause won back, the first run of these.
COST_FROM = {"numa-mismatch": ("forkserver+local", "forkserver+first-touch"),
             "affinity-divergence": ("forkserver+pin", "forkserver+local")}
# The recording the what-ifs are judged on, and measured against.
PLAIN = "forkserver"
_MAIN_MODULES = ("__main__", "__mp_main__")


def cannot_apply(forkserver: Summary, methods: list[str]) -> dict[str, str]:
    """The what-ifs among methods that the plain forkserver recording shows
    would change nothing: {method: why, in a sentence}."""
    reasons = {}
    saves = forkserver["saves"]
    if "forkserver+preload" in methods:
        targets = {s["target"] for s in saves}
        in_main = sorted(t for t in targets if t and t.split(".")[0] in _MAIN_MODULES)
        if in_main:
            reasons["forkserver+preload"] = (f"the writer's target {in_main[0]} lives in __main__: the children "
                                             f"must re-run it to find the target")
        elif not any(s["startup"].get("main_rerun") for s in saves):
            python = ", ".join(forkserver["run"]["python"])
            reasons["forkserver+preload"] = (f"the forkserver writers did not re-run __main__ (Python {python}): "
                                             f"nothing to preload away")
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
           skipped: dict[str, str]) -> ContrastResult:
    """runs: {"method", "repeat", "path", "summary"} per recording, in the
    order recorded; skipped: the what-ifs not run, and why (cannot_apply)."""
    # Here, not at the top: the CLI reads WHAT_IFS to parse --methods, and starts without numpy.
    from writerprof.analysis.compare import compare

    sides = {m: [r["summary"] for r in runs if r["method"] == m] for m in methods if m not in skipped}
    reference = methods[0]
    comparisons = {m: compare(sides[reference], sides[m], (reference, m)) for m in sides if m != reference}
    # What plain forkserver lost against the reference: what a what-if can win back.
    lost = comparisons[PLAIN]["difference_s"] if PLAIN in comparisons else None
    what_ifs = [_what_if(method, comparisons.get(method), skipped.get(method), lost)
                for method in WHAT_IFS if method in methods]
    first = next(iter(comparisons.values()), None)
    plain = next((r["summary"] for r in runs if r["method"] == PLAIN), None)
    return {
        "schema": SCHEMA,
        "command": list(command),
        "methods": list(methods),
        "repeat": repeat,
        "runs": [{"method": r["method"], "repeat": r["repeat"], "path": r["path"],
                  "saves": r["summary"]["throughput"]["saves"], "gib_s": r["summary"]["throughput"]["gib_s"]}
                 for r in runs],
        "comparisons": comparisons,
        "what_ifs": what_ifs,
        "noise": _noise(sides, comparisons),
        "fix": _measured_fix(first["fix"], what_ifs, reference, lost) if first is not None else [],
        "placement_costs": placement_costs(plain, what_ifs) if plain is not None else [],
        # Every method but the reference not applicable (a placement what-if on one node): nothing to compare.
        "verdict": (first["verdict"] if first is not None else
                    "nothing to contrast: no method but the reference applies here (see what_ifs)"),
    }


def _noise(sides: dict, comparisons: dict) -> dict:
    """Each method's spread over its repeats, and the comparisons whose noise hides their effect."""
    from writerprof.analysis import noise

    return {"sides": {m: noise.spread(*noise.units(summaries, "repeat")) for m, summaries in sides.items()},
            "warnings": [f"{m}: {c['noise']['message']}" for m, c in comparisons.items() if c["noise"]["hides"]]}


def _measured_fix(fix: list, what_ifs: list, reference: str, lost: float | None) -> list:
    """The first comparison's fix, with the recoveries the what-ifs measured:
    the reference's is all of plain forkserver's loss."""
    from writerprof.analysis import fixes

    recovered = {w["method"]: w["recovered_s"] for w in what_ifs if w["recovered_s"] is not None}
    if lost is not None:
        recovered[reference] = lost
    return fixes.measured(fix, recovered)


def _what_if(method: str, comparison, reason: str | None, lost: float | None) -> WhatIf:
    """comparison: the reference against this what-if (None: it is the reference, or was not run)."""
    entry: WhatIf = {"method": method, "ran": reason is None, "reason": reason,
                     "gib_s": None, "recovered_s": None, "recovered_share": None}
    if comparison is None:
        return entry
    entry["gib_s"] = comparison["throughput"]["b_gib_s"]
    if lost is not None:
        recovered = lost - comparison["difference_s"]
        entry.update(recovered_s=recovered, recovered_share=recovered / lost if lost else None)
    return entry
