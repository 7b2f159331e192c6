"""The host's NUMA nodes and CPUs, as the kernel reports them in sysfs, read
through writerprof.record.system. `record` (and each host's agent) writes one
snapshot per host into the run directory, so that the analysis can put every
sampled CPU and shared-memory page on a node without the host; what it reads
out of a snapshot is in writerprof.run.topology."""

from __future__ import annotations

import re

from writerprof.record import vmstat
from writerprof.record.system import HOST, System
from writerprof.run.topology import SCHEMA
from writerprof.units import parse_cpu_list

_NODE = "/sys/devices/system/node"
_CPU = "/sys/devices/system/cpu"


def snapshot(system: System = HOST) -> dict:
    """Nodes (CPUs, distances, memory), CPUs (node, package, core, SMT siblings)
    and the CPU model, JSON-serialisable. A file that is missing or unreadable
    gives None or an empty value, never an exception."""
    online = _cpu_list(system.read(f"{_CPU}/online"))
    numa = system.is_dir(_NODE)
    if numa:
        node_ids = _cpu_list(system.read(f"{_NODE}/online"))  # nodes use the CPU-list format
        nodes = {str(node): _node(system, node, node_ids) for node in node_ids}
    else:
        # A kernel built without NUMA: the whole machine is node 0.
        meminfo = system.read("/proc/meminfo")
        nodes = {"0": {"cpus": online, "distances": {"0": 10},
                       "memory_total_bytes": _memory(meminfo, "MemTotal"),
                       "memory_free_bytes": _memory(meminfo, "MemFree")}}
    node_of = {cpu: int(node) for node, info in nodes.items() for cpu in info["cpus"]}
    cpus = {str(cpu): _cpu(system, cpu, node_of.get(cpu)) for cpu in online}
    model = re.search(r"^model name\s*:\s*(.*)$", system.read("/proc/cpuinfo") or "", re.MULTILINE)
    return {
        "schema": SCHEMA,
        "numa": numa,
        "nodes": nodes,
        "cpus": cpus,
        "online_cpus": online,
        "cpu_model": model.group(1).strip() if model else None,
        "smt": any(len(cpu["siblings"]) > 1 for cpu in cpus.values()),
        "numa_balancing": vmstat.numa_balancing(system),  # pages may move under the recording
    }


def _node(system: System, node: int, node_ids: list[int]) -> dict:
    base = f"{_NODE}/node{node}"
    # The kernel writes one distance per online node, in node order; a count
    # that does not match (a node went on- or offline between reads) says nothing.
    values = [_int(value) for value in (system.read(f"{base}/distance") or "").split()]
    meminfo = system.read(f"{base}/meminfo")
    return {
        "cpus": _cpu_list(system.read(f"{base}/cpulist")),
        "distances": ({str(other): value for other, value in zip(node_ids, values)}
                      if len(values) == len(node_ids) else {}),
        "memory_total_bytes": _memory(meminfo, "MemTotal"),
        "memory_free_bytes": _memory(meminfo, "MemFree"),
    }


def _cpu(system: System, cpu: int, node: int | None) -> dict:
    base = f"{_CPU}/cpu{cpu}/topology"
    return {
        "node": node,
        "package": _int(system.read(f"{base}/physical_package_id")),
        "core": _int(system.read(f"{base}/core_id")),
        "siblings": _cpu_list(system.read(f"{base}/thread_siblings_list")),
    }


def _cpu_list(text: str | None) -> list[int]:
    """Sorted CPUs (or nodes); [] for a missing file, or text that is not a CPU
    list, such as a memory-only node's empty cpulist."""
    try:
        return sorted(parse_cpu_list(text)) if text else []
    except ValueError:
        return []


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _memory(meminfo: str | None, field: str) -> int | None:
    """Bytes of `field` in /proc/meminfo ("MemTotal:  24683568 kB") or a node's
    meminfo ("Node 0 MemTotal:  1951988 kB")."""
    match = re.search(rf"\b{field}:\s*(\d+) kB", meminfo or "")
    return int(match.group(1)) * 1024 if match else None
