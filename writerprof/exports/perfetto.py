"""A run as Chrome trace-event JSON, which the Perfetto UI and chrome://tracing
open: one track per process (named by role, rank and pid), its threads as
tracks below it; start-up phases and every hooked call (gen, put, get, write,
fsync, ...) as slices; page faults, CPU and NUMA node as counters from the
sampler; fork, bootstrap, target start and exit as instants.

Times are microseconds on one time line for the whole trace, the recording
host's CLOCK_MONOTONIC: every other host's readings are moved onto it by that
host's clock offset (analysis.clocks), so a save that ranks on many hosts make
at once lines up across their tracks. The origin is the start of the
recording, or the earliest event if an offset puts one before it."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import clocks
from writerprof.analysis.samples import sample_rows
from writerprof.run import roles as run_roles
from writerprof.run import topology

# Events of the journal that are spans (start_ns, end_ns) of a process's start-up.
_SPANS = {"activated": "probe activation", "main_rerun": "__main__ re-run",
          "unpickle": "unpickle (imports the target's module)", "process_start": "Process.start()"}
_INSTANTS = {"bootstrap": "bootstrap", "target_start": "target start", "target_end": "target end",
             "fork": "fork", "exit": "exit"}


def trace(run) -> dict:
    offsets = clocks.host_offsets(run)
    # Per row of run.processes: what moves its host's monotonic readings onto the recording host's.
    shift = [offsets.get(host, 0) for host in run.processes["host"]]
    origin = _origin(run, shift)
    role_of = run_roles.roles(run)
    events: list[dict] = []

    def us(ns, row) -> float:
        return (int(ns) + shift[row] - origin) / 1000

    tracks = _process_tracks(run, role_of)
    for row, (track, name, sort) in tracks.items():
        events.append({"ph": "M", "name": "process_name", "pid": track, "tid": 0, "args": {"name": name}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": track, "tid": 0,
                       "args": {"sort_index": sort}})
    events += _thread_names(run, tracks)
    phase_names = run.phase_names
    chunks = run.chunks
    for chunk in chunks:
        row = int(chunk["proc"])
        track = tracks[row][0]
        events.append({"ph": "X", "cat": "call", "name": phase_names.get(int(chunk["phase"]), "?"),
                       "pid": track, "tid": int(chunk["tid"]), "ts": us(chunk["start_ns"], row),
                       "dur": (int(chunk["end_ns"]) - int(chunk["start_ns"])) / 1000,
                       "args": {"bytes": int(chunk["bytes"]), "buffer": int(chunk["buffer"]),
                                "cpu": int(chunk["cpu"]), "minflt": int(chunk["minflt"]),
                                "majflt": int(chunk["majflt"]), "writer_seq": int(chunk["writer_seq"])}})
    for event in run.events:
        data, kind = event["data"], event["kind"]
        row = int(event["proc"])
        track = tracks[row][0]
        main_tid = int(event["pid"])
        if kind in _SPANS and isinstance(data.get("start_ns"), int) and isinstance(data.get("end_ns"), int):
            events.append({"ph": "X", "cat": "startup", "name": _SPANS[kind], "pid": track, "tid": main_tid,
                           "ts": us(data["start_ns"], row), "dur": (data["end_ns"] - data["start_ns"]) / 1000,
                           "args": _plain(data)})
        elif kind in _INSTANTS:
            events.append({"ph": "i", "s": "p", "cat": "lifecycle", "name": _INSTANTS[kind], "pid": track,
                           "tid": main_tid, "ts": us(event["t_ns"], row), "args": _plain(data)})
    events += _counters(run, tracks, us)
    # Metadata first, then everything in time order: viewers read it in one pass.
    events.sort(key=lambda e: (e["ph"] != "M", e.get("ts", 0)))
    return {"traceEvents": events, "displayTimeUnit": "ms",
            "otherData": {"writerprof_run": str(run.path), "command": " ".join(run.meta.get("command", []))}}


def _origin(run, shift) -> int:
    """The trace's zero on the recording host's clock: the recording's start,
    unless an event comes earlier (a host's wall clock a little behind)."""
    shift = np.asarray(shift, dtype=np.int64)
    times = [int((run.chunks["start_ns"] + shift[run.chunks["proc"]]).min())] if len(run.chunks) else []
    times += [int((run.events["t_ns"] + shift[run.events["proc"]]).min())] if len(run.events) else []
    started = run.meta.get("started_ns")
    times += [started] if started else []
    return min(times) if times else 0


def _process_tracks(run, role_of) -> dict[int, tuple[int, str, int]]:
    """Row of run.processes -> (track id, name, sort index). A track id is the
    row plus one: pids may be reused within a run, and repeat across hosts."""
    tracks = {}
    order = np.argsort(run.processes["created_ns"], kind="stable")
    for sort, row in enumerate(order):
        p = run.processes[row]
        rank = f" rank {p['rank']}" if p["rank"] >= 0 else ""
        host = f" on {p['host']}" if len(run.hosts) > 1 else ""
        tracks[int(row)] = (int(row) + 1, f"{role_of[row]}{rank} pid {p['pid']}{host}", sort)
    return tracks


def _thread_names(run, tracks) -> list[dict]:
    names = []
    pairs = {(int(c["proc"]), int(c["tid"])) for c in run.chunks[["proc", "tid"]]}
    pairs |= {(row, int(run.processes["pid"][row])) for row in tracks}
    for row, tid in sorted(pairs):
        main = tid == int(run.processes["pid"][row])
        names.append({"ph": "M", "name": "thread_name", "pid": tracks[row][0], "tid": tid,
                      "args": {"name": "main thread" if main else f"thread {tid}"}})
    return names


def _counters(run, tracks, us) -> list[dict]:
    """CPU, NUMA node and page faults of each probed process, from the sampler."""
    samples = run.samples
    if not len(samples) or not len(run.processes):
        return []
    rows = sample_rows(run)
    nodes = {host: topology.cpu_nodes(t) for host, t in run.topology.items()}
    out = []
    for sample, row in zip(samples, rows):
        if row < 0:
            continue
        host = run.hosts[int(sample["host_index"])]
        cpu = int(sample["cpu"])
        node = nodes.get(host, {}).get(cpu)
        track, ts = tracks[row][0], us(sample["t_ns"], row)
        out.append({"ph": "C", "name": "cpu", "pid": track, "tid": 0, "ts": ts, "args": {"cpu": cpu}})
        if node is not None:
            out.append({"ph": "C", "name": "node", "pid": track, "tid": 0, "ts": ts, "args": {"node": node}})
        out.append({"ph": "C", "name": "page faults", "pid": track, "tid": 0, "ts": ts,
                    "args": {"minflt": int(sample["minflt"]), "majflt": int(sample["majflt"])}})
    return out


def _plain(data: dict) -> dict:
    """An event's fields as trace args, less what the trace already says."""
    return {k: v for k, v in data.items() if k not in ("kind", "t_ns", "start_ns", "end_ns")}
