"""The simulated machine: a topology snapshot like writerprof.record.topology's, and
the CPU masks and picks the timeline makes on it."""

from __future__ import annotations

from writerprof.run import topology as topology_module
from writerprof.units import format_cpu_list


def make_topology(nodes: int = 2, cpus_per_node: int = 8, smt: bool = True) -> dict:
    """A writerprof.record.topology.snapshot() of a machine with one package per node:
    with smt, cpu N and N + nodes*cores are siblings, as Linux numbers them
    (2 x 8 with smt is the tests' numa2 fixture)."""
    threads = 2 if smt else 1
    cores = cpus_per_node // threads
    where = {thread * nodes * cores + node * cores + core: (node, core)
             for thread in range(threads) for node in range(nodes) for core in range(cores)}
    online = sorted(where)
    siblings = {(node, core): sorted(c for c, w in where.items() if w == (node, core))
                for node, core in set(where.values())}
    return {
        "schema": topology_module.SCHEMA,
        "numa": True,
        "nodes": {str(node): {"cpus": sorted(c for c, w in where.items() if w[0] == node),
                              "distances": {str(other): 10 if other == node else 21 for other in range(nodes)},
                              "memory_total_bytes": 32 << 30, "memory_free_bytes": 30 << 30}
                  for node in range(nodes)},
        "cpus": {str(cpu): {"node": where[cpu][0], "package": where[cpu][0], "core": where[cpu][1],
                            "siblings": siblings[where[cpu]]} for cpu in online},
        "online_cpus": online,
        "cpu_model": "Synthetic CPU (writerprof.synthetic)",
        "smt": smt,
        "numa_balancing": 0,  # a scenario's pages_migrated_per_save turns it on
    }


class Machine:
    """Every host's machine (they are alike): its CPUs and nodes."""

    def __init__(self, topo: dict):
        self.topology = topo
        self.node_of = topology_module.cpu_nodes(topo)
        self.online = tuple(sorted(int(c) for c in topo["cpus"]))
        self.node_cpus = {int(n): tuple(info["cpus"]) for n, info in topo["nodes"].items()}

    def mask(self, cpus, what: str) -> tuple[int, ...]:
        if cpus is None:
            return self.online
        outside = set(cpus) - set(self.online)
        if outside or not cpus:
            raise ValueError(f"{what} {format_cpu_list(cpus) or '(empty)'}: not within the online "
                             f"CPUs {format_cpu_list(self.online)}")
        return tuple(cpus)

    def on_node(self, mask, node: int, what: str) -> tuple[int, ...]:
        if node not in self.node_cpus:
            raise ValueError(f"{what} node {node}: the machine has nodes {sorted(self.node_cpus)}")
        cpus = tuple(c for c in mask if self.node_of.get(c) == node)
        if not cpus:
            raise ValueError(f"{what} node {node}: none of CPUs {format_cpu_list(mask)} is on it")
        return cpus

    def pick(self, mask, node: int | None, k: int) -> int:
        """A CPU of `mask`, on `node` where the mask has one there."""
        cpus = [c for c in mask if self.node_of.get(c) == node] or list(mask)
        return cpus[k % len(cpus)]
