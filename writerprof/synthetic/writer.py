"""A save's writer: its journal (identity, the start-up its start method has,
the buffers it attaches, exit) and the sampler's view of it."""

from __future__ import annotations

import numpy as np

from writerprof.synthetic import events
from writerprof.synthetic.chunks import writer_buffer_base
from writerprof.synthetic.events import FORKSERVER_ARGV, SPAWN_ARGV
from writerprof.synthetic.sampler import WRITER, busy, step, ticks_floor
from writerprof.synthetic.scenario import MIB
from writerprof.synthetic.timeline import ACTIVATE_NS, MS, S, US

# Faults of the child's start-up, and its resident set before it writes.
_START_FAULTS = {"fork": 150, "forkserver": 1800, "spawn": 4000}
_START_RSS_MIB = {"fork": 60, "forkserver": 16, "spawn": 16}


def write(host, rank, v: dict, i: int):
    """The writer of rank row i of save v: its journal and samples."""
    method = host.sc.start_method
    pid, created = int(v["writer_pid"][i]), int(v["created"][i])
    if method == "fork":
        ppid, argv = rank.pid, rank.argv
    elif method == "forkserver":
        ppid, argv = rank.daemon_pid, FORKSERVER_ARGV
    else:
        ppid, argv = rank.pid, SPAWN_ARGV
    lines, addresses = _journal(host, rank, v, i, ppid, argv)
    exit_t = int(v["w_exit"][i])
    alive_from = int(v["exec"][i]) if method == "spawn" else created
    ticks = host.sampler.seen(rank.local, WRITER, pid, ppid, alive_from, exit_t, argv,
                              _masks(v, i, created), _mappings(host, v, i, addresses, created, exit_t))
    c = _counters(host, rank, v, i, alive_from, np.append(ticks, exit_t))
    k = len(ticks)
    if k:
        host.sampler.add(ticks, pid=pid, cpu=c["cpu"][:k], threads=1, utime_ns=ticks_floor(c["utime"][:k]),
                         stime_ns=ticks_floor(c["stime"][:k]), voluntary_ctxt=c["vol"][:k],
                         nonvoluntary_ctxt=c["invol"][:k], minflt=c["minflt"][:k], majflt=0,
                         rss_bytes=c["rss"][:k], write_bytes=c["written"][:k], wchar=c["written"][:k] + 512)
    lines.append(events.exit_event(
        "os._exit", 0, exit_t, utime_s=int(c["utime"][-1]) / S, stime_s=int(c["stime"][-1]) / S,
        minflt=int(c["minflt"][-1]), majflt=0, nvcsw=int(c["vol"][-1]), nivcsw=int(c["invol"][-1]),
        maxrss_kb=int(c["rss"][-1]) // 1024))
    journal, chunks = host.files(pid, created)
    events.append(journal, lines)
    v["writer_records"][i].tofile(chunks)


def _journal(host, rank, v: dict, i: int, ppid: int, argv) -> tuple[list, list[int]]:
    """The writer's events up to its exit, and where it maps the buffers it attaches."""
    sc, buffers = host.sc, host.buffers
    save, B, n, method = v["save"], sc.buffers, sc.chunks_per_save, sc.start_method
    pid, created = int(v["writer_pid"][i]), int(v["created"][i])
    names, producer_addresses = v["names"], v["addresses"]
    forked_from = None if method == "spawn" else ppid
    ident = int(v["ident"][i]) if method == "spawn" else created
    lines = [events.identity(host, rank, t=ident, pid=pid, ppid=ppid, created=created,
                             via="exec" if method == "spawn" else "fork", forked_from=forked_from,
                             role=events.WRITER_ROLE[method], argv=argv, affinity=v["masks"][i][0])]
    if method == "fork":
        for b in range(B):
            lines.append(buffers.shm("inherited", names[b], save * B + b, producer_addresses[b],
                                     created + 1 * MS + b * 40 * US))
    else:
        lines += _rerun_and_unpickle(v, i, method)
    lines.append({"t_ns": int(v["boot"][i]), "target": events.TARGET, "name": f"writer-{save + 1}",
                  "kind": "bootstrap"})
    lines.append({"kind": "target_start", "t_ns": int(v["ts"][i])})
    base = writer_buffer_base(method, save, B)
    addresses = buffers.below(producer_addresses[-1] if method == "fork"
                              else 0x7F40_0000_0000 + ((rank.local % 64) << 36))
    for b in range(B):
        lines.append(buffers.shm("attach", names[b], base + b, addresses[b], int(v["attach_t"][i, b])))
        lines.append(buffers.placement(names[b], base + b, "attach", int(v["attach_place_t"][i, b])))
    for b in range(B):
        lines.append(buffers.placement(names[b], base + b, "end", int(v["wend"][i, b]),
                                       v["params"][i].buffer_node if b < n else None))
    if method == "fork":  # still mapped at os._exit, never touched here
        for b in range(B):
            lines.append(buffers.placement(names[b], save * B + b, "end", int(v["inherited_end"][i, b])))
    return lines, addresses


def _rerun_and_unpickle(v: dict, i: int, method: str) -> list:
    """A forkserver or spawn child's start-up: (spawn: the probe's own), the
    parent's __main__ re-run, the unpickling that imports the target's module."""
    lines = []
    if method == "spawn":
        ident = int(v["ident"][i])
        lines += events.activation(ident)
        lines += events.hooks(events.DAEMON_HOOKS, ident + ACTIVATE_NS + 2 * MS, 5 * MS)
    mr_s, mr_e = int(v["mr_s"][i]), int(v["mr_e"][i])
    up_s, up_e = int(v["up_s"][i]), int(v["up_e"][i])
    lines.append({"t_ns": mr_s, "start_ns": mr_s, "end_ns": mr_e, "path": events.MAIN_PATH, "kind": "main_rerun"})
    lines += events.hooks(events.WRITER_IMPORT_HOOKS, up_s + (up_e - up_s) * 2 // 3, 50 * US)
    lines.append({"t_ns": up_s, "start_ns": up_s, "end_ns": up_e, "kind": "unpickle"})
    return lines


def _masks(v: dict, i: int, created: int) -> list:
    """The writer's affinity: inherited, then its own from its target's start if it pins itself."""
    inherited_mask, mask = v["masks"][i]
    return [(created, inherited_mask)] + ([(int(v["ts"][i]), mask)] if mask != inherited_mask else [])


def _mappings(host, v: dict, i: int, addresses, created: int, exit_t: int) -> list:
    """Its shared-memory mappings for numa_maps: a fork child's inherited
    ones (never touched here), then the attached ones, faulted in by the writes."""
    B, n, pages = host.sc.buffers, host.sc.chunks_per_save, host.buffers.pages
    names, node = v["names"], v["params"][i].buffer_node
    mappings = []
    if host.sc.start_method == "fork":
        mappings += [(v["addresses"][b], "/dev/shm/" + names[b], created, exit_t, None, {}) for b in range(B)]
    mappings += [(addresses[b], "/dev/shm/" + names[b], int(v["attach_t"][i, b]), int(v["wend"][i, b]),
                  int(v["we"][i, b]) if b < n else None, {str(node): pages}) for b in range(B)]
    return mappings


def _counters(host, rank, v: dict, i: int, alive_from: int, t: np.ndarray) -> dict:
    """The writer's counters at t (its sample times, then its exit)."""
    sc = host.sc
    n, method = sc.chunks_per_save, sc.start_method
    records = v["writer_records"][i]
    ws, we = v["ws"][i], v["we"][i]
    # User time: its start-up to the last attach, and a little of each write.
    utime = busy(np.array([alive_from]), v["attach_place_t"][i, -1:], t) + busy(ws, we, t) // 20
    stime = busy(ws, we, t) * 9 // 10 + busy(v["fs"][i:i + 1], v["fe"][i:i + 1], t) // 10
    vol = step(v["gte"][i], np.ones(n + 1, np.int64), t) + step(we, np.ones(n, np.int64), t)
    minflt = _START_FAULTS[method] + step(records["end_ns"], records["minflt"], t)
    first_writes = np.where(np.arange(n) < sc.buffers, sc.chunk_size, 0)
    rss = _START_RSS_MIB[method] * MIB + step(we, first_writes, t)
    written = step(we, np.full(n, sc.chunk_size), t)
    invol = (t - int(v["created"][i])) * rank.sc.involuntary_per_s // S
    cpus = np.where(t < int(v["ts"][i]), v["start_cpu"][i], v["chunk_cpu"][i, 0])
    started = np.searchsorted(records["start_ns"], t, side="right") - 1
    cpus = np.where(started >= 0, records["cpu"][np.maximum(started, 0)], cpus)
    return dict(utime=utime, stime=stime, vol=vol, minflt=minflt, rss=rss, written=written, invol=invol,
                cpu=cpus)
