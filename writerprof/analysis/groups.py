"""Many processes or saves, summarised: one row per (host, role) with the
group's masks, nodes and kernel counts (mean, min, max), and one row per save
index (the n-th save of every rank) with each time's mean, min and max, the
slowest rank and the most common bottleneck with its critical-path seconds. Every report reads these rows."""

from __future__ import annotations

from collections import defaultdict

from writerprof.analysis.processes import mean_shares
from writerprof.analysis.saves import group_seconds
from writerprof.run import roles as run_roles

# Groups of a host in this order: the pipeline's two sides, then its helpers.
ROLE_ORDER = {run_roles.PRODUCER: 0, run_roles.WRITER: 1, run_roles.FORKSERVER: 2, run_roles.RESOURCE_TRACKER: 3}
# A save's times summarised per save index.
SAVE_TIMES = ("startup_s", "main_rerun_s", "gen_s", "put_wait_s", "get_wait_s", "write_s", "fsync_s",
              "duration_s", "gib_s")


def stats(values) -> dict | None:
    """{"mean", "min", "max"} of the values that are known, or None."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}


def group_key(proc: dict) -> tuple:
    """The order of (host, role) groups."""
    return proc["host"], ROLE_ORDER.get(proc["role"], 9), proc["role"]


def process_groups(procs: list[dict]) -> list[dict]:
    """One row per (host, role), hosts in order, producers first."""
    members: dict = defaultdict(list)
    for p in procs:
        members[group_key(p)].append(p)
    out = []
    for (host, _, role), group in sorted(members.items()):
        masks = sorted({tuple(p["allowed_cpus"]) for p in group})
        out.append({
            "host": host, "role": role, "count": len(group),
            "ranks": sorted({p["rank"] for p in group if p["rank"] is not None and p["rank"] >= 0}),
            "start_methods": sorted({p["start_method"] for p in group if p.get("start_method")}),
            "masks": len(masks), "allowed_cpus": list(masks[0]) if len(masks) == 1 else None,
            "allowed_nodes": sorted({n for p in group for n in p["allowed_nodes"]}),
            "spanning": sum(len(p["allowed_nodes"]) > 1 for p in group),
            "worked_nodes": mean_shares([p["worked_nodes"] for p in group]),
            "buffer_nodes": mean_shares([p["buffer_nodes"] for p in group]),
            **{key: stats(p.get(key) for p in group) for key in ("minflt", "nonvoluntary_switches", "cpu_s")},
        })
    return out


def save_indices(saves: list[dict]) -> list[dict]:
    """One row per save index, over the ranks that made it."""
    by_index: dict = defaultdict(list)
    for s in saves:
        by_index[s["save"]].append(s)
    out = []
    for index, group in sorted(by_index.items()):
        slowest = max(group, key=lambda s: s["duration_s"])
        bottlenecks: dict = defaultdict(int)
        for s in group:
            bottlenecks[s.get("bottleneck")] += 1
        times = {key: stats(_time(s, key) for s in group) for key in SAVE_TIMES}
        bottleneck = max(bottlenecks, key=bottlenecks.get)
        out.append({"save": index, "ranks": len(group), **times,
                    "slowest": {"rank": slowest["rank"], "host": slowest["host"],
                                "duration_s": slowest["duration_s"]},
                    "bottleneck": bottleneck,
                    # Its critical-path seconds over every rank's save of this index, the label's own measure.
                    "bottleneck_s": stats(group_seconds(s["critical_path"], bottleneck) for s in group)})
    return out


def _time(save: dict, key: str):
    return (save["startup"] or {}).get("main_rerun") if key == "main_rerun_s" else save.get(key)
