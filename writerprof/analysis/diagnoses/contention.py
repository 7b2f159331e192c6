"""cpu-contention: the threads doing a save's work waited on run queues for
a CPU (their /proc/PID/task/TID/schedstat run-queue delay inside the save)
for a measured share of the save; said with who held the CPUs meanwhile:
the recorded threads that used them most, and the host's other programs
(its busy time on those CPUs, /proc/stat, less the recorded threads')."""

from __future__ import annotations

import os

import numpy as np

from writerprof.analysis import runqueue
from writerprof.analysis.components import STARTUP_PHASES
from writerprof.analysis.diagnoses.base import INFO, WARNING, Code, diagnosis, emits, per_producer, producer_of
from writerprof.analysis.threads import STACKS_THREAD, merged
from writerprof.run import roles as run_roles
from writerprof.run import topology
from writerprof.units import format_cpu_list

# cpu-contention: the save's threads waited for a CPU, on its critical path,
# this share of the save time, and this long per save at least.
CONTENTION_SHARE = 0.10
CONTENTION_FLOOR_S = 0.05
# A producer thread that made no call of the save fills for it where this
# share of its CPU time in the save fell inside the producer's gen calls (a pool).
FILL_SHARE = 0.5
NAMED = 3  # threads named in each list of the message
BIN_NS = 100_000_000  # the bins of a run whose run.json does not say its sampler's interval

# The critical path's components that are each side's own CPU work: a
# side's wait for a CPU costs the save at most these (a writer that waits
# while the producer generates costs nothing).
PRODUCER_WORK = ("setup", "startup:start", "generation")
WRITER_WORK = tuple(f"startup:{p}" for p in STARTUP_PHASES[1:-1]) + ("write", "fadvise", "fsync", "close")
_WRITER_CALLS = ("get", "write", "fadvise", "fsync", "close")  # a writer's calls (the rest are the producer's)
STACKS_NAME = STACKS_THREAD.decode()


@emits(Code("cpu-contention", (WARNING, INFO),
            f"a save's threads waited on run queues for a CPU ≥ {CONTENTION_SHARE:.0%} of the save time on its "
            f"critical path: a warning where ≥ {CONTENTION_SHARE:.0%} is the run's own threads wanting more CPUs "
            f"than they had, else info (other programs held them)"))
def cpu_contention(run, procs, saves):
    lifetime = runqueue.lifetime_waits(run)  # ({} in runs from before the readings, or where nothing waited)
    if not lifetime:
        return []
    out = []
    names = _process_names(run)
    for group in per_producer(saves):
        # What its processes waited in their lives bounds the saves' cost: most groups stop here.
        timed = [s for s in group if s["duration_s"] > 0]
        rows = {s["producer"] for s in timed} | {s["writer"] for s in timed if s["writer"] is not None}
        most = sum(lifetime.get((procs[row]["host"], procs[row]["pid"]), 0.0) for row in rows)
        n, duration = len(timed), sum(s["duration_s"] for s in timed)
        if not timed or most < CONTENTION_SHARE * duration or most < CONTENTION_FLOOR_S * n:
            continue
        found = [_save(run, procs, s) for s in timed]
        cost = sum(f["cost_s"] for f in found)
        if cost < CONTENTION_SHARE * duration or cost < CONTENTION_FLOOR_S * n:
            continue
        # The part of the delay that the run's own threads would have waited without anyone
        # else: what they wanted beyond their CPUs (held and waited), bin by bin.
        waited_for = sum(f["waited_s"] for f in found)
        own = min(sum(f["excess_s"] for f in found) / waited_for, 1.0) if waited_for else 0.0
        busy = [f["others_s"] for f in found]
        others = sum(busy) / n if None not in busy else None
        cpus = sorted({c for f in found for c in f["cpus"]})
        waited = _grouped([w for f in found for w in f["waited"]], procs, names, "wait_s", n)
        held = _grouped([h for f in found for h in f["held"]], procs, names, "cpu_s", n)
        severity = WARNING if own * cost >= CONTENTION_SHARE * duration else INFO
        holders = ", ".join(f"{h['label']} {h['cpu_s']:.2f} s" for h in held[:NAMED])
        if others is not None:
            holders += f", other programs (not recorded) {others:.2f} s per save"
        else:
            holders += " per save (what else ran on the host was not read)"
        if severity == WARNING:
            cause = (f"{own:.0%} of the delay is the run's own: its threads wanted more than the "
                     f"{len(cpus)} CPUs they could use")
        else:
            cause = (f"the run's own threads wanted more than their {len(cpus)} CPUs for {own:.0%} of the delay"
                     + (": other programs held the CPUs, the run was slowed by them, not by itself"
                        if others is not None and others * n >= cost else ""))
        out.append(diagnosis(
            "cpu-contention", producer_of(procs, group),
            f"the save's threads waited for a CPU {cost / n:.2f} s per save on its critical path "
            f"({cost / duration:.0%} of the save time, estimated from their run-queue delay): "
            + ", ".join(f"{w['label']} {w['wait_s']:.2f} s" for w in waited[:NAMED])
            + f"; CPU{'s' * (len(cpus) > 1)} {format_cpu_list(cpus)} held by {holders}; {cause}",
            {"saves": n, "wait_s_per_save": cost / n, "share": cost / duration, "own_share": own, "cpus": cpus,
             "demand_cpus": sum(f["demand_s"] for f in found) / duration, "others_s_per_save": others,
             "waited": waited, "held": held},
            cost_s=cost, severity=severity))
    return out


def _save(run, procs, s) -> dict:
    """One save's figures: its critical threads' waits, who held its CPUs,
    and the cost. Held and wanted CPU time is weighed a sampler interval at
    a time: a pool's burst oversubscribes its CPUs within a save that, on
    average, leaves them room."""
    a, b = s["start_ns"], s["end_ns"]
    host = s["host"]
    producer, writer = s["producer"], s["writer"]
    rows = [producer] + ([writer] if writer is not None and writer != producer else [])
    calls = {row: save_calls(run, row, a, b) for row in rows}
    gen = calls[producer]["gen"]
    edges = np.append(np.arange(a, b, run.meta.get("interval_ns") or BIN_NS), b)
    t = runqueue.in_window(run, host, a, b, spans=gen, edges=edges)
    pids = {procs[row]["pid"]: row for row in rows}
    sides = {}  # thread index -> "producer" or "writer"
    for i, (pid, tid, name) in enumerate(zip(t.pid.tolist(), t.tid.tolist(), t.name)):
        row = pids.get(pid)
        if row is None or name == STACKS_NAME:  # (the probe's sampling is not the save's work)
            continue
        if row != producer:
            sides[i] = "writer"  # the writer's every thread
        elif tid in calls[row]["tids"]:
            sides[i] = calls[row]["tids"][tid]
        elif len(gen[0]) and t.cpu_s_in[i] >= FILL_SHARE * t.cpu_s[i] > 0:
            sides[i] = "producer"  # one of its fill pool
    path = s["critical_path"]
    cost = 0.0
    for side, work in (("producer", PRODUCER_WORK), ("writer", WRITER_WORK)):
        longest = max((t.wait_s[i] for i, which in sides.items() if which == side), default=0.0)
        cost += min(longest, sum(path.get(c, 0.0) for c in work))
    cpus = sorted(set(procs[producer]["allowed_cpus"]) | set(procs[writer]["allowed_cpus"] if writer is not None
                                                              else ()))
    cpus = cpus or sorted(topology.cpu_nodes(run.topology.get(host, {}))) or sorted(
        {c for on in t.cpu_s_on for c in on})
    on_set = np.array([sum(v for c, v in on.items() if c in cpus) for on in t.cpu_s_on])
    share_on = np.divide(on_set, t.cpu_s, out=np.zeros(len(on_set)), where=t.cpu_s > 0)
    # The run's own demand, per bin on the save's CPUs: its threads', the probe's
    # stack threads aside (what the profiler takes is not the run's wanting more
    # CPUs); the CPU time they held is not other programs' either.
    own = np.where([name == STACKS_NAME for name in t.name], 0.0, share_on)
    held, waited = own @ t.cpu_bins, own @ t.wait_bins
    capacity = len(cpus) * np.diff(edges) / 1e9
    busy = runqueue.host_busy(run, host, cpus, edges)
    return {
        "duration_s": s["duration_s"], "cost_s": float(min(cost, s["duration_s"])), "cpus": cpus,
        "waited_s": float(waited.sum()), "excess_s": float(np.maximum(held + waited - capacity, 0).sum()),
        "demand_s": float((held + waited).sum()),
        "others_s": None if busy is None else float(np.maximum(busy - share_on @ t.cpu_bins, 0).sum()),
        "waited": [_thread(t, i, side, host) for i, side in sides.items() if t.wait_s[i] > 0],
        "held": [_thread(t, i, None, host, cpu_s=float(on_set[i])) for i in np.flatnonzero(on_set > 0)],
    }


def _thread(t, i, side, host, cpu_s=None) -> dict:
    return {"host": host, "pid": int(t.pid[i]), "tid": int(t.tid[i]), "name": t.name[i], "side": side,
            "wait_s": float(t.wait_s[i]), "cpu_s": float(t.cpu_s[i]) if cpu_s is None else cpu_s,
            "involuntary": int(t.involuntary[i])}


def save_calls(run, row: int, a: int, b: int) -> dict:
    """The process's hooked calls in (a, b]: tid -> the side they are
    ("writer" for a writer's calls), and its gen calls' spans, merged."""
    c = run.chunk_columns
    lo, hi = np.searchsorted(c["proc"], np.array([row, row + 1], dtype=c["proc"].dtype))
    start, end = c["start_ns"][lo:hi], c["end_ns"][lo:hi]
    inside = np.flatnonzero((start < b) & (end > a)) + lo
    codes = {name: code for code, name in run.phase_names.items()}
    writing = np.isin(c["phase"][inside], [codes[p] for p in _WRITER_CALLS if p in codes])
    tids = {tid: "writer" for tid in c["tid"][inside[writing]].tolist()}
    tids.update((tid, "producer") for tid in c["tid"][inside[~writing]].tolist())  # (a producer that also wrote)
    gen = inside[c["phase"][inside] == codes.get("gen", -1)]
    return {"tids": tids, "gen": merged(np.maximum(c["start_ns"][gen], a), np.minimum(c["end_ns"][gen], b))}


def _grouped(threads: list[dict], procs, names, key: str, n: int) -> list[dict]:
    """Threads summed over the saves, per thread (the writers', one a save,
    per name), the largest first, each with a label; figures per save."""
    rows = {(p["host"], p["pid"]): p for p in procs}
    groups: dict = {}
    for th in threads:
        proc = rows.get((th["host"], th["pid"]))
        role = proc["role"] if proc else None
        k = (role, th["name"]) if role == run_roles.WRITER else (th["host"], th["pid"], th["tid"])
        g = groups.setdefault(k, {"role": role or "not probed", "name": th["name"], "side": th["side"],
                                  "pids": [], "tids": [], "program": names.get((th["host"], th["pid"])),
                                  "wait_s": 0.0, "cpu_s": 0.0, "involuntary": 0})
        if th["pid"] not in g["pids"]:
            g["pids"].append(th["pid"])
            g["tids"].append(th["tid"])
        g["wait_s"] += th["wait_s"] / n
        g["cpu_s"] += th["cpu_s"] / n
        g["involuntary"] += th["involuntary"]
    out = sorted(groups.values(), key=lambda g: -g[key])
    for g in out:
        who = g["role"] if g["role"] != "not probed" else f"{g['program'] or 'process'} (not probed)"
        pids = ", ".join(map(str, g["pids"][:NAMED])) + (", …" if len(g["pids"]) > NAMED else "")
        tids = "" if g["tids"] == g["pids"] else f" tid {', '.join(map(str, g['tids'][:NAMED]))}"
        g["label"] = f"{who}{'s' * (len(g['pids']) > 1)} pid {pids}{tids} ({g['name']})"
    return out


def _process_names(run) -> dict:
    """(host, pid) -> the program the sampler saw it run (its latest), for processes the probe was not in."""
    found = {}
    for r in run.sampled:
        if r.get("kind") in ("seen", "exec") and r.get("cmdline"):
            found[(r.get("host"), r.get("pid"))] = os.path.basename(str(r["cmdline"][0]))
    return found

