"""The --probe specs that matched nothing, from the journals' hook events
and the calls recorded:
for the report's summary and for record's, which imports this alone, not
the analysis (0.04 CPU s of record's end)."""

from __future__ import annotations


def unmatched_probes(specs: list[str], hooks, calls: dict[str, int] | None = None) -> dict[str, str]:
    """The --probe specs that timed nothing, each with why: from the
    journal's hook events ("unavailable" with its reason, or no event at all
    when no process imported the module), and, given calls (phase name ->
    calls recorded), those applied whose phase has no call."""
    applied = {e["data"].get("spec"): e["data"].get("reason") for e in hooks if e["data"].get("status") == "applied"}
    reasons = {e["data"].get("spec"): e["data"].get("reason") for e in hooks
               if e["data"].get("status") in ("unavailable", "failed")}
    out = {}
    for spec in specs:
        module = spec.partition(":")[0]
        if spec not in applied:
            out[spec] = reasons.get(spec) or f"no process imported {module}"
        elif calls is not None and not calls.get(spec.rpartition("=")[2]):
            extension = "extension type" in (applied[spec] or "")
            out[spec] = ("applied, but it timed no call" + (
                f": an extension type's method is timed only on the objects made through {module}'s name, "
                f"not on those its library makes in C" if extension else ""))
    return out


def unmatched_in(run) -> dict[str, str]:
    """unmatched_probes of a loaded run: its --probe specs, its hook events,
    and its calls per phase, counted only where a spec was given."""
    specs = run.meta.get("probes") or []
    return unmatched_probes(specs, run.events_of("hook"), _phase_calls(run) if specs else None)


def _phase_calls(run) -> dict[str, int]:
    """Phase name -> the calls of it recorded in the run."""
    import numpy as np  # (as the loaded run has: record's summary imports this module before)

    found = np.bincount(run.chunk_columns["phase"], minlength=max(run.phase_names, default=0) + 1)
    return {name: int(found[code]) for code, name in run.phase_names.items() if code < len(found)}

