"""A run's summary: the one object every renderer (terminal, HTML, plots,
notebooks) and `compare` reads (`writerprof report --json` prints it). It
holds everything they show that is derived from the run, the plots' data
included (affinity, buffer placement, chunk timeline), each bounded for
runs of many ranks; the renderers only format it."""

from __future__ import annotations

from collections import namedtuple
from typing import TYPE_CHECKING

from writerprof import forked
from writerprof.analysis import affinity, binding, clocks, diagnoses, ending, groups, hostwise, placement, processes
from writerprof.analysis import numa_activity, ranks, saves, stalls, starts, timeline, world
from writerprof.analysis.hooks import unmatched_in
from writerprof.analysis.unprobed import not_probed
from writerprof.run import roles, topology

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes import Diagnosis, Summary, Throughput

SCHEMA = "writerprof.summary/1"


def summarize(run) -> Summary:
    idx, big, found, procs, origin, clock, offsets, ended, kept = _analysed(run)
    rank_rows = ranks.per_rank(kept)
    pythons = sorted({p["python"] for p in procs if p["python"]})
    topology_of = {host: {"nodes": {n: info["cpus"] for n, info in t.get("nodes", {}).items()},
                          "cpus": len(topology.cpu_nodes(t)), "cpu_model": t.get("cpu_model")}
                   for host, t in run.topology.items()}

    def here():  # the plots' data and the rest of the summary
        return {"buffer_placement": placement.buffer_placement(run, procs, found),
                "affinity": affinity.affinity(run, procs, found, offsets),
                "chunk_timeline": timeline.chunk_timeline(run, idx, procs, found, offsets),
                "numa_activity": numa_activity.numa_activity(run, procs, found),
                "process_groups": groups.process_groups(procs),
                "save_indices": groups.save_indices(kept),
                "throughput": throughput(kept),
                "ranks_per_host": ranks.per_host(rank_rows),
                "aggregate": ranks.aggregate(kept, offsets),
                "stragglers": ranks.stragglers(kept),
                "placement": ranks.placement_consistency(procs, run.topology),
                "binding": binding.launcher_binding(procs, run.topology),
                "host_binding": binding.per_host(procs, run.topology, found),
                "stalls": stalls.snapshots(run, procs)}

    def aside():
        return (diagnoses.diagnose(run, procs, kept), world.world(run), starts.start_methods(run),
                unmatched_in(run), not_probed(run))

    # The diagnoses, the run's world and what was not probed forked on a big
    # run beside the rest (CPU s of each, 1M chunks: 0.62 + 0.43 beside 0.84
    # + 0.22; before, the diagnoses alone beside the plots' data, then the
    # rest: 0.62 beside 0.84, then 0.65).
    (found_diagnoses, world_of, start_methods, unmatched, unprobed), mine = (
        forked.beside if big else forked.in_turn)(aside, here)
    return {
        "schema": SCHEMA,
        "world": world_of,
        "run": {
            "path": str(run.path),
            "command": run.meta.get("command"),
            "complete": run.complete,
            "exit_status": run.meta.get("exit_status"),
            "synthetic": bool(run.meta.get("synthetic")),
            "hosts": run.hosts,
            "python": pythons,
            "start_methods": start_methods,
            "started_ns": origin,
            "losses": run.losses,
            "incomplete": list(run.meta.get("incomplete") or []),
            "outlived_cmd": list(run.meta.get("outlived_cmd") or []),
            "probes_unmatched": unmatched,
            "not_probed": unprobed,
            "ending": ended,
            "slurm": ending.slurm(run.meta),
        },
        "topology": topology_of,
        "clocks": clock,
        "processes": procs,
        "saves": found,
        "throughput": mine["throughput"],
        "ranks": rank_rows,
        **{key: mine[key] for key in ("ranks_per_host", "aggregate", "stragglers", "placement", "binding",
                                      "host_binding")},
        "diagnoses": found_diagnoses,
        **{key: mine[key] for key in ("process_groups", "save_indices", "affinity", "buffer_placement",
                                      "chunk_timeline", "numa_activity", "stalls")},
    }


def diagnosed(run) -> list[Diagnosis]:
    """The run's diagnoses as summarize finds them, without their fixes and
    the rest of the summary (its plots' data, ranks, world): what record's
    summary counts, at about half the CPU time of summarize on 16 saves."""
    analysed = _analysed(run)
    return diagnoses.diagnose(run, analysed.procs, analysed.kept, with_fixes=False)


# What summarize and diagnosed both start from (_analysed).
_Analysed = namedtuple("_Analysed", "idx big found procs origin clock offsets ended kept")


def _analysed(run) -> _Analysed:
    """What summarize and diagnosed both start from: the saves' index, whether
    the run is big enough to fork for, the saves and the process table on
    the recording host's time line, the clocks, the run's ending and the
    complete saves."""
    idx = saves.index(run)
    parts = hostwise.parts(run)
    big = parts is not None and len(parts) >= 2 and forked.spare_cpu()  # else no fork: a small run's is quick
    found, procs = _saves_and_processes(run, idx, parts, big)
    origin = run.meta.get("started_ns") or 0
    clock = clocks.alignment(run)
    offsets = {host: a["offset_ns"] for host, a in clock.items()}
    # Every "_s" time on the recording host's time line; "_ns" ones stay on their host's clock.
    for save in found:
        save["start_s"] = (save["start_ns"] + offsets.get(save["host"], 0) - origin) / 1e9
        save["end_s"] = (save["end_ns"] + offsets.get(save["host"], 0) - origin) / 1e9
    for proc in procs:
        _shift(proc, offsets.get(proc["host"], 0) / 1e9)
    ended = ending.ending(run, found, offsets)  # each save's status: the figures take the complete ones
    return _Analysed(idx, big, found, procs, origin, clock, offsets, ended, ending.complete(found))


def _saves_and_processes(run, idx, parts, fork: bool) -> tuple[list[dict], list[dict]]:
    """The run's saves and its process table. A big run's (parts) saves and
    where its processes worked (processes.work) are found a part at a time
    (a part's temporaries, not the whole run's), with fork in two processes
    at once."""
    role_of = roles.roles(run)  # the table's and the parts' work's: found once, before a fork

    def work(part, first, stop, found):
        calls_nodes, by_threads = processes.work(part, role_of[first:stop], found)
        return calls_nodes, {first + row: w for row, w in by_threads.items()}

    if parts is None:
        found = saves.find(run, idx)
        procs, (calls_nodes, worked) = processes.table(run, idx, role_of), processes.work(run, role_of, found)
    else:  # the parts shared out with a worker, which starts on them while the table is made here
        found_parts, procs = forked.shared(len(parts), lambda i: saves.in_parts(run, idx, parts[i:i + 1], work)[0],
                                           lambda: processes.table(run, idx, role_of), fork)
        found = hostwise.joined(found_parts)
        calls_nodes = [nodes for *_, (part_nodes, _) in found_parts for nodes in part_nodes]  # (parts in row order)
        worked = {row: w for *_, (_, part_work) in found_parts for row, w in part_work.items()}
    return found, processes.with_work(processes.with_start_methods(procs, found), calls_nodes, worked)


def throughput(found: list[dict]) -> Throughput:
    """Bytes saved over time saving: per save, and for the run (all saves'
    bytes over their summed durations)."""
    total_bytes = sum(s["bytes"] for s in found)
    total_s = sum(s["duration_s"] for s in found)
    return {"saves": len(found), "bytes": total_bytes, "save_s": total_s,
            "mean_save_s": total_s / len(found) if found else None,
            "gib_s": total_bytes / total_s / 2**30 if total_s else None}


def _shift(proc: dict, seconds: float) -> None:
    """A process row's times, moved onto the recording host's time line."""
    if seconds:
        proc["created_s"] += seconds
        if proc["exited_s"] is not None:
            proc["exited_s"] += seconds
        for change in proc["affinity_changes"]:
            change["t_s"] += seconds
