"""A host's topology snapshot as recorded in its topology.json (taken by
writerprof.record.topology.snapshot): its schema, and what the analysis reads
out of it. Pure functions over the snapshot dict; nothing here reads the host."""

from __future__ import annotations

SCHEMA = 1


def cpu_nodes(topology: dict) -> dict[int, int]:
    """CPU -> node, from a snapshot (or its JSON round trip); CPUs on no node are left out."""
    return {int(cpu): info["node"] for cpu, info in topology.get("cpus", {}).items()
            if info["node"] is not None}


def cpu_cores(topology: dict) -> dict[int, tuple[int, ...]]:
    """CPU -> its core, named by the SMT siblings that share it (a CPU whose
    siblings were not read is a core of its own)."""
    return {int(cpu): tuple(info.get("siblings") or [int(cpu)]) for cpu, info in topology.get("cpus", {}).items()}
