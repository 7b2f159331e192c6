"""The report's "Stalled" lines (summary["stalls"], writerprof.analysis.stalls):
per snapshot, when and for how long nothing progressed, then what it says of
each waiting or spinning process and each deadlock, as the analysis wrote it."""

from __future__ import annotations

import textwrap

SAID = 12  # lines of a snapshot shown; the rest are in --json's stalls


def stall_lines(summary: dict, width: int) -> list[str]:
    """The section's lines, none where no snapshot was taken."""
    out = []
    for snapshot in (summary.get("stalls") or {}).get("snapshots", []):
        out += ["", f"Stalled on {snapshot['host']} at {snapshot['at_s']:.1f} s: no save made progress for "
                    f"{snapshot['stalled_s']:.1f} s"]
        if snapshot["stacks_error"]:
            out.append(f"  (no Python stacks: {snapshot['stacks_error']})")
        says = snapshot["says"] or ["no process was seen waiting or spinning"]
        for line in says[:SAID]:
            out += textwrap.wrap(line, width, initial_indent="  - ", subsequent_indent="    ",
                                 break_long_words=False, break_on_hyphens=False)
        if len(says) > SAID:
            out.append(f"  ... and {len(says) - SAID} more (report --json: stalls)")
    return out
