"""Placement: where the writers and producers ran against where their
buffers' pages are, and what CPUs they were allowed."""

from __future__ import annotations

from writerprof.analysis.diagnoses.base import WARNING, Code, by_role, diagnosis, emits, nodes_text
from writerprof.analysis.processes import WORKED_FROM_THREADS, dominant
from writerprof.run import roles as run_roles
from writerprof.run import topology
from writerprof.units import format_cpu_list

# numa-mismatch: the writer (or producer) did its work mostly on one node and
# its buffers' pages are mostly on another; "mostly" is this share at least.
NUMA_MAJORITY = 0.6
# writer-migration: a writer's write time on nodes other than its main one.
MIGRATION_SHARE = 0.10
# A placement warning's cost is measured by contrast's what-ifs, not guessed:
# without them its cost_s is None and its message ends with how to measure it.
UNMEASURED = "; cost not measured: writerprof contrast --methods "
MEASURE_WITH = {"numa-mismatch": "forkserver,forkserver+local", "affinity-divergence": "forkserver,forkserver+pin"}


def unmeasured(d: dict) -> dict:
    d["cost_s"] = None
    d["message"] += UNMEASURED + MEASURE_WITH[d["code"]] + " -- CMD"
    return d


@emits(Code("numa-mismatch", (WARNING,),
            f"a writer (or producer) did ≥ {NUMA_MAJORITY:.0%} of its work (its threads' CPU time in its saves' "
            f"writes, or fill, not its start-up) on one NUMA node while ≥ {NUMA_MAJORITY:.0%} of its buffers' pages "
            f"are on another: every copy crosses the interconnect"))
def numa_mismatch(run, procs, saves):
    out = []
    for proc in by_role(procs, run_roles.WRITER) + by_role(procs, run_roles.PRODUCER):
        ran = proc["worked_nodes"]
        ran_node, ran_share = dominant(ran)
        buf_node, buf_share = dominant(proc["buffer_nodes"])
        if ran_node is None or buf_node is None or ran_node == buf_node:
            continue
        if ran_share < NUMA_MAJORITY or buf_share < NUMA_MAJORITY:
            continue
        work = "wrote" if proc["role"] == run_roles.WRITER else "generated"
        copies = "copies from" if proc["role"] == run_roles.WRITER else "fills"
        out.append(unmeasured(diagnosis(
            "numa-mismatch", proc,
            f"{proc['role']} pid {proc['pid']} {work} on node {ran_node} ({ran_share:.0%} of its time) "
            f"but the buffers it {copies} are on node {buf_node} ({buf_share:.0%} of their pages): "
            f"every chunk crosses the interconnect" + _threads_text(proc),
            {"run_node": ran_node, "run_nodes": ran, "buffer_node": buf_node,
             "buffer_nodes": proc["buffer_nodes"], "allowed_cpus": proc["allowed_cpus"],
             "from": proc["worked_nodes_from"], **_sources(proc)})))
    return out


def _sources(proc) -> dict:
    """The threads that did the work, and the hooked calls' CPUs as a second
    source where the threads' CPU time is the first."""
    out = {"threads": [{k: t[k] for k in ("tid", "name", "cpu_s", "nodes")} for t in proc.get("threads") or []]}
    if proc["worked_nodes_from"] == WORKED_FROM_THREADS and proc["work_nodes"]:
        out["calls_nodes"] = proc["work_nodes"]  # WORKED_FROM_CALLS
    return out


def _threads_text(proc) -> str:
    """The busiest threads, where they are what the work was judged by."""
    if proc["worked_nodes_from"] != WORKED_FROM_THREADS or not proc.get("threads"):
        return ""
    shown = [f"tid {t['tid']}" + (f" ({t['name']})" if t["name"] else "")
             + f" {t['cpu_s']:.2f} s on node {dominant(t['nodes'])[0]}" for t in proc["threads"][:4]]
    return "; the threads that worked: " + ", ".join(shown)


@emits(Code("affinity-divergence", (WARNING,),
            "a writer started with allowed CPUs other than its producer's: it inherited the forkserver daemon's "
            "(frozen when the daemon started), not the rank's binding"))
def affinity_divergence(run, procs, saves):
    out = []
    by_id = {p["id"]: p for p in procs}
    for save in saves:
        if save["writer"] is None:
            continue
        writer, producer = by_id[save["writer"]], by_id[save["producer"]]
        mask = _mask_at(producer, save["start_s"])
        if not writer["allowed_cpus"] or not mask or writer["allowed_cpus"] == mask:
            continue
        parent = by_id.get(writer["parent"]) if writer["parent"] is not None else None
        nodes = _nodes_of(run, writer["host"], writer["allowed_cpus"])
        extra = sorted(set(nodes) - set(_nodes_of(run, producer["host"], mask)))
        via = f" (inherited from the {parent['role']}, pid {parent['pid']})" if parent and parent is not producer else ""
        out.append(unmeasured(diagnosis(
            "affinity-divergence", writer,
            f"writer pid {writer['pid']} (save {save['save']}) may run on CPUs {_cpus(writer['allowed_cpus'])}"
            f"{via}, its producer on {_cpus(mask)}"
            + (f": it spans node {', '.join(map(str, extra))}, which the producer is not bound to" if extra else ""),
            {"writer_cpus": writer["allowed_cpus"], "producer_cpus": mask, "start_method": save["start_method"],
             "inherited_from": parent["role"] if parent else None, "extra_nodes": extra, "save": save["save"]})))
    return out


@emits(Code("writer-migration", (WARNING,),
            f"≥ {MIGRATION_SHARE:.0%} of a writer's write time ran on nodes other than its main one: "
            f"the scheduler moved it"))
def writer_migration(run, procs, saves):
    out = []
    for proc in by_role(procs, run_roles.WRITER):
        ran = proc["worked_nodes"]
        if len(ran) < 2:
            continue
        node, share = dominant(ran)
        if 1 - share < MIGRATION_SHARE:
            continue
        out.append(diagnosis(
            "writer-migration", proc,
            f"writer pid {proc['pid']} moved across nodes during its loop: {nodes_text(ran)}",
            {"nodes": ran, "allowed_cpus": proc["allowed_cpus"],
             "from": proc["worked_nodes_from"]}))
    return out


def _cpus(cpus) -> str:
    return format_cpu_list(cpus)


def _nodes_of(run, host, cpus) -> list[int]:
    nodes = topology.cpu_nodes(run.topology[host]) if host in run.topology else {}
    return sorted({nodes[c] for c in cpus if c in nodes})


def _mask_at(proc, t_s: float) -> list[int]:
    """The process's allowed CPUs at t_s (the summary's time line): its last
    recorded change before then."""
    mask = proc["allowed_cpus"]
    for change in proc["affinity_changes"]:
        if change["t_s"] <= t_s:
            mask = change["cpus"]
    return mask
