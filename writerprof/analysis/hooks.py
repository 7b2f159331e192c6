"""The --probe specs that matched nothing, from the journals' hook events:
for the report's summary and for record's, which imports this alone, not
the analysis (0.04 CPU s of record's end)."""

from __future__ import annotations


def unmatched_probes(specs: list[str], hooks) -> dict[str, str]:
    """The --probe specs applied in no process, each with why (from the
    journal's hook events: "unavailable" with its reason, or no event at all
    when no process imported the module)."""
    applied = {e["data"].get("spec") for e in hooks if e["data"].get("status") == "applied"}
    reasons = {e["data"].get("spec"): e["data"].get("reason") for e in hooks
               if e["data"].get("status") in ("unavailable", "failed")}
    return {spec: reasons.get(spec) or f"no process imported {spec.partition(':')[0]}"
            for spec in specs if spec not in applied}
