"""A launcher's CPU binding (mpirun --bind-to core, srun --cpu-bind, Hydra's
-bind-to) as the ranks' writers inherit it: per rank, the CPUs its producer
started with when they are fewer than its host's, and whether its writers
started with the same CPUs (under fork directly, under forkserver through the
rank's own forkserver, which inherited them too).

And the one rule by which ranks' placements compare: by shape, not by CPU
number. One core per rank (srun --cpu-bind=cores, mpirun --bind-to core) is
alike on every rank although each has a core of its own."""

from __future__ import annotations

from writerprof.run import roles as run_roles
from writerprof.run.topology import cpu_cores, cpu_nodes

# Where a rank's writers worked, against the nodes of their CPUs; where their
# buffers' pages are, against the writers' node (the dominant one of each).
WRITERS_ON_THEIR_CPUS_NODES = "on their CPUs' nodes"
WRITERS_OFF_THEIR_CPUS_NODES = "off their CPUs' nodes"
BUFFERS_ON_WRITERS_NODE = "on the writers' node"
BUFFERS_ON_ANOTHER_NODE = "on another node than the writers'"
# The parts of a shape that ranks are compared by, and each one's fields.
ASPECTS = {"binding": ("bound", "cpus", "cores", "nodes"), "writers": ("writers",), "buffers": ("buffers",)}


def bound(cpus, host_cpus: int) -> bool:
    """Whether a process's CPUs are part of its host's only: a binding (the launcher's, or its own)."""
    return 0 < len(cpus) < host_cpus


class Host:
    """A host's CPUs as shapes count them: their number, and each one's node and core."""

    def __init__(self, topology: dict):
        self.node_of, self.core_of = cpu_nodes(topology), cpu_cores(topology)
        self.cpus = len(self.node_of)

    def shape(self, cpus, writer_node: int | None, buffer_node: int | None) -> dict:
        """What of writers' placement compares across ranks: bound or not, how
        many CPUs, cores and nodes, whether the writers worked on their CPUs'
        nodes, and whether the buffers are on the writers' node (None: not
        measured)."""
        nodes = {self.node_of[c] for c in cpus if c in self.node_of}
        writers = (None if writer_node is None or not nodes else
                   WRITERS_ON_THEIR_CPUS_NODES if writer_node in nodes else WRITERS_OFF_THEIR_CPUS_NODES)
        buffers = (None if None in (writer_node, buffer_node) else
                   BUFFERS_ON_WRITERS_NODE if buffer_node == writer_node else BUFFERS_ON_ANOTHER_NODE)
        return {"bound": bound(cpus, self.cpus), "cpus": len(cpus),
                "cores": len({self.core_of.get(c, (c,)) for c in cpus}), "nodes": len(nodes),
                "writers": writers, "buffers": buffers}


def aspect(shape: dict, name: str) -> tuple:
    """The part `name` of ASPECTS of a shape: shapes alike in it are alike in every field of it."""
    return tuple(shape[field] for field in ASPECTS[name])


def launcher_binding(procs: list[dict], topology: dict) -> list[dict]:
    """[{host, rank, pid, cpus, host_cpus, writers_inherit, writer_cpus}] for the
    ranks whose producer started bound to part of its host. topology: the
    run's snapshots, per host."""
    host_cpus = {host: Host(t).cpus for host, t in topology.items()}
    out = []
    for producer in procs:
        if producer["role"] != run_roles.PRODUCER or producer["rank"] is None:
            continue
        mask, cpus = producer["inherited_cpus"], host_cpus.get(producer["host"], 0)
        if not bound(mask, cpus):
            continue
        writers = [p for p in procs if p["role"] == run_roles.WRITER and p["host"] == producer["host"]
                   and p["rank"] == producer["rank"]]
        masks = sorted({tuple(w["inherited_cpus"]) for w in writers if w["inherited_cpus"]})
        out.append({"host": producer["host"], "rank": producer["rank"], "pid": producer["pid"], "cpus": mask,
                    "host_cpus": cpus, "writers_inherit": bool(masks) and masks == [tuple(mask)],
                    "writer_cpus": [list(m) for m in masks]})
    return sorted(out, key=lambda b: (b["rank"], b["host"]))
