"""Each action of a fix shown once per process. Two warnings of one process
can share actions: writer-startup's fix, where its writers re-run
`__main__`, begins with main-reimport's (analysis.fixes.attach), and the
JSON keeps each warning's fix whole. A page or a terminal shows an action
under the first warning of its process that has it; a later one names the
earlier instead of repeating its list."""

from __future__ import annotations


def once_per_process(shown: list[tuple[dict, str | None]]) -> list[tuple[list[dict], str | None, int]]:
    """For each (diagnosis, run) in the order they are shown: the actions of
    its fix not shown before for its process (run, host, pid), the code of
    the diagnosis that showed the others first (None: none did), and how
    many of its actions that one showed."""
    seen: dict[tuple, dict[str, str]] = {}  # process -> action id -> the code it was shown under
    out = []
    for d, run in shown:
        before = seen.setdefault((run, d.get("host"), d.get("pid")), {})
        fix = d.get("fix") or []
        new = [a for a in fix if a["id"] not in before]
        earlier = [before[a["id"]] for a in fix if a["id"] in before]
        for action in new:
            before[action["id"]] = d["code"]
        out.append((new, earlier[0] if earlier else None, len(earlier)))
    return out
