"""generation-undersized: saves bound by generation while the generating
process had more CPUs than its generator used, and they sat idle
(mlcommons/storage #689: a pool sized from the global rank count, 192 // 64
= 3 threads, for ranks of 24 CPUs each). Read inside the producer's gen
calls, in up to READ_SAVES of its saves, from the sampler's per-thread
readings: the threads that generated, and what every recorded thread used
of the producer's allowed CPUs; the host's other programs' use of them
(cpus.bin) where the sampler wrote it. The pool's right size is the rank's CPUs: all of its
allowed ones where it is bound, else the host's over its local ranks."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import binding, ranks, runqueue
from writerprof.analysis.diagnoses.base import INFO, WARNING, Code, diagnosis, emits, per_producer, producer_of
from writerprof.analysis.diagnoses.contention import STACKS_NAME, save_calls
from writerprof.analysis.diagnoses.pipeline import WAIT_SHARE, chunk_waits, generation_bound, piped
from writerprof.run import topology
from writerprof.units import format_cpu_list

# CPUs that sat idle on average during generation: at least this many. On a
# 2-CPU host a pool of 1 leaves about 0.8 idle (its writer and the sampler
# use some), a pool of 2 none: the margin is that small there, and grows
# with the CPUs (#689's rank left 21 of 24 idle).
IDLE_CPUS = 0.5
# The generator's threads were the limit: each on a CPU, or waiting for one,
# this share of the generation time on average at least (a generator that
# waits on something else, page faults say, is not short of threads).
BUSY_SHARE = 0.75
# A thread of the producer generated in a save where its CPU time inside the
# gen calls was this share of its busiest thread's at least (a pool's waiting
# caller: a tenth, a starved pool thread of a loaded host's: more than half).
GENERATOR_SHARE = 0.5
NAMED = 4  # generator threads named in the message
# Saves of a producer whose readings are taken, evenly spread over its saves:
# its pool and what its CPUs do are alike from save to save (~0.5 ms a save).
READ_SAVES = 8


@emits(Code("generation-undersized", (WARNING, INFO),
            f"saves generation-bound (writers waited for chunks ≥ {WAIT_SHARE:.0%} of their loop) on a generator of "
            f"fewer threads than its rank's CPUs, each busy ≥ {BUSY_SHARE:.0%} of it, while ≥ {IDLE_CPUS:g} of its "
            f"CPUs sat idle: a warning, else info (other programs held them)"))
def generation_undersized(run, procs, saves):
    out = []
    groups = per_producer(saves)
    producers = {}  # host -> producers recorded on it
    for group in groups:
        producers[group[0]["host"]] = producers.get(group[0]["host"], 0) + 1
    for group in groups:
        timed = piped(group)
        get_wait, loop = chunk_waits(timed)
        if not generation_bound(get_wait, loop):
            continue
        proc = producer_of(procs, group)
        host_cpus = sorted(topology.cpu_nodes(run.topology.get(proc["host"], {})))
        cpus = proc["allowed_cpus"] or host_cpus
        env = run.identity(proc["host"], proc["pid"], int(run.processes["created_ns"][proc["id"]])).get("env") or {}
        local, local_from = ranks.local_ranks(env, producers[proc["host"]])
        bound = binding.bound(cpus, len(host_cpus))
        size = len(cpus) if bound else max(len(cpus) // local, 1)  # the pool's size from this rank's CPUs
        if size < 2:
            continue  # a pool of one thread at most: none is smaller
        read = timed[::-(-len(timed) // READ_SAVES)]
        found = [f for f in (_during_generation(run, proc, s, cpus) for s in read) if f is not None]
        if not found:
            continue
        gen_s = sum(f["gen_s"] for f in found)
        threads = max(len(f["threads"]) for f in found)
        busy = sum(f["busy_s"] for f in found) / gen_s  # CPUs, on average
        idle = len(cpus) - busy
        demand = sum(f["demand_s"] for f in found) / gen_s / max(threads, 1)  # per generator thread
        if not threads or threads >= size or demand < BUSY_SHARE or idle < IDLE_CPUS:  # (none: not measured)
            continue
        others = None if any(f["others_s"] is None for f in found) else sum(f["others_s"] for f in found) / gen_s
        free = idle - (others or 0.0)  # idle CPUs no other program took either
        generator = sum(f["generator_s"] for f in found) / gen_s
        severity = WARNING if free >= IDLE_CPUS else INFO
        # Were its pool as large as its CPUs allow, generation would take the free CPUs too: its
        # critical-path part shrinks by their share, down to the point where the writer waits no more.
        speedup = free / (generator + free) if generator + free > 0 else 0.0
        cost = sum(min(s["critical_path"]["generation"] * speedup, s["get_wait_s"] or 0.0) for s in timed)
        tids = sorted({(tid, name) for f in found for tid, name in f["threads"]})
        evidence = {"saves": len(timed), "get_wait_share": get_wait / loop, "generator_threads": threads,
                    "threads": [{"tid": tid, "name": name} for tid, name in tids], "cpus": cpus, "bound": bound,
                    "local_ranks": local, "local_ranks_from": local_from, "pool_size": size, "generation_s": gen_s,
                    "generator_cpus": generator, "generator_busy_share": demand, "busy_cpus": busy,
                    "idle_cpus": idle, "others_cpus": others}
        out.append(diagnosis("generation-undersized", proc, _said(evidence, proc["host"], severity), evidence,
                             cost_s=cost if severity == WARNING else None, severity=severity))
    return out


def _during_generation(run, proc: dict, save: dict, cpus: list[int]) -> dict | None:
    """One save's readings inside the producer's gen calls: their time
    (gen_s), the producer's threads that generated ((tid, name)) and their
    CPU time, every recorded thread's CPU time on `cpus`, and the host's
    other programs' there (None: not read). None where no gen call was timed."""
    a, b = save["start_ns"], save["end_ns"]
    starts, ends = save_calls(run, proc["id"], a, b)["gen"]
    gen_ns = int((ends - starts).sum())
    if not gen_ns:
        return None
    t = runqueue.in_window(run, proc["host"], a, b, spans=(starts, ends))
    on = np.array([sum(v for c, v in by_cpu.items() if c in cpus) for by_cpu in t.cpu_s_on])
    # A thread's CPU time in the gen calls put on the CPUs in the share it was read on them in the save.
    inside = t.cpu_s_in * np.divide(on, t.cpu_s, out=np.zeros(len(on)), where=t.cpu_s > 0)
    mine = [i for i in range(len(t.pid)) if t.pid[i] == proc["pid"] and t.name[i] != STACKS_NAME]
    busiest = max((t.cpu_s_in[i] for i in mine), default=0.0)
    ours = [i for i in mine if t.cpu_s_in[i] > 0 and t.cpu_s_in[i] >= GENERATOR_SHARE * busiest]
    # The host's CPU time on the CPUs in the gen calls: the bins between their edges, every other one.
    host = runqueue.host_busy(run, proc["host"], cpus, np.ravel(np.column_stack((starts, ends))))
    # Its run-queue delay in the gen calls, in the share of its CPU time that fell there.
    waited = t.wait_s * np.divide(t.cpu_s_in, t.cpu_s, out=np.zeros(len(t.pid)), where=t.cpu_s > 0)
    return {"gen_s": gen_ns / 1e9, "threads": [(int(t.tid[i]), t.name[i]) for i in ours],
            "generator_s": float(t.cpu_s_in[ours].sum()), "demand_s": float((t.cpu_s_in + waited)[ours].sum()),
            "busy_s": float(inside.sum()),
            "others_s": None if host is None else max(float(host[::2].sum() - inside.sum()), 0.0)}


def _said(e: dict, host: str, severity: str) -> str:
    threads, cpus, local = e["generator_threads"], e["cpus"], e["local_ranks"]
    named = ", ".join(f"{t['tid']} {t['name']}" for t in e["threads"][:NAMED]) + ", …" * (len(e["threads"]) > NAMED)
    others = (f"other programs, not recorded, used {e['others_cpus']:.1f}" if e["others_cpus"] is not None else
              "what other programs used was not read: the run's threads hardly waited for a CPU")
    source = f"{e['local_ranks_from']}={local}" if e["local_ranks_from"] != ranks.RECORDED else "producers recorded"
    rule = (f"the {len(cpus)} CPUs it is bound to" if e["bound"] else
            f"{len(cpus)} CPUs // {local} local rank{'s' * (local != 1)} = {e['pool_size']} threads")
    return (f"saves bound by generation (the writers waited for chunks {e['get_wait_share']:.0%} of their loop) "
            f"with the generator on {threads} thread{'s' * (threads != 1)} (tid {named}) of a rank allowed "
            f"{len(cpus)} CPUs ({format_cpu_list(cpus)}): during generation it used {e['generator_cpus']:.1f} CPU, "
            f"the run's threads {e['busy_cpus']:.1f} in all, and {e['idle_cpus']:.1f} CPU sat idle ({others}); "
            f"{local} local rank{'s' * (local != 1)} on {host} ({source}): a pool sized from the rank's CPUs, "
            f"{rule}, would use them"
            + ("" if severity == WARNING else "; other programs held them, a larger pool would compete with them"))
