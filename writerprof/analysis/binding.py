"""A launcher's CPU binding (mpirun --bind-to core, srun --cpu-bind, Hydra's
-bind-to) as the ranks' writers inherit it: per rank, the CPUs its producer
started with when they are fewer than its host's, and whether its writers
started with the same CPUs (under fork directly, under forkserver through the
rank's own forkserver, which inherited them too)."""

from __future__ import annotations

from writerprof.run import roles as run_roles


def launcher_binding(procs: list[dict], topology: dict) -> list[dict]:
    """[{host, rank, pid, cpus, host_cpus, writers_inherit, writer_cpus}] for the
    ranks whose producer started bound to part of its host."""
    out = []
    for producer in procs:
        if producer["role"] != run_roles.PRODUCER or producer["rank"] is None:
            continue
        mask, host_cpus = producer["inherited_cpus"], topology.get(producer["host"], {}).get("cpus")
        if not mask or not host_cpus or len(mask) >= host_cpus:
            continue
        writers = [p for p in procs if p["role"] == run_roles.WRITER and p["host"] == producer["host"]
                   and p["rank"] == producer["rank"]]
        masks = sorted({tuple(w["inherited_cpus"]) for w in writers if w["inherited_cpus"]})
        out.append({"host": producer["host"], "rank": producer["rank"], "pid": producer["pid"], "cpus": mask,
                    "host_cpus": host_cpus, "writers_inherit": bool(masks) and masks == [tuple(mask)],
                    "writer_cpus": [list(m) for m in masks]})
    return sorted(out, key=lambda b: (b["rank"], b["host"]))
