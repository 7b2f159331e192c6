"""A run's world: the ranks and hosts of the job it recorded, against those
it holds. Every rank journals its world size (the launcher's variables, the
probe's identity.rank), so a run knows how many ranks its job had even
where only some of them were probed or came home: a partial job is said as
such by every output (record's summary, report, contrast), never shown as
the whole job.

A rank is seen when a probed process journaled it (the sampler's view of a
process is no rank's). Hosts are seen where the run has a part (hosts/HOST)
or a rank journaled; how many the job had is known only where its launcher
says it (HOST_COUNT_VARS): else the world is told in ranks only."""

from __future__ import annotations

import os
from collections import defaultdict
from typing import TYPE_CHECKING

from writerprof.probes.writerprof_probe import identity

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes.summary import World

# The number of hosts of the job, per launcher (identity's rank sources), in
# its ranks' environment: Open MPI 4's (ORTE: the nodes its map gave ranks) and
# srun's (the step's nodes). Open MPI 5, Hydra and torchrun say none.
HOST_COUNT_VARS = {"openmpi": "OMPI_MCA_orte_num_nodes", "slurm": "SLURM_STEP_NUM_NODES"}
# MPI launchers by the name they run as: where CMD ran one and no rank was
# recorded, the job's ranks are elsewhere (their hosts' parts) or unprobed.
MPI_LAUNCHERS = {"mpirun", "mpiexec", "mpiexec.hydra", "orterun", "prterun", "oshrun", "srun"}
# The largest MPI jobs run about a million ranks; a world size above this is
# a damaged journal's (its list of missing ranks would not fit in memory).
MAX_WORLD_SIZE = 1 << 22


def world(run) -> World:
    """The run's World (analysis.shapes.summary): ranks expected and seen,
    the missing ones, hosts seen and expected, and whether it is partial.
    Not a world of ranks where record ran inside one rank (one record per
    rank: the other ranks are not its to probe), which record's own
    launcher variables (run.json's env) tell: every rank the run journaled
    is record's own."""
    own = identity.rank(run.meta.get("env") or {})
    ranked = [(e["host"], e["data"]) for e in run.events_of("process") if e["data"].get("rank") is not None]
    inside = own["rank"] is not None and bool(ranked) and all(
        d.get("source") == own["source"] and d["rank"] == own["rank"] for _, d in ranked)
    if inside:
        ranked = []
    sizes = [d["world_size"] for _, d in ranked if d.get("world_size") and d["world_size"] <= MAX_WORLD_SIZE]
    size = max(sizes, default=None)
    by_host: dict[str, set[int]] = defaultdict(set)
    for host, d in ranked:
        if size is None or d["rank"] < size:
            by_host[host].add(d["rank"])
    seen = set().union(*by_host.values())
    missing = sorted(set(range(size)) - seen) if size else []
    hosts_expected, hosts_from = _hosts_expected(ranked)
    missing_hosts = max(0, hosts_expected - len(by_host)) if hosts_expected else 0
    launched = [] if seen or inside else _launchers_run(run)
    return {
        "partial": bool(missing or missing_hosts or launched),
        "launcher": next((d.get("source") for _, d in ranked if d.get("source")), None),
        "ranks_expected": size,
        "ranks_seen": len(seen),
        "missing_ranks": missing,
        # In rank order: the hosts of the lowest ranks first, those without a rank last.
        "hosts": sorted(set(run.hosts) | set(by_host), key=lambda h: (h not in by_host, min(by_host.get(h, [0])), h)),
        "ranks_by_host": {host: sorted(ranks) for host, ranks in sorted(by_host.items(), key=lambda kv: min(kv[1]))},
        "hosts_expected": hosts_expected,
        "hosts_expected_from": hosts_from,
        "missing_hosts": missing_hosts,
        "inside_rank": own["rank"] if inside else None,
        "launched_by": launched,
    }


def _launchers_run(run) -> list[str]:
    """The MPI launchers CMD ran, by name: those the sampler saw run, else (no sampler) those CMD's words name."""
    words = [w for record in run.sampled if record.get("kind") in ("seen", "exec")
             for w in (record.get("cmdline") or [])[:1]]
    if not run.sampled:
        words = [token for word in run.meta.get("command") or [] for token in str(word).split()]
    return sorted({name for name in map(os.path.basename, map(str, words)) if name in MPI_LAUNCHERS})


def _hosts_expected(ranked: list[tuple[str, dict]]) -> tuple[int | None, str | None]:
    """How many hosts the ranks' launcher says the job has, and the variable that says it."""
    counts = []
    for _, d in ranked:
        name = HOST_COUNT_VARS.get(d.get("source"))
        value = (d.get("env") or {}).get(name, "") if name else ""
        if value.isdigit() and 0 < int(value) <= MAX_WORLD_SIZE:
            counts.append((int(value), name))
    return max(counts, default=(None, None))
