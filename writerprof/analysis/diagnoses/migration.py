"""Pages that move: automatic NUMA balancing migrating the buffers' pages,
or the saves' own processes' pages, while the saves ran."""

from __future__ import annotations

from collections import defaultdict

from writerprof.analysis import buffers
from writerprof.analysis.diagnoses.base import INFO, Code, diagnosis, emits
from writerprof.analysis.numa_activity import moved_during_saves, numa_activity


@emits(Code("pages-migrated", (INFO,),
            "automatic NUMA balancing (kernel.numa_balancing) moved pages of the saves' buffers between two "
            "readings, or of their producers and writers: a buffer's placement at a save's end is not where "
            "it was filled"))
def pages_migrated(run, procs, saves):
    if not any(t.get("numa_balancing") for t in run.topology.values()):
        return []  # balancing off on every host: nothing to read (the readings of a big run take a while)
    activity = numa_activity(run, procs, saves)
    moved = _moved_buffer_pages(run, procs, saves)
    out = []
    for host, setting in sorted(activity["numa_balancing"].items()):
        if not setting:
            continue
        totals = moved_during_saves(activity, host)
        buffer_pages, buffers_moved = moved.get(host, (0.0, 0))
        if buffer_pages <= 0 and totals["own_pages_migrated"] <= 0:
            continue
        moves = []
        if buffer_pages > 0:
            moves.append(f"{buffer_pages:.0f} pages of {buffers_moved} buffer(s) left their node between readings")
        if totals["own_pages_migrated"] > 0:
            moves.append(f"the producers and writers had {totals['own_pages_migrated']} pages migrated")
        out.append(diagnosis(
            "pages-migrated", {"host": host, "pid": None, "rank": None},
            f"automatic NUMA balancing (kernel.numa_balancing={setting}) moved pages on {host} during the saves: "
            f"{', '.join(moves)} ({totals['host_pages_migrated'] or 0} host-wide in {totals['saves_with_migrations']} "
            f"of {totals['saves']} saves measured): placement at a save's end is not where its buffers were filled",
            {"numa_balancing": setting, "buffer_pages_moved": buffer_pages, "buffers_moved": buffers_moved,
             **totals}))
    return out


def _moved_buffer_pages(run, procs, saves) -> dict[str, tuple[float, int]]:
    """host -> (pages moved, buffers with a move) over the buffers the saves' processes mapped."""
    readings = buffers.readings(run)
    rows = {row for s in saves for row in (s["producer"], s["writer"]) if row is not None}
    names = {(procs[row]["host"], name) for row in rows for name in readings.names.get(row, {}).values()}
    out: dict = defaultdict(lambda: (0.0, 0))
    for key in sorted(names):
        found = readings.moved.get(key)
        if found and found["pages"] > 0:
            pages, count = out[key[0]]
            out[key[0]] = (pages + found["pages"], count + 1)
    return dict(out)
