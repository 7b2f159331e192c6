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
# Memory policies that bind a process's memory to nodes it names (numa_maps's
# words); "default" and "local" allocate on the node of the CPU that asks.
NODE_POLICIES = ("bind", "interleave", "weighted interleave", "prefer", "prefer (many)")
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


def memory_bound(memory: dict | None, host_nodes: list[int]) -> bool | None:
    """Whether a process's memory is bound (its identity's "memory"): a
    policy that names nodes, or a cpuset allowing fewer nodes than its
    host's. None: not recorded."""
    if not memory or (memory.get("policy") is None and memory.get("allowed") is None):
        return None
    allowed = memory.get("allowed")
    return memory.get("policy") in NODE_POLICIES or (allowed is not None and bool(host_nodes)
                                                     and not set(host_nodes) <= set(allowed))


def per_host(procs: list[dict], topology: dict, saves: list[dict]) -> list[dict]:
    """Per host, each rank's (each producer's) CPUs and memory binding, and
    whether the writers that saved for it started with the same (under fork
    from it, under forkserver from the daemon): #201's question, "is the
    binding set?", answered for every rank. Its CPUs are those it had when it
    started its last writer (a rank that binds itself once running: the
    sampler saw it change), each writer's against those it had when that
    writer started; its memory binding, as it started. topology: the run's
    snapshots, per host."""
    writers: dict[int, set[int]] = {}
    for s in saves:
        if s["writer"] is not None and s["writer"] != s["producer"]:
            writers.setdefault(s["producer"], set()).add(s["writer"])
    places = {host: Host(t) for host, t in topology.items()}
    hosts: dict[str, list[dict]] = {}
    for row in sorted(writers.keys() | {s["producer"] for s in saves}):
        producer = procs[row]
        mine = sorted((procs[w] for w in writers.get(row, ())), key=lambda w: w["created_s"])
        hosts.setdefault(producer["host"], []).append(_rank(producer, mine, places.get(producer["host"]) or Host({})))
    empty = Host({})
    return [{"host": host, "cpus": places.get(host, empty).cpus,
             "nodes": sorted(set(places.get(host, empty).node_of.values())),
             "ranks": sorted(rows, key=lambda r: (r["rank"], r["pid"]))} for host, rows in sorted(hosts.items())]


def _rank(producer: dict, writers: list[dict], place: Host) -> dict:
    nodes = sorted(set(place.node_of.values()))
    cpus = _cpus_at(producer, writers[-1]["created_s"]) if writers else producer["inherited_cpus"]
    memory = producer.get("memory")
    other_cpus = sorted({tuple(w["inherited_cpus"]) for w in writers
                         if w["inherited_cpus"] != _cpus_at(producer, w["created_s"])})
    other_memory = [{"memory": m, "bound": memory_bound(m, nodes)}
                    for m in _distinct(w.get("memory") for w in writers) if m != memory]
    unread = memory is None or any(w.get("memory") is None for w in writers)
    return {"rank": producer["rank"], "pid": producer["pid"], "cpus": cpus, "started_cpus": producer["inherited_cpus"],
            "cpus_bound": bound(cpus, place.cpus), "cpu_nodes": sorted({place.node_of[c] for c in cpus
                                                                        if c in place.node_of}),
            "memory": memory, "memory_bound": memory_bound(memory, nodes), "writers": len(writers),
            "writers_inherit_cpus": not other_cpus if writers else None,
            "writers_inherit_memory": None if not writers or unread else not other_memory,
            "writer_cpus": [list(c) for c in other_cpus], "writer_memory": other_memory}


def _cpus_at(proc: dict, t_s: float) -> list[int]:
    """A process's allowed CPUs at a time: the sampler's last reading of a change before it, else those it started with."""
    changed = [c["cpus"] for c in proc["affinity_changes"] if c["t_s"] <= t_s]
    return changed[-1] if changed else proc["inherited_cpus"]


def _distinct(memories) -> list[dict]:
    out = []
    for m in memories:
        if m is not None and m not in out:
            out.append(m)
    return out
