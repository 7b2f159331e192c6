"""Many ranks: each rank's saves, the aggregate the benchmark reports, the
rank that sets the pace of each save and why, and whether placement is the
same on every rank and host."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from writerprof.analysis import binding
from writerprof.analysis.processes import dominant
from writerprof.analysis.saves import COMPONENTS
from writerprof.run import roles as run_roles

GIB = 2**30
# The launchers' count of the ranks on a rank's host (its identity's env), the first set wins:
# Open MPI, MPICH's Hydra, MVAPICH2, torchrun, Slurm (where --ntasks-per-node was given).
LOCAL_SIZE_VARS = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE",
                   "SLURM_NTASKS_PER_NODE")
RECORDED = "recorded"  # local_ranks' source where no launcher's variable said it


def per_rank(saves: list[dict]) -> list[dict]:
    """One row per producer (a rank, or the one process of a run without MPI)."""
    groups = defaultdict(list)
    for s in saves:
        groups[(s["host"], s["rank"], s["producer"])].append(s)
    rows = []
    for (host, rank, producer), mine in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2])):
        total = sum(s["duration_s"] for s in mine)
        rows.append({"host": host, "rank": rank, "producer": producer, "producer_pid": mine[0]["producer_pid"],
                     "saves": len(mine), "mean_save_s": total / len(mine),
                     "slowest_save_s": max(s["duration_s"] for s in mine),
                     "gib_s": sum(s["bytes"] for s in mine) / total / GIB if total else None})
    return rows


def per_host(rank_rows: list[dict]) -> list[dict]:
    """Per host, over its ranks (per_rank's rows): how many, their mean save
    time, and the rank with the slowest save."""
    by_host = defaultdict(list)
    for r in rank_rows:
        by_host[r["host"]].append(r)
    out = []
    for host, group in sorted(by_host.items()):
        worst = max(group, key=lambda r: r["slowest_save_s"])
        out.append({"host": host, "ranks": len(group),
                    "mean_save_s": sum(r["mean_save_s"] for r in group) / len(group),
                    "slowest_save_s": worst["slowest_save_s"], "slowest_rank": worst["rank"]})
    return out


def aggregate(saves: list[dict], offsets: dict[str, int]) -> dict:
    """Per save index (the n-th save of every rank), as the benchmark reports
    it: the checkpoint size summed over ranks over rank 0's save duration
    (the lowest rank present); also over the span from the first rank's start
    to the last rank's end (all hosts on one time line). And the mean of the
    per-save rates, as the benchmark averages them."""
    by_index = defaultdict(list)
    for s in saves:
        by_index[s["save"]].append(s)
    rows = []
    for index, group in sorted(by_index.items()):
        first = min(group, key=lambda s: (s["rank"], s["host"], s["producer"]))
        nbytes = sum(s["bytes"] for s in group)
        starts = [s["start_ns"] + offsets.get(s["host"], 0) for s in group]
        ends = [s["end_ns"] + offsets.get(s["host"], 0) for s in group]
        span = (max(ends) - min(starts)) / 1e9
        rows.append({"save": index, "ranks": len(group), "bytes": nbytes,
                     "rank0": first["rank"], "rank0_s": first["duration_s"],
                     "gib_s": nbytes / first["duration_s"] / GIB if first["duration_s"] else None,
                     "span_s": span, "span_gib_s": nbytes / span / GIB if span else None})
    rates = [r["gib_s"] for r in rows if r["gib_s"] is not None]
    return {"saves": rows, "mean_gib_s": float(np.mean(rates)) if rates else None}


def stragglers(saves: list[dict]) -> list[dict]:
    """Per save index with two ranks or more: the slowest rank, how much
    longer than the median rank it took, and the component of its critical
    path that exceeds the median rank's the most."""
    by_index = defaultdict(list)
    for s in saves:
        by_index[s["save"]].append(s)
    out = []
    for index, group in sorted(by_index.items()):
        if len(group) < 2:
            continue
        slowest = max(group, key=lambda s: s["duration_s"])
        median_s = float(np.median([s["duration_s"] for s in group]))
        typical = {c: float(np.median([s["critical_path"][c] for s in group])) for c in COMPONENTS}
        excess = {c: slowest["critical_path"][c] - typical[c] for c in COMPONENTS}
        why = max(excess, key=excess.get)
        out.append({"save": index, "host": slowest["host"], "rank": slowest["rank"],
                    "duration_s": slowest["duration_s"], "median_s": median_s,
                    "excess_s": slowest["duration_s"] - median_s, "component": why,
                    "component_excess_s": excess[why]})
    return out


def placement_consistency(procs: list[dict], topology: dict) -> dict:
    """Whether every rank's writers are placed alike, per host, compared by
    shape (binding.Host.shape: one core per rank is alike whichever core);
    per host, each rank's writers' CPUs and nodes, the aspects of the shape
    that differ between its ranks, and the CPUs bound ranks share; and
    whether the hosts are alike. topology: the run's snapshots, per host."""
    writers = defaultdict(int)
    for p in procs:
        if p["role"] == run_roles.WRITER:
            writers[(p["host"], p["rank"], tuple(p["allowed_cpus"]), dominant(p["worked_nodes"])[0],
                     dominant(p["buffer_nodes"])[0])] += 1
    hosts = {host: binding.Host(t) for host, t in topology.items()}
    placed = defaultdict(list)
    for (host, rank, cpus, writer_node, buffer_node), count in writers.items():
        place = hosts.get(host) or binding.Host({})
        placed[host].append({"rank": rank, "writers": count, "cpus": list(cpus),
                             "nodes": sorted({place.node_of[c] for c in cpus if c in place.node_of}),
                             "writer_node": writer_node, "buffer_node": buffer_node,
                             "shape": place.shape(cpus, writer_node, buffer_node)})
    per_host = {}
    for host, rows in sorted(placed.items()):
        rows.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, r["cpus"]))
        per_host[host] = {"ranks": rows, "shared": _shared_cpus(rows),
                          "differs": [name for name in binding.ASPECTS
                                      if len({binding.aspect(r["shape"], name) for r in rows}) > 1]}
    shapes = {(len(t.get("nodes", {})), hosts[host].cpus) for host, t in topology.items()}
    return {
        "hosts": per_host,
        "consistent": not any(h["differs"] or h["shared"] for h in per_host.values()),
        "hosts_alike": len(shapes) <= 1,
    }


def _shared_cpus(rows: list[dict]) -> list[dict]:
    """The CPUs that two bound ranks or more were given, grouped by those ranks
    (unbound ranks all have the whole host: nothing of theirs is counted)."""
    ranks_of = defaultdict(set)
    for r in rows:
        if r["rank"] is not None and r["shape"]["bound"]:
            for cpu in r["cpus"]:
                ranks_of[cpu].add(r["rank"])
    cpus_of = defaultdict(list)
    for cpu, ranks in sorted(ranks_of.items()):
        if len(ranks) > 1:
            cpus_of[tuple(sorted(ranks))].append(cpu)
    return [{"cpus": cpus, "ranks": list(ranks)} for ranks, cpus in sorted(cpus_of.items())]


def local_ranks(env: dict, producers_on_host: int) -> tuple[int, str]:
    """How many ranks share a rank's host, and where that is from: the first
    of LOCAL_SIZE_VARS its launcher set (env: its identity's), else RECORDED:
    the producers recorded on the host."""
    for name in LOCAL_SIZE_VARS:
        value = str(env.get(name, "")).strip()
        if value.isdigit() and int(value) > 0:
            return int(value), name
    return max(producers_on_host, 1), RECORDED
