"""Pages that move, per save: the deltas of the kernel's NUMA counters over
each save (the sampler's vmstat and numa_sched records, writerprof.record.vmstat),
for its host, its producer and its writer, with kernel.numa_balancing per host.

The sampler records a reading when the counters changed, on a slow tick, so
a counter's value at time t is its last reading at or before t. A save's
delta runs from the last reading at or before its start to the first after
its end (the last one, where none came after: nothing changed since), so it
covers the save and up to a slow tick on either side. A writer starts within
its save with counters the kernel zeroed: its delta is its last reading."""

from __future__ import annotations

import bisect
from collections import defaultdict
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes import NumaActivity, NumaSave


def numa_activity(run, procs: list[dict], saves: list[dict]) -> NumaActivity:
    host_series, proc_series = _series(run)
    out: list[NumaSave] = []
    for save in saves:
        window = (save["start_ns"], save["end_ns"])
        producer = procs[save["producer"]]
        writer = procs[save["writer"]] if save["writer"] is not None else None
        out.append({
            "save": save["save"], "host": save["host"], "rank": save["rank"],
            "host_counters": delta(host_series.get(save["host"], []), *window),
            "producer_counters": delta(proc_series.get((producer["host"], producer["pid"]), []), *window),
            "writer_counters": (_last(proc_series.get((writer["host"], writer["pid"]), []))
                                if writer is not None else None),
        })
    spans_of = defaultdict(list)  # host -> its saves' spans
    for s in saves:
        spans_of[s["host"]].append((s["start_ns"], s["end_ns"]))
    during = {}
    for host in sorted(spans_of):
        spans = _merged(spans_of[host])
        deltas = [delta(host_series.get(host, []), *span) for span in spans]
        during[host] = _sum([d for d in deltas if d is not None]) if any(d is not None for d in deltas) else None
    return {"numa_balancing": {host: t.get("numa_balancing") for host, t in run.topology.items()},
            "during_saves": during, "saves": out}


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping spans (saves of several ranks at once) as one: a host-wide counter counts once."""
    out: list[list[int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def _sum(deltas: list[dict]) -> dict[str, int]:
    total: dict[str, int] = defaultdict(int)
    for d in deltas:
        for name, value in d.items():
            total[name] += value
    return dict(total)


def _series(run) -> tuple[dict, dict]:
    hosts, procs = defaultdict(list), defaultdict(list)
    for r in run.sampled:
        if r["kind"] == "vmstat":
            hosts[r["host"]].append((r["t_ns"], r["counters"]))
        elif r["kind"] == "numa_sched":
            procs[(r["host"], r["pid"])].append((r["t_ns"], r["counters"]))
    for series in (*hosts.values(), *procs.values()):
        series.sort(key=lambda reading: reading[0])
    return hosts, procs


def delta(series: list[tuple[int, dict]], start_ns: int, end_ns: int) -> dict[str, int] | None:
    """Each counter's change over [start_ns, end_ns]; None where no reading
    came at or before start_ns (not measured)."""
    times = [t for t, _ in series]
    i = bisect.bisect_right(times, start_ns) - 1
    if i < 0:
        return None
    j = bisect.bisect_left(times, end_ns)
    before, after = series[i][1], series[min(j, len(series) - 1)][1]
    return {name: after[name] - value for name, value in before.items() if name in after}


def _last(series: list[tuple[int, dict]]) -> dict[str, int] | None:
    return dict(series[-1][1]) if series else None


def moved_during_saves(activity: NumaActivity, host: str) -> dict:
    """One host's totals: pages the kernel migrated host-wide while saves ran
    (each moment counted once), its saves with a migration, and the pages
    migrated by the saves' own processes (the writers', since they started)."""
    saves = [s for s in activity["saves"] if s["host"] == host]
    measured = [s for s in saves if s["host_counters"] is not None]
    own = [c for s in saves for c in (s["producer_counters"], s["writer_counters"]) if c]
    during = activity["during_saves"].get(host) or {}
    return {"saves": len(measured),
            "saves_with_migrations": sum((s["host_counters"].get("numa_pages_migrated") or 0) > 0 for s in measured),
            "host_pages_migrated": during.get("numa_pages_migrated"),
            "host_hint_faults": during.get("numa_hint_faults"),
            "own_pages_migrated": sum(c.get("numa_pages_migrated") or 0 for c in own)}
