"""The chunk records of a save (.chunks.bin), as the probe lays them out: in
order of the calls' ends, an enclosing call's record (the save, depth 0)
after what it encloses."""

from __future__ import annotations

import numpy as np

from writerprof.probes.writerprof_probe.format import PHASES
from writerprof.run.loader import CHUNK_DTYPE
from writerprof.synthetic.timeline import US


def producer_records(host, v: dict):
    """Every rank's producer records of the save: gen 0, put 0, ..., gen
    n-1, put n-1, the put of the end marker, the save."""
    sc = host.sc
    R, n, B, save = len(host.ranks), sc.chunks_per_save, sc.buffers, v["save"]
    pid = np.array([rank.pid for rank in host.ranks], dtype=np.int64)[:, None]
    p = np.zeros((R, 2 * n + 2), CHUNK_DTYPE)
    gen, put = np.arange(0, 2 * n, 2), np.append(np.arange(1, 2 * n, 2), 2 * n)
    p["phase"][:, gen], p["phase"][:, put], p["phase"][:, -1] = PHASES["gen"], PHASES["put"], PHASES["save"]
    p["depth"] = 1
    p["depth"][:, -1] = 0
    p["cpu"] = v["producer_cpu"][:, None]
    p["buffer"] = -1
    p["buffer"][:, gen] = save * B + np.arange(n) % B
    p["writer_seq"] = save
    p["tid"] = pid
    p["start_ns"][:, gen], p["end_ns"][:, gen] = v["gs"], v["ge"]
    p["start_ns"][:, put], p["end_ns"][:, put] = v["ps"], v["pe"]
    p["start_ns"][:, -1], p["end_ns"][:, -1] = v["t_b"], v["save_end"]
    p["bytes"] = -1
    p["bytes"][:, gen] = sc.chunk_size
    p["bytes"][:, put] = np.maximum(v["pe"] - v["ps"] - 3 * US, 0)  # _put returns its wait, in ns
    p["minflt"][:, gen] = v["gen_faults"]
    p["minflt"][:, -1] = 20
    v["producer_records"] = hooked(sc, p)


def writer_records(host, v: dict):
    """Every rank's writer records: get 0, write 0, ..., get n (the end
    marker), fsync, close."""
    sc = host.sc
    R, n, B, save = len(host.ranks), sc.chunks_per_save, sc.buffers, v["save"]
    w = np.zeros((R, 2 * n + 3), CHUNK_DTYPE)
    get, write = slice(0, 2 * n + 1, 2), slice(1, 2 * n, 2)
    w["phase"][:, get], w["phase"][:, write] = PHASES["get"], PHASES["write"]
    w["phase"][:, -2], w["phase"][:, -1] = PHASES["fsync"], PHASES["close"]
    w["depth"] = 1  # inside run_writer, whose own record os._exit never lets be written
    w["cpu"][:, get] = v["chunk_cpu"]
    w["cpu"][:, write] = v["chunk_cpu"][:, :n]
    w["cpu"][:, -2:] = v["chunk_cpu"][:, -1:]
    w["buffer"] = -1
    w["buffer"][:, write] = writer_buffer_base(sc.start_method, save, B) + np.arange(n) % B
    w["writer_seq"] = -1
    w["tid"] = v["writer_pid"][:, None]
    w["start_ns"][:, get], w["end_ns"][:, get] = v["gts"], v["gte"]
    w["start_ns"][:, write], w["end_ns"][:, write] = v["ws"], v["we"]
    w["start_ns"][:, -2], w["end_ns"][:, -2] = v["fs"], v["fe"]
    w["start_ns"][:, -1], w["end_ns"][:, -1] = v["cs"], v["ce"]
    w["bytes"] = -1
    w["bytes"][:, write] = sc.chunk_size
    w["minflt"][:, write] = v["write_faults"]
    w["minflt"][:, 0] = 150
    v["writer_records"] = hooked(sc, w)


def hooked(sc, records: np.ndarray) -> np.ndarray:
    """The records of calls the probe had a hook on (every rank's row alike):
    Scenario.unhooked's phases are not recorded."""
    codes = [PHASES[p] for p in sc.unhooked_phases()]
    return records[:, ~np.isin(records["phase"][0], codes)] if codes else records


def writer_buffer_base(method: str, save: int, B: int) -> int:
    """The index of a writer's first attached buffer: a fork child knows its
    parent's buffers of every save so far too."""
    return (save + 1) * B if method == "fork" else 0
