"""A rank's producer (the exec'd "main" process) and its daemons (the
resource tracker, the forkserver): their journals and the sampler's view of
them, written save by save as the host's timeline goes."""

from __future__ import annotations

import json

import numpy as np

from writerprof.synthetic import events
from writerprof.synthetic.events import FORKSERVER_ARGV, PAGE_SIZE, TRACKER_ARGV, text
from writerprof.synthetic.sampler import DAEMON, PRODUCER, TRACKER, busy, step, ticks_floor
from writerprof.synthetic.scenario import MIB
from writerprof.synthetic.timeline import ACTIVATE_NS, BETWEEN_SAVES_NS, MS, S, US


def start(host, rank):
    """The producer's identity and probe start-up, and its samples up to the first save."""
    t = rank.ident_t
    lines = [events.identity(host, rank, t=t, pid=rank.pid, ppid=1000 + host.index, created=rank.created,
                             via="exec", forked_from=None, role="main", argv=rank.argv,
                             affinity=rank.producer_mask)]
    lines += events.activation(t)
    lines += events.hooks(events.PRODUCER_HOOKS, t + ACTIVATE_NS + 100 * MS, 1400 * US)
    journal, chunks = host.files(rank.pid, rank.created)
    journal.write_text(text(lines))
    chunks.write_bytes(b"")
    rank.files = (journal, chunks)
    # Until the first save: importing, on one CPU.
    segment(host, rank, rank.first_save, None)


def segment(host, rank, hi: int, v: dict | None, i: int = 0):
    """The producer's samples from where the last segment ended to hi, with
    its counters carried across; v: the save's timeline (row i), None before the first."""
    sc, carry = rank.sc, rank.carry
    off = host.sampler.offset(rank.local, PRODUCER)
    ticks = host.sampler.ticks(rank.sample_from, hi, off)
    t = np.append(ticks, hi)
    cpu = host.machine.pick(rank.producer_mask, sc.buffer_node, 2 * rank.local)
    if v is None:
        c = _importing(rank, hi, t)
    else:
        cpu = v["producer_cpu"][i]
        c = _saving(rank, v, i, t)
    threads = np.maximum(c["threads"], sc.fork_threads or 1)
    rss = c["rss"] + 8 * MIB * sc.gen_threads
    for name in ("utime", "stime", "vol", "minflt", "wbytes"):
        carry[name] = int(c[name][-1])
    rank.sample_from = hi
    if len(ticks):
        n = len(ticks)
        host.sampler.add(ticks, pid=rank.pid, cpu=cpu, threads=threads[:n], utime_ns=ticks_floor(c["utime"][:n]),
                         stime_ns=ticks_floor(c["stime"][:n]), voluntary_ctxt=c["vol"][:n],
                         nonvoluntary_ctxt=(t[:n] - rank.exec_t) * sc.involuntary_per_s // S,
                         minflt=c["minflt"][:n], majflt=1, rss_bytes=rss[:n], write_bytes=c["wbytes"][:n],
                         wchar=c["wbytes"][:n] + 4096)
    return cpu


def _importing(rank, hi: int, t: np.ndarray) -> dict:
    """The producer's counters at t before its first save: busy importing."""
    carry = rank.carry
    c = {k: np.full(len(t), carry[k], np.int64) for k in ("stime", "vol", "minflt", "wbytes")}
    c["utime"] = carry["utime"] + busy(np.array([rank.ident_t]), np.array([hi]), t)
    c["minflt"] = c["minflt"] + step(np.array([rank.ident_t]), np.array([20_000]), t)
    c["threads"] = np.full(len(t), 1, np.int64)
    c["rss"] = np.full(len(t), 60 * MIB, np.int64)
    return c


def _saving(rank, v: dict, i: int, t: np.ndarray) -> dict:
    """The producer's counters at t during save v (row i) and after it."""
    sc, carry = rank.sc, rank.carry
    gs, ge, ps, pe = v["gs"][i], v["ge"][i], v["ps"][i], v["pe"][i]
    factor = min(max(1, sc.gen_threads), len(rank.producer_mask))
    touch = v["gen_faults"][i]
    c = dict(utime=carry["utime"] + busy(gs, ge, t) * factor,
             stime=carry["stime"] + step(ge, touch * v["fault_ns"][i], t),
             vol=carry["vol"] + step(pe, (pe - ps > 100 * US).astype(np.int64), t) + step(v["join"][i:i + 1], [3], t),
             minflt=carry["minflt"] + step(ge, touch, t) + step(v["save_end"][i:i + 1], [20], t),
             wbytes=np.full(len(t), carry["wbytes"], np.int64))
    if sc.start_method != "forkserver":  # the kernel adds a reaped child's I/O to its parent's
        c["wbytes"] = c["wbytes"] + step(v["join"][i:i + 1], [v["written"]], t)
    in_save = (t >= v["t_b"][i]) & (t < v["cleaned"][i])
    c["rss"] = 60 * MIB + np.where(in_save, step(ge, v["first_pages"][i], t) * PAGE_SIZE, 0)
    # The generator's pool starts at its first fill; the queue's feeder thread
    # at the first put, until the queue is closed.
    pool = (t >= gs[0]) if v["save"] == 0 else np.ones(len(t), bool)
    c["threads"] = 1 + sc.gen_threads * pool + ((t >= pe[0]) & (t < v["save_end"][i]))
    return c


def save(host, rank, v: dict, i: int):
    """The producer's events of this save, and its chunk records, appended."""
    sc, buffers = host.sc, host.buffers
    save, B, n = v["save"], sc.buffers, sc.chunks_per_save
    node = v["params"][i].buffer_node
    names = buffers.names(rank.rank, save)
    addresses = buffers.below(0x7F80_0000_0000 - ((rank.local % 64) << 36))
    v["names"], v["addresses"] = names, addresses
    lines = []
    for b in range(B):
        index = save * B + b
        lines.append(buffers.shm("create", names[b], index, addresses[b], int(v["shm_t"][i, b])))
        lines.append(buffers.placement(names[b], index, "create", int(v["place_t"][i, b])))
    # The threads live at the fork (or at a start that does not fork): the generator's
    # Python threads after the first fill, or fork_threads of which all but the main thread are native.
    native = rank.sc.fork_threads if rank.sc.fork_threads is not None else \
        1 + (rank.sc.gen_threads if save > 0 else 0)
    python = ["MainThread"] + ([f"writerprof-gen_{k}" for k in range(rank.sc.gen_threads)]
                               if save > 0 and rank.sc.fork_threads is None else [])
    threads = {"native_threads": native, "python_threads": len(python), "threads": python[:32],
               "forking_thread": "MainThread", "native_only": [events.POOL_THREAD] * (native - len(python)),
               "comm": events.COMM}
    if sc.start_method == "fork":
        lines.append({**threads, "kind": "fork", "t_ns": int(v["fork_at"][i])})
        threads = {}
    elif sc.start_method == "forkserver":
        rank.daemon_forks.append(int(v["fork_at"][i]))
        rank.reaped.append((int(v["w_exit"][i]) + 100 * US, v["written"]))
    t_ps = int(v["t_ps"][i])
    lines.append({"t_ns": t_ps, "start_ns": t_ps, "end_ns": int(v["ps_end"][i]), "method": sc.start_method,
                  "target": events.TARGET, "child_pid": int(v["writer_pid"][i]), "name": f"writer-{save + 1}",
                  "writer_seq": save, "started": True, "kind": "process_start", **threads})
    for b in range(B):
        lines.append(buffers.placement(names[b], save * B + b, "end", int(v["cleanup"][i, b]),
                                       node if b < n else None))
    journal, chunks = rank.files
    events.append(journal, lines)
    with open(chunks, "ab") as f:
        v["producer_records"][i].tofile(f)
    if save == 0:
        _daemons_start(host, rank)
    # The producer's buffers in numa_maps: faulted in by its first gen into each.
    ge = v["ge"][i]
    rank.mappings = [(addresses[b], "/dev/shm/" + names[b], int(v["shm_t"][i, b]),
                      int(v["cleanup"][i, b]), int(ge[b]) if b < n else None,
                      {str(node): buffers.pages}) for b in range(B)]
    _numa(host, rank, int(v["save_end"][i]) + BETWEEN_SAVES_NS)


def _numa(host, rank, hi: int):
    """The sampler's numa_maps reads of the producer up to hi."""
    off = host.sampler.offset(rank.local, PRODUCER)
    t = rank.numa_read
    if t is None:
        t = host.sampler.next_tick(rank.exec_t, off)
    rank.numa_read = host.sampler.numa_maps(rank.local * 4 + PRODUCER, rank.pid, rank.mappings, rank.numa_seen,
                                            t, hi, off)


def _daemons(rank):
    """The rank's daemons that started: (kind, pid, (exec_t, created, ident_t), argv, mask, order in a tick)."""
    for kind, pid, start, argv, mask, order in (
            ("tracker", rank.tracker_pid, rank.tracker, TRACKER_ARGV, rank.producer_mask, TRACKER),
            ("daemon", rank.daemon_pid, rank.daemon, FORKSERVER_ARGV, rank.daemon_mask, DAEMON)):
        if start is not None:
            yield kind, pid, start, argv, mask, order


def _daemons_start(host, rank):
    """The resource tracker (and forkserver daemon) journal their start; the rest at the end."""
    rank.daemon_lines = {}
    for kind, pid, (exec_t, created, ident), argv, mask, _ in _daemons(rank):
        role = "resource_tracker" if kind == "tracker" else "forkserver"
        lines = [events.identity(host, rank, t=ident, pid=pid, ppid=rank.pid, created=created, via="exec",
                                 forked_from=None, role=role, argv=argv, affinity=mask)]
        lines += events.activation(ident)
        lines += events.hooks(events.DAEMON_HOOKS, ident + ACTIVATE_NS + 2 * MS, 8 * MS)
        rank.daemon_lines[kind] = lines


def end(host, rank, exit_t: int):
    """The producer's exit, then its daemons'."""
    sc = rank.sc
    rank.exit_t = exit_t
    _tail(host, rank, exit_t)
    carry = rank.carry
    exit_line = events.exit_event(
        "atexit", None, exit_t, utime_s=carry["utime"] / S, stime_s=carry["stime"] / S, minflt=carry["minflt"],
        majflt=1, nvcsw=carry["vol"], nivcsw=int((exit_t - rank.exec_t) * sc.involuntary_per_s // S),
        maxrss_kb=(60 * MIB + 8 * MIB * sc.gen_threads + host.sc.buffers * host.sc.chunk_size) // 1024)
    with open(rank.files[0], "a") as f:
        f.write(json.dumps(exit_line) + "\n")
    masks = [(rank.exec_t, rank.producer_mask)]
    host.sampler.seen(rank.local, PRODUCER, rank.pid, 1000 + host.index, rank.exec_t, exit_t, rank.argv, masks)
    _daemons_end(host, rank, exit_t)


def _daemons_end(host, rank, exit_t: int):
    """The tracker and the forkserver leave after the producer: their forks, samples and exit."""
    sc = rank.sc
    for kind, pid, (exec_t, created, ident), argv, mask, order in _daemons(rank):
        end = exit_t + (30 if kind == "tracker" else 31) * MS
        lines = rank.daemon_lines[kind]
        forks = rank.daemon_forks if kind == "daemon" else []
        lines += [{"native_threads": 1, "python_threads": 1, "threads": ["MainThread"],
                   "forking_thread": "MainThread", "kind": "fork", "t_ns": t} for t in forks]
        ticks = host.sampler.seen(rank.local, order, pid, rank.pid, exec_t, end, argv, [(exec_t, mask)])
        t = np.append(ticks, end)
        utime = busy(np.array([exec_t]), np.array([ident + ACTIVATE_NS + 10 * MS]), t)
        vol = 5 + step(np.array(forks, dtype=np.int64), np.full(len(forks), 2), t)
        reaped = rank.reaped if kind == "daemon" else []
        written = step(np.array([r[0] for r in reaped], dtype=np.int64),
                       np.array([r[1] for r in reaped], dtype=np.int64), t)
        invol = (t - exec_t) * sc.involuntary_per_s // S // 20
        minflt = np.where(t >= ident, 1950 + 6 * vol, 900)
        k = len(ticks)
        if k:
            host.sampler.add(ticks, pid=pid, cpu=host.machine.pick(mask, None, 2 * rank.local), threads=1,
                             utime_ns=ticks_floor(utime[:k]), stime_ns=ticks_floor(utime[:k] // 4),
                             voluntary_ctxt=vol[:k], nonvoluntary_ctxt=invol[:k], minflt=minflt[:k],
                             majflt=0, rss_bytes=14 * MIB, write_bytes=written[:k], wchar=written[:k] + 2048)
        lines.append(events.exit_event(
            "atexit", None, end, utime_s=int(utime[-1]) / S, stime_s=int(utime[-1]) // 4 / S,
            minflt=int(minflt[-1]), majflt=0, nvcsw=int(vol[-1]), nivcsw=int(invol[-1]), maxrss_kb=14 * 1024))
        journal, chunks = host.files(pid, created)
        journal.write_text(text(lines))
        chunks.write_bytes(b"")
        rank.exit_t = max(rank.exit_t, end)


def _tail(host, rank, exit_t: int):
    """After the last save: the producer idles until it exits."""
    hi = exit_t
    off = host.sampler.offset(rank.local, PRODUCER)
    ticks = host.sampler.ticks(rank.sample_from, hi, off)
    carry, sc = rank.carry, rank.sc
    if len(ticks):
        host.sampler.add(ticks, pid=rank.pid, cpu=host.machine.pick(rank.producer_mask, sc.buffer_node,
                                                                    2 * rank.local),
                         threads=max(1 + sc.gen_threads, sc.fork_threads or 1),
                         utime_ns=ticks_floor(carry["utime"]), stime_ns=ticks_floor(carry["stime"]),
                         voluntary_ctxt=carry["vol"],
                         nonvoluntary_ctxt=(ticks - rank.exec_t) * sc.involuntary_per_s // S,
                         minflt=carry["minflt"], majflt=1, rss_bytes=60 * MIB + 8 * MIB * sc.gen_threads,
                         write_bytes=carry["wbytes"], wchar=carry["wbytes"] + 4096)
    _numa(host, rank, hi)
    rank.sample_from = hi
