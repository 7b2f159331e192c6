"""Diagnoses: each a pure function of the process table and the saves, firing
only on measured data, with the numbers it used as evidence and, where the
critical path gives one, its cost in seconds. Thresholds are named below.

Each check declares the codes it reports next to it (@emits): their severity
and their meaning in one line, its thresholds in it. CODES collects them: the
one place that says what each code means (the notebooks show it from there).

Severity: "warning" costs throughput or is a hazard; "info" says what bounds
a run that is otherwise healthy (a checkpoint is meant to be I/O-bound).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from writerprof.analysis.processes import dominant
from writerprof.analysis.samples import sample_rows
from writerprof.analysis.saves import index
from writerprof.analysis.shapes import Diagnosis
from writerprof.run import roles as run_roles
from writerprof.run import topology
from writerprof.units import format_cpu_list

# numa-mismatch: the writer (or producer) did its work mostly on one node and
# its buffers' pages are mostly on another; "mostly" is this share at least.
NUMA_MAJORITY = 0.6
# writer-migration: a writer's write time on nodes other than its main one.
MIGRATION_SHARE = 0.10
# writer-startup: Process.start() to first write, as a share of the save.
STARTUP_SHARE = 0.20
# main-reimport: the re-run of __main__ on the critical path, share of the save time.
REIMPORT_SHARE = 0.02
# generation-bound: the writer waited for chunks this share of its loop;
# writer-bound: the producer waited on the full queue this share of its loop.
WAIT_SHARE = 0.5
# writer-bound says "I/O-bound" when writes and fsync are this share of the save.
IO_SHARE = 0.5
# queue-stall: both sides waited at once (the queue itself) this share of the save.
QUEUE_SHARE = 0.10
# cpu-oversubscription: the recorded processes wanted this share of their
# allowed CPUs during the saves, and were preempted this often per CPU-second.
DEMAND_SHARE = 0.95
PREEMPTIONS_PER_CPU_S = 200
# page-fault-storm: faults in hooked calls per page of the process's own
# buffers; mapping a page costs at most one fault (fault-around makes it less).
# FAULTS_FLOOR more than that at least: a few faults on tiny buffers are no storm.
FAULTS_PER_PAGE = 2.0
FAULTS_FLOOR = 1000
PAGE = 4096
# fsync-bound: the final flush on the critical path, share of the save time.
FSYNC_SHARE = 0.30

WARNING, INFO = "warning", "info"
SEVERITIES = (WARNING, INFO)  # the order reports list them in


@dataclass(frozen=True)
class Code:
    """A diagnosis code, as its check declares it."""

    code: str
    severities: tuple[str, ...]  # the ones it is reported with, the usual one first
    meaning: str  # one line: when it fires and what it says


def emits(*codes: Code):
    """Declare, on a check, the codes it reports."""
    def declare(check):
        check.codes = codes
        return check
    return declare


def diagnose(run, procs: list[dict], saves: list[dict]) -> list[Diagnosis]:
    found = []
    for check in CHECKS:
        found += check(run, procs, saves)
    order = {severity: i for i, severity in enumerate(SEVERITIES)}
    return sorted(found, key=lambda d: (order[d["severity"]], -(d.get("cost_s") or 0), d["code"]))


def _diagnosis(code, proc, message, evidence, cost_s=None, severity=None) -> Diagnosis:
    """severity: where its check decides between the code's severities (default: the usual one)."""
    declared = CODES[code].severities  # an undeclared code fails here, in every test
    if severity is None:
        severity = declared[0]
    elif severity not in declared:
        raise ValueError(f"{code} is not declared with severity {severity!r} (only {', '.join(declared)})")
    out = {"code": code, "severity": severity, "host": proc["host"] if proc else None,
           "pid": proc["pid"] if proc else None, "rank": proc["rank"] if proc else None,
           "message": message, "evidence": evidence}
    if cost_s is not None:
        out["cost_s"] = cost_s
    return out


def _nodes(share: dict) -> str:
    return ", ".join(f"node {n} {v:.0%}" for n, v in share.items())


def _by_role(procs, role):
    return [p for p in procs if p["role"] == role]


@emits(Code("numa-mismatch", (WARNING,),
            f"a writer (or producer) did ≥ {NUMA_MAJORITY:.0%} of its work (its hooked calls' CPUs, else the "
            f"sampler's) on one NUMA node while ≥ {NUMA_MAJORITY:.0%} of its buffers' pages are on another: "
            f"every copy crosses the interconnect"))
def numa_mismatch(run, procs, saves):
    out = []
    for proc in _by_role(procs, run_roles.WRITER) + _by_role(procs, run_roles.PRODUCER):
        ran = proc["worked_nodes"]
        ran_node, ran_share = dominant(ran)
        buf_node, buf_share = dominant(proc["buffer_nodes"])
        if ran_node is None or buf_node is None or ran_node == buf_node:
            continue
        if ran_share < NUMA_MAJORITY or buf_share < NUMA_MAJORITY:
            continue
        work = "wrote" if proc["role"] == run_roles.WRITER else "generated"
        copies = "copies from" if proc["role"] == run_roles.WRITER else "fills"
        out.append(_diagnosis(
            "numa-mismatch", proc,
            f"{proc['role']} pid {proc['pid']} {work} on node {ran_node} ({ran_share:.0%} of its time) "
            f"but the buffers it {copies} are on node {buf_node} ({buf_share:.0%} of their pages): "
            f"every chunk crosses the interconnect",
            {"run_node": ran_node, "run_nodes": ran, "buffer_node": buf_node,
             "buffer_nodes": proc["buffer_nodes"], "allowed_cpus": proc["allowed_cpus"],
             "from": proc["worked_nodes_from"]}))
    return out


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
        out.append(_diagnosis(
            "affinity-divergence", writer,
            f"writer pid {writer['pid']} (save {save['save']}) may run on CPUs {_cpus(writer['allowed_cpus'])}"
            f"{via}, its producer on {_cpus(mask)}"
            + (f": it spans node {', '.join(map(str, extra))}, which the producer is not bound to" if extra else ""),
            {"writer_cpus": writer["allowed_cpus"], "producer_cpus": mask, "start_method": save["start_method"],
             "inherited_from": parent["role"] if parent else None, "extra_nodes": extra, "save": save["save"]}))
    return out


@emits(Code("writer-migration", (WARNING,),
            f"≥ {MIGRATION_SHARE:.0%} of a writer's write time ran on nodes other than its main one: "
            f"the scheduler moved it"))
def writer_migration(run, procs, saves):
    out = []
    for proc in _by_role(procs, run_roles.WRITER):
        ran = proc["worked_nodes"]
        if len(ran) < 2:
            continue
        node, share = dominant(ran)
        if 1 - share < MIGRATION_SHARE:
            continue
        out.append(_diagnosis(
            "writer-migration", proc,
            f"writer pid {proc['pid']} moved across nodes during its loop: {_nodes(ran)}",
            {"nodes": ran, "allowed_cpus": proc["allowed_cpus"],
             "from": proc["worked_nodes_from"]}))
    return out


@emits(Code("writer-startup", (WARNING,),
            f"Process.start() to the writer's first write is ≥ {STARTUP_SHARE:.0%} of the save; broken into "
            f"phases, its cost is its time on the critical path"))
def writer_startup(run, procs, saves):
    out = []
    for group in _per_producer(saves):
        timed = [s for s in group if s["startup_s"] is not None and s["duration_s"] > 0]
        if not timed:
            continue
        startup = float(np.mean([s["startup_s"] for s in timed]))
        duration = float(np.mean([s["duration_s"] for s in timed]))
        if startup / duration < STARTUP_SHARE:
            continue
        phases = {p: float(np.mean([s["startup"][p] for s in timed])) for p in timed[0]["startup"]}
        cost = sum(s["critical_path"][c] for s in timed for c in s["critical_path"] if c.startswith("startup:"))
        top = max(phases, key=phases.get)
        out.append(_diagnosis(
            "writer-startup", _producer_of(procs, group),
            f"writer start-up (Process.start() to first write) takes {startup:.3f} s of a {duration:.3f} s "
            f"save ({startup / duration:.0%}), most of it in {top} ({phases[top]:.3f} s); "
            f"{cost / len(timed):.3f} s per save on the critical path",
            {"startup_s": startup, "save_s": duration, "phases_s": phases, "saves": len(timed),
             "start_method": timed[0]["start_method"]}, cost_s=cost))
    return out


@emits(Code("main-reimport", (WARNING,),
            f"the children's re-run of the parent's __main__ is ≥ {REIMPORT_SHARE:.0%} of the save time on the "
            f"critical path: a heavy entry script paid once per writer"))
def main_reimport(run, procs, saves):
    out = []
    by_id = {p["id"]: p for p in procs}
    for group in _per_producer(saves):
        reran = [s for s in group if s["startup"].get("main_rerun")]
        if not reran:
            continue
        per_writer = float(np.mean([s["startup"]["main_rerun"] for s in reran]))
        cost = sum(s["critical_path"].get("startup:main_rerun", 0.0) for s in reran)
        total = sum(s["duration_s"] for s in reran)
        if cost / total < REIMPORT_SHARE:
            continue
        writer = by_id[reran[0]["writer"]]
        out.append(_diagnosis(
            "main-reimport", _producer_of(procs, group),
            f"every {reran[0]['start_method']} writer re-runs the parent's __main__ before its target: "
            f"{per_writer:.3f} s per writer, {cost / len(reran):.3f} s per save on the critical path "
            f"({cost:.2f} s in all, {cost / total:.0%} of the save time; Python {writer['python']})",
            {"per_writer_s": per_writer, "critical_s": cost, "writers": len(reran),
             "python": writer["python"], "start_method": reran[0]["start_method"],
             "main": _main_path(run, reran[0])}, cost_s=cost))
    return out


@emits(Code("fork-with-threads", (WARNING, INFO),
            "a writer was forked while other threads were live: a lock one of them held stays locked in the "
            "child, a deadlock hazard (warning for Python threads, info when only native ones, a BLAS pool say)"))
def fork_with_threads(run, procs, saves):
    out = []
    by_id = {p["id"]: p for p in procs}
    forked = {(s["producer"]) for s in saves if s["start_method"] == "fork"}
    for row in forked:
        for kind, data in index(run).events[row]:
            if kind == "fork" and (data.get("native_threads") or 0) > 1:
                proc = by_id[row]
                # Python threads hold Python-level locks (logging, I/O buffers) that
                # nothing resets in the child; a native pool (BLAS) usually has
                # its own at-fork handlers: a hazard worth knowing, not a warning.
                severity = WARNING if (data.get("python_threads") or 0) > 1 else INFO
                out.append(_diagnosis(
                    "fork-with-threads", proc,
                    f"producer pid {proc['pid']} forked a writer with {data['native_threads']} live native "
                    f"threads, {data.get('python_threads')} of them Python's ({', '.join(data.get('threads') or [])}): "
                    f"a lock another thread held at the fork stays locked in the child (a deadlock hazard "
                    f"for writers that use thread-based storage libraries)",
                    {"native_threads": data["native_threads"], "python_threads": data.get("python_threads"),
                     "threads": data.get("threads"), "forking_thread": data.get("forking_thread")},
                    severity=severity))
                break
    return out


@emits(Code("generation-bound", (INFO,),
            f"the writers waited for chunks ≥ {WAIT_SHARE:.0%} of their loop: data generation sets the pace, "
            f"not storage"),
       Code("writer-bound", (INFO,),
            f"the producer waited on the full queue ≥ {WAIT_SHARE:.0%} of its loop: the writer sets the pace "
            f"(I/O-bound when its writes and fsync are ≥ {IO_SHARE:.0%} of the save)"),
       Code("queue-stall", (WARNING,),
            f"producer and writer both waited on the queue at once for ≥ {QUEUE_SHARE:.0%} of the save: "
            f"chunks are slow to cross the queue"))
def pipeline_balance(run, procs, saves):
    """generation-bound, writer-bound and queue-stall, from the two sides' waits."""
    out = []
    for group in _per_producer(saves):
        proc = _producer_of(procs, group)
        timed = [s for s in group if s["writer"] is not None and s["duration_s"] > 0]
        if not timed:
            continue
        loop = sum(s["write_s"] + s["get_wait_s"] + s["fsync_s"] + s["close_s"] + s["fadvise_s"] for s in timed)
        get_wait = sum(s["get_wait_s"] for s in timed)
        producer_loop = sum(s["gen_s"] + s["put_wait_s"] for s in timed)
        put_wait = sum(s["put_wait_s"] for s in timed)
        queue = sum(s["critical_path"]["queue"] for s in timed)
        total = sum(s["duration_s"] for s in timed)
        evidence = {"gen_s": sum(s["gen_s"] for s in timed), "put_wait_s": put_wait, "get_wait_s": get_wait,
                    "write_s": sum(s["write_s"] for s in timed), "saves": len(timed)}
        if loop and get_wait / loop >= WAIT_SHARE:
            out.append(_diagnosis(
                "generation-bound", proc,
                f"the writers waited for chunks {get_wait / loop:.0%} of their loop ({get_wait:.2f} s): "
                f"data generation sets the pace, not storage",
                dict(evidence, get_wait_share=get_wait / loop)))
        elif producer_loop and put_wait / producer_loop >= WAIT_SHARE:
            write = sum(s["critical_path"]["write"] + s["critical_path"]["fsync"] for s in timed)
            out.append(_diagnosis(
                "writer-bound", proc,
                f"the producer waited on a full queue {put_wait / producer_loop:.0%} of its loop "
                f"({put_wait:.2f} s): the writer sets the pace"
                + (", in its writes and fsync: the save is I/O-bound" if write >= IO_SHARE * total else ""),
                dict(evidence, put_wait_share=put_wait / producer_loop, io_share=write / total)))
        if queue / total >= QUEUE_SHARE:
            out.append(_diagnosis(
                "queue-stall", proc,
                f"producer and writer both waited on the queue at once for {queue:.2f} s "
                f"({queue / total:.0%} of the save time): chunks are slow to cross the queue",
                dict(evidence, queue_s=queue), cost_s=queue))
    return out


@emits(Code("cpu-oversubscription", (WARNING,),
            f"a host's producers and writers wanted ≥ {DEMAND_SHARE:.0%} of their allowed CPUs during the saves "
            f"and were preempted ≥ {PREEMPTIONS_PER_CPU_S} times per CPU-second: they queue for CPUs"))
def cpu_oversubscription(run, procs, saves):
    out = []
    working, spans_of = defaultdict(list), defaultdict(list)
    for p in procs:
        if p["role"] in (run_roles.WRITER, run_roles.PRODUCER):
            working[p["host"]].append(p)
    for s in saves:
        spans_of[s["host"]].append((s["start_ns"], s["end_ns"]))
    steps = _cpu_steps(run, [p["id"] for mine in working.values() for p in mine])
    for host in run.hosts:
        mine, spans = working[host], spans_of[host]
        if not mine or not spans:
            continue
        demand = _cpu_demand(steps.get(host), spans)
        cpus = sorted({c for p in mine for c in p["allowed_cpus"]})
        cpu_s = sum(p["cpu_s"] or 0 for p in mine)
        switches = sum(p["nonvoluntary_switches"] or 0 for p in mine)
        if demand is None or not cpu_s or not cpus:
            continue
        rate = switches / cpu_s
        threads = max((p["threads_max"] or 0) for p in mine)
        if demand >= DEMAND_SHARE * len(cpus) and rate >= PREEMPTIONS_PER_CPU_S:
            out.append(_diagnosis(
                "cpu-oversubscription", None,
                f"on {host} the producers and writers wanted {demand:.2f} of their {len(cpus)} allowed CPUs "
                f"during the saves and were preempted {rate:.0f} times per CPU-second: they queue for CPUs",
                {"host": host, "cpu_demand": demand, "allowed_cpus": cpus, "preemptions_per_cpu_s": rate,
                 "nonvoluntary_switches": switches, "threads_max": threads}))
    return out


@emits(Code("page-fault-storm", (WARNING,),
            f"a producer's or writer's hooked calls took more than {FAULTS_PER_PAGE:g} page faults per page of "
            f"its buffers (+{FAULTS_FLOOR}; mapping a page costs at most 1): pages are being re-faulted"))
def page_fault_storm(run, procs, saves):
    out = []
    faults = _call_faults(run)
    pages = _buffer_pages(run)
    for proc in procs:
        own = pages.get(proc["id"], 0)
        count = faults.get(proc["id"], 0)
        if proc["role"] not in (run_roles.WRITER, run_roles.PRODUCER) or not own:
            continue
        if count > FAULTS_PER_PAGE * own + FAULTS_FLOOR:
            out.append(_diagnosis(
                "page-fault-storm", proc,
                f"{proc['role']} pid {proc['pid']} took {count} page faults in its hooked calls, "
                f"{count / own:.1f} per page of its {own * PAGE / 2**20:.0f} MiB of buffers "
                f"(mapping costs at most 1): pages are being re-faulted",
                {"faults": count, "buffer_pages": own, "faults_per_page": count / own}))
    return out


@emits(Code("fsync-bound", (INFO,),
            f"the final fsync is ≥ {FSYNC_SHARE:.0%} of the save time: the device's flush dominates"))
def fsync_bound(run, procs, saves):
    out = []
    for group in _per_producer(saves):
        fsync = sum(s["critical_path"]["fsync"] for s in group)
        total = sum(s["duration_s"] for s in group)
        if total and fsync / total >= FSYNC_SHARE:
            out.append(_diagnosis(
                "fsync-bound", _producer_of(procs, group),
                f"the final fsync is {fsync / total:.0%} of the save time ({fsync / len(group):.3f} s per "
                f"save): the device's flush dominates",
                {"fsync_s": fsync, "save_s": total, "saves": len(group)}, cost_s=fsync))
    return out


CHECKS = (numa_mismatch, affinity_divergence, writer_migration, writer_startup, main_reimport,
          fork_with_threads, pipeline_balance, cpu_oversubscription, page_fault_storm, fsync_bound)
# Every code, in the order of its check: code -> its Code (severities, meaning).
CODES: dict[str, Code] = {c.code: c for check in CHECKS for c in check.codes}


def _per_producer(saves) -> list[list[dict]]:
    groups = defaultdict(list)
    for save in saves:
        groups[save["producer"]].append(save)
    return list(groups.values())


def _producer_of(procs, group):
    return procs[group[0]["producer"]]  # the table's rows are the run's processes, in order


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


def _main_path(run, save) -> str | None:
    for kind, data in index(run).events[save["writer"]]:
        if kind == "main_rerun":
            return data.get("path") or data.get("module")
    return None


def _cpu_steps(run, procs: list[int]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per host: the CPU time these processes used between two of the
    sampler's readings, and the middle of each such step."""
    rows = sample_rows(run)
    keep = np.isin(rows, procs)
    s, rows = run.samples[keep], rows[keep]
    order = np.lexsort((s["t_ns"], rows))
    s, rows = s[order], rows[order]
    same = rows[1:] == rows[:-1]  # steps between two samples of one process
    step = np.diff(s["utime_ns"] + s["stime_ns"])[same]
    mid = ((s["t_ns"][1:] + s["t_ns"][:-1]) // 2)[same]
    host = s["host_index"][1:][same]
    by_host = np.argsort(host, kind="stable")
    bounds = np.searchsorted(host[by_host], np.arange(len(run.hosts) + 1))
    return {name: (step[by_host[bounds[i]:bounds[i + 1]]], mid[by_host[bounds[i]:bounds[i + 1]]])
            for i, name in enumerate(run.hosts)}


def _cpu_demand(steps, spans) -> float | None:
    """CPUs' worth of time used while saves ran."""
    if steps is None:
        return None
    step, mid = steps
    merged = np.array(_merge(spans), dtype=np.int64).reshape(-1, 2)
    at = np.searchsorted(merged[:, 0], mid, side="right") - 1
    inside = (at >= 0) & (mid <= merged[np.maximum(at, 0), 1])
    wall = int((merged[:, 1] - merged[:, 0]).sum())
    return float(step[inside].sum()) / wall if wall else None


def _merge(spans):
    merged = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _call_faults(run) -> dict[int, int]:
    c = run.chunks
    counts = np.bincount(c["proc"], weights=c["minflt"].astype(np.int64) + c["majflt"], minlength=len(run.processes))
    return {i: int(n) for i, n in enumerate(counts)}


def _buffer_pages(run) -> dict[int, int]:
    pages: dict = defaultdict(int)
    for proc, kind, data in zip(run.events["proc"], run.events["kind"], run.events["data"]):
        if kind == "shm" and data.get("op") in ("create", "attach"):
            pages[int(proc)] += -(-int(data.get("size") or 0) // PAGE)
    return pages
