"""Why a program without checkpoint saves takes longer under one start
method than another: the difference in CMD's mean wall time (or in a figure
CMD prints, --metric) cut into the parts of analysis.program, which add up
to the wall time's difference exactly; per child, its start-up phases; per
task, its wait and pickling; and a verdict of three lines (the difference
with its interval, the top cause with its share, the best fix with its
recovery), the details after it.

Each side is the runs of one method: a run is the unit, so the intervals
are the bootstrap's over the runs (analysis.intervals, the parts' together);
with one run a side there is none, and no cause is named. A part is a cause
where its interval is clear of zero, in the difference's direction, and
not negligible (NEGLIGIBLE_S and NEGLIGIBLE_SHARE of A's wall time).
"""

from __future__ import annotations

import numpy as np

from writerprof.analysis import fixes, intervals
from writerprof.analysis.program import PARTS, STARTUP, mean_of

SCHEMA = "writerprof.contrast-program/1"
LABELS = {
    "work": "children's tasks", "task_wait": "waiting for tasks", "startup:interpreter": "start-up: interpreter",
    "startup:main_rerun": "start-up: __main__ re-run", "startup:unpickle": "start-up: unpickle",
    "startup:bootstrap": "start-up: bootstrap", "startup:initializer": "start-up: initializer",
    "forkserver": "forkserver start, preload", "start:pickle": "Process.start: pickling",
    "start": "Process.start: the rest", "exit": "children's exit", "parent": "parent's own",
}
DESCRIPTIONS = {
    "work": "the children's tasks",
    "task_wait": "the children waiting for their next task (the parent pickling and queueing it)",
    "startup:interpreter": "the children's interpreter start (a fresh interpreter under spawn, the fork otherwise)",
    "startup:main_rerun": "the children re-running the parent's __main__ at start-up",
    "startup:unpickle": "the children unpickling their Process: the target and its arguments",
    "startup:bootstrap": "multiprocessing's bootstrap in the children",
    "startup:initializer": "the pool's initializer in each worker",
    "forkserver": "starting the forkserver and its preload",
    "start:pickle": "the parent pickling each child's Process and arguments in Process.start()",
    "start": "the rest of Process.start() in the parent (the fork, the forkserver's reply, or the spawn)",
    "exit": "the children's exit",
    "parent": "the parent's own time (its start-up and imports, its work, its joins)",
}
NEGLIGIBLE_S = 0.005
NEGLIGIBLE_SHARE = 0.01
NAMED_SHARE = 0.05  # a cause under this share of the difference is not named beside the top one
# Parts that are the start-up of children, for the pool-reuse advice.
_STARTING = tuple(f"startup:{p}" for p in STARTUP) + ("forkserver", "start")
_PICKLING = ("start:pickle", "startup:unpickle")
# Columns resampled per run: the parts, then the wall time, then the metric.
_WALL, _METRIC = len(PARTS), len(PARTS) + 1


def side(runs: list[dict], name: str) -> dict:
    """runs: analysis.program's dicts, each with its "metric" (None: none asked for or found)."""
    children = [r["children"] for r in runs]
    return {
        "name": name,
        "runs": len(runs),
        "wall_s": mean_of(r["wall_s"] for r in runs),
        "metric": mean_of(r.get("metric") for r in runs),
        "parts": {p: mean_of(r["parts"][p] for r in runs) for p in PARTS},
        "children": {
            "started": mean_of(c["started"] for c in children),
            "took_tasks": mean_of(c["took_tasks"] for c in children),
            "tasks_per_child": mean_of(c["tasks_per_child"] for c in children),
            "phases": {p: mean_of(c["phases"][p] for c in children if c["started"]) for p in STARTUP},
            "startup_s": mean_of(c["startup_s"] for c in children),
            "first_task_s": mean_of(c.get("first_task_s") for c in children),
            "start_call_s": mean_of(c["start_call_s"] for c in children),
            "pickle_s": mean_of(c["pickle_s"] for c in children),
            "pickle_bytes": mean_of(c["pickle_bytes"] for c in children),
            "methods": sorted({m for c in children for m in c["methods"]}),
        },
        "tasks": {k: mean_of(r["tasks"][k] for r in runs) for k in ("gets", "get_s", "pickled_calls", "pickle_s",
                                                                  "pickled_bytes")},
        "main": next((r["main"] for r in runs if r["main"]), None),
    }


def compare(a: list[dict], b: list[dict], names: tuple[str, str], metric: str | None = None,
            fix_context: dict[str, dict] | None = None) -> dict:
    """a, b: each side's runs (analysis.program, with "metric"); metric: the
    --metric regex, whose figure the difference is then told in;
    fix_context: per side's name, what the fixes need of its runs (fix_inputs)."""
    A, B = side(a, names[0]), side(b, names[1])
    by_metric = metric is not None and A["metric"] is not None and B["metric"] is not None
    wall_diff = B["wall_s"] - A["wall_s"]
    ci = intervals.difference_intervals([_row(r) for r in a], [_row(r) for r in b],
                                        together=list(range(len(PARTS))))
    floor = max(NEGLIGIBLE_S, NEGLIGIBLE_SHARE * A["wall_s"])
    parts = []
    for i, p in enumerate(PARTS):
        diff = B["parts"][p] - A["parts"][p]
        clear = intervals.excludes_zero(ci[i])
        parts.append({"name": p, "label": LABELS[p], "description": DESCRIPTIONS[p], "a_s": A["parts"][p],
                      "b_s": B["parts"][p], "diff_s": diff, "share": diff / wall_diff if wall_diff else None,
                      "ci95_s": list(ci[i]) if ci[i] is not None else None,
                      "significant": bool(clear) and abs(diff) >= floor if clear is not None else None})
    wall = {"a_s": A["wall_s"], "b_s": B["wall_s"], "diff_s": wall_diff,
            "ci95_s": list(ci[_WALL]) if ci[_WALL] is not None else None}
    wall["significant"] = (bool(intervals.excludes_zero(ci[_WALL])) and abs(wall_diff) >= floor
                           if ci[_WALL] is not None else None)
    figure = None
    if by_metric:
        m_diff = B["metric"] - A["metric"]
        clear = intervals.excludes_zero(ci[_METRIC])
        figure = {"regex": metric, "a": A["metric"], "b": B["metric"], "diff": m_diff,
                  "ci95": list(ci[_METRIC]) if ci[_METRIC] is not None else None,
                  "significant": bool(clear) and abs(m_diff) >= NEGLIGIBLE_SHARE * abs(A["metric"])
                  if clear is not None else None}
    # What the verdict explains: the figure where one is asked for (the wall time's parts are its causes).
    explained = figure if figure is not None else wall
    causes = [] if not explained["significant"] else sorted(
        (p for p in parts if p["significant"] and p["diff_s"] * wall_diff > 0), key=lambda p: -abs(p["diff_s"]))
    slower = B if wall_diff > 0 else A
    fix = program_fixes(causes, slower, (fix_context or {}).get(slower["name"], {}), abs(wall_diff)) if causes else []
    result = {"schema": SCHEMA, "a": A, "b": B, "wall": wall, "metric": figure, "parts": parts,
              "causes": [c["name"] for c in causes], "fix": fix}
    result["verdict"] = verdict(result)
    return result


def _row(run: dict) -> np.ndarray:
    metric = run.get("metric")
    return np.array([[run["parts"][p] for p in PARTS] + [run["wall_s"], metric if metric is not None else np.nan]])


def verdict(result: dict) -> list[str]:
    """At most three lines: the difference with its interval, the top cause
    with its share, the best fix with its recovery."""
    A, B, wall = result["a"], result["b"], result["wall"]
    diff = wall["diff_s"]
    way = "longer" if diff > 0 else "shorter"
    interval = f" (95% interval {_interval(wall['ci95_s'])} s)" if wall["ci95_s"] is not None else ""
    runs = f"{A['runs']} and {B['runs']} runs" if A["runs"] != B["runs"] else f"{A['runs']} runs each"
    if result["metric"] is not None:
        m = result["metric"]
        m_interval = f" (95% interval {_interval(m['ci95'])})" if m["ci95"] is not None else ""
        first = (f"{B['name']}: the figure /{m['regex']}/ is {m['b']:.4g} against {m['a']:.4g} with {A['name']}, "
                 f"{m['diff']:+.4g}{m_interval}; CMD's wall time {A['wall_s']:.2f} → {B['wall_s']:.2f} s, "
                 f"{diff:+.2f} s{interval}; {runs}.")
    else:
        first = (f"{B['name']} takes {abs(diff):.2f} s {way} per run than {A['name']}: CMD's wall time "
                 f"{A['wall_s']:.2f} → {B['wall_s']:.2f} s{interval}, {runs}.")
    if wall["ci95_s"] is None:
        return [first, "No cause is named: one run a side has no interval (contrast --repeat 2 or more)."]
    if not (result["metric"] or wall)["significant"]:
        what = "The figure's difference" if result["metric"] else "That"
        return [first, f"{what} is within the run-to-run noise: no cause is named."]
    by_name = {p["name"]: p for p in result["parts"]}
    causes = [by_name[name] for name in result["causes"]]
    if not causes:
        return [first, "No single part of the wall time is clear of the noise: no cause is named."]
    top = causes[0]
    share = top["diff_s"] / diff
    if share <= 1:
        said = f"{share:.0%}"
    else:  # the other parts gave some back: say which gave most
        back = min((p for p in result["parts"] if p["diff_s"] * diff < 0), key=lambda p: p["diff_s"] / diff,
                   default=None)
        said = f"{share:.0%}: more than all of it, {top['diff_s'] - diff:.2f} s of it given back by the other parts"
        said += f", most by {back['label']}" if back is not None else ""
    second = (f"Top cause: {top['description']}{_main_said(top, result)}, {top['diff_s']:+.2f} s per run"
              f"{_pm(top)} ({said})")
    also = [f"{c['label']} {c['diff_s']:+.2f} s ({c['diff_s'] / diff:.0%})" for c in causes[1:3]
            if c["diff_s"] / diff >= NAMED_SHARE]
    second += f"; also {', '.join(also)}." if also else "."
    lines = [first, second]
    if result["fix"]:
        best = result["fix"][0]
        rec = (f" (recovers {best['recovery_s']:.2f} s per run, {best['recovery']})"
               if best.get("recovery_s") is not None else "")
        lines.append(f"Best fix: {fixes.headline(best)}{rec}; the fix below says why and where.")
    return lines


def _main_said(part: dict, result: dict) -> str:
    main = result["b"]["main"] or result["a"]["main"]
    return f" ({main.rsplit('/', 1)[-1]})" if part["name"] == "startup:main_rerun" and main else ""


def _pm(part: dict) -> str:
    ci = part["ci95_s"]
    return f" ±{(ci[1] - ci[0]) / 2:.2f}" if ci is not None else ""


def _interval(ci) -> str:
    return f"{ci[0]:+.3f} to {ci[1]:+.3f}"


def fix_inputs(run, program: dict) -> dict:
    """What the fixes need of one run of the slower side: the imports its
    children spent their re-run of __main__ in (from their stacks), its
    Python, its forkserver's preload list, the native threads at its starts."""
    from writerprof.analysis import forkthreads, preload

    main = program["main"]
    rows = program.get("child_rows") or []
    stacks = fixes.stacks_of(run) if main else []
    pythons = sorted({e["data"].get("python") for e in run.events_of("process")} - {None})
    return {"main": main, "imports": fixes.imports_of(stacks, main, procs=set(rows)) if main else [],
            "python": pythons[0] if pythons else None, "forkserver": preload.recorded(run),
            "native_threads": forkthreads.at_writer_starts(run)}


def program_fixes(causes: list[dict], slower: dict, context: dict, difference: float) -> list[dict]:
    """The checked fixes of the causes, in the program's terms, the largest
    cause's first: the re-run's (guarded imports, python -m, a preload list
    this Python honours), passing large data other than as pickled Process
    arguments, keeping children instead of starting one per task, then fork
    where safe. A cause under fixes.MINOR_SHARE of the difference gets none."""
    method = (slower["children"]["methods"] or [None])[0]
    children = slower["children"]
    target = fixes.Target(main=slower["main"], imports=context.get("imports") or [], python=context.get("python"),
                          forkserver=context.get("forkserver"), native_threads=context.get("native_threads"),
                          start_methods=frozenset(children["methods"]), children="children",
                          program="the program")
    worth = [c for c in causes if abs(c["diff_s"]) >= fixes.MINOR_SHARE * difference]
    pickling = sum(c["diff_s"] for c in worth if c["name"] in _PICKLING)
    actions: list[dict] = []
    for cause in worth:
        name = cause["name"]
        if name == "startup:main_rerun":
            reimport = {"code": "main-reimport", "severity": "warning", "cost_s": cause["diff_s"],
                        "evidence": {"main": slower["main"], "per_writer_s": children["phases"]["main_rerun"],
                                     "python": target.python, "start_method": method}}
            actions += fixes.for_diagnosis(reimport, target, 1) or []
        elif name in _PICKLING and (children["pickle_bytes"] or 0) > 0:
            actions.append({"id": "no-pickled-args", "recovery_s": pickling,
                            "what": f"pass the children's large data without pickling it "
                                    f"({children['pickle_bytes'] / 2**20:.1f} MiB pickled per Process.start()): a "
                                    f"shared-memory block (multiprocessing.shared_memory) named in the arguments, or "
                                    f"a file, or fork's inherited memory",
                            "where": "the Process(...) arguments"})
        if name in _STARTING + _PICKLING and (children["started"] or 0) >= 3 and (children["tasks_per_child"] or 0) < 2:
            actions.append({"id": "reuse-pool", "recovery_s": None,
                            "what": f"start the children once and reuse them (a Pool or ProcessPoolExecutor kept "
                                    f"for the program's life): {children['started']:.0f} were started, "
                                    f"{children['tasks_per_child'] or 0:.1f} tasks each, each paying its start-up",
                            "where": "the code that starts a process per task"})
    if any(c["name"] in _STARTING + _PICKLING for c in worth) and method != "fork":
        actions.append(fixes.fork_action(target))
    seen, out = set(), []
    for action in actions:
        if action["id"] not in seen:
            seen.add(action["id"])
            out.append(action if "recovery" in action else fixes.completed(action))
    return fixes.for_difference(out, difference)
