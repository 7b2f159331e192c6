"""How a run ended, said first: complete, failed (CMD's own non-zero exit),
or cut short, by which signal, when, and by what: a Slurm job's time limit,
Slurm otherwise (scancel), a signal `record` received and passed on, a
signal that killed CMD, or one that killed a process of CMD (CMD's exit
status 128+N: srun's, once its tasks were). Where run.json was never
finished (record itself killed), the end is the journals': the latest time
any record shows, and how many of the processes left their exit record.

In a run cut short each save has a status. `interrupted`: its file never
closed (its upload was never answered, or never completed), or its writer
child left no exit record (killed, or alive when the recording was cut): its
bytes are those written before the cut.
`unconfirmed`: its file closed, but the process that owns the save (the
producer that started the writer, or the process that wrote the file) left
no record after it, before the signal (after it, it was answering the
signal): the target may never have counted it. The headline figures take
the complete saves only (complete)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from writerprof.analysis import filesaves, saves as run_saves, uploads
from writerprof.run import fields
from writerprof.run.io import CLOSE_CODES
from writerprof.units import signal_name

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes import Ending

COMPLETE, INTERRUPTED, UNCONFIRMED = "complete", "interrupted", "unconfirmed"
STATUSES = (COMPLETE, INTERRUPTED, UNCONFIRMED)
# What cut a run short (Ending["by"]), as far as it can be told.
SLURM_TIME_LIMIT, SLURM, RECORD_SIGNAL, CMD_SIGNAL, EXIT_STATUS, RECORDING_CUT = (
    "slurm_time_limit", "slurm", "record_signal", "cmd_signal", "exit_status", "recording_cut")
# A cut this close before a Slurm job's end, or after it, is its time limit:
# run.json has the end from squeue's time left (whole seconds), and slurmctld
# signals the job at its next periodic check, seconds after the end.
TIME_LIMIT_SLACK_S = 5
# Exit statuses that say a signal killed a process of CMD: 128+N, N a signal.
SIGNALLED_STATUS = range(129, 193)


def complete(found: list[dict]) -> list[dict]:
    """The saves the headline figures take: the complete ones (a save of a
    summary made before statuses is complete)."""
    return [s for s in found if s.get("status", COMPLETE) == COMPLETE]


def ending(run, found: list[dict], offsets: dict[str, int]) -> Ending:
    """How the run ended; in a run cut short, each save's status set in
    found (every save complete in any other run). offsets: the hosts'
    clock offsets (clocks.alignment)."""
    meta = run.meta
    origin = meta.get("started_ns") or 0
    exit_status = meta.get("exit_status")
    received = _signals(meta.get("signals"), origin)
    recording = _recording_end(run, offsets, origin) if meta.get("ended_ns") is None else None
    ended_s = (meta["ended_ns"] - origin) / 1e9 if meta.get("ended_ns") is not None else None
    killed, exit_signal = _killed(meta), _exit_signal(exit_status)
    cut = bool(received or killed or exit_signal or (recording and recording["exited"] < recording["processes"]))
    by = cut_by = at_s = None
    if cut:
        if received:
            cut_by, at_s = received[0]["signal"], received[0]["at_s"]
        elif killed or exit_signal:
            cut_by, at_s = killed or exit_signal, ended_s
        else:
            at_s = recording["at_s"]
        wall = received[0]["wall_ns"] if received else None
        if wall is None and at_s is not None and fields.is_int(meta.get("started_wall_ns")):
            wall = meta["started_wall_ns"] + int(at_s * 1e9)
        by = _cut_by(slurm(meta), wall, received, killed, exit_signal)
    cut_ns = received[0]["at_ns"] if received else None
    for save, status in zip(found, _statuses(run, found, cut_ns, offsets) if cut else [COMPLETE] * len(found)):
        save["status"] = status
        if status == INTERRUPTED:
            save["gib_s"] = None  # bytes of a save that never finished, over its time: no rate of a save
    return {
        "cut_short": cut, "failed": not cut and exit_status not in (0, None), "by": by, "signal": cut_by,
        "at_s": at_s, "exit_status": exit_status, "exit_signal": exit_signal, "ended_by": meta.get("ended_by"),
        "signals": [{"signal": s["signal"], "at_s": s["at_s"]} for s in received], "recording_cut": recording,
        "saves": {status: sum(s["status"] == status for s in found) for status in STATUSES},
    }


def slurm(meta: dict) -> dict | None:
    """run.json's "slurm", the job the run was recorded in (None outside
    Slurm, and in runs from before it)."""
    job = meta.get("slurm")
    return job if isinstance(job, dict) else None


def _cut_by(job: dict | None, wall: int | None, received: list, killed: str | None, exit_signal: str | None) -> str:
    """What cut the run short (wall: when, on the wall clock, if known)."""
    if job is not None:
        end = job.get("end_wall_ns")
        at_limit = fields.is_int(end) and wall is not None and wall >= end - TIME_LIMIT_SLACK_S * 10**9
        return SLURM_TIME_LIMIT if at_limit else SLURM
    return RECORD_SIGNAL if received else CMD_SIGNAL if killed else EXIT_STATUS if exit_signal else RECORDING_CUT


def cut_signal(meta: dict) -> str | None:
    """By run.json alone, the signal that cut CMD short, if one did: the
    first that record received and passed on, the one that killed CMD, or
    the one of CMD's exit status 128+N (record's closing summary says it)."""
    received = _signals(meta.get("signals"), 0)
    return received[0]["signal"] if received else _killed(meta) or _exit_signal(meta.get("exit_status"))


def _killed(meta: dict) -> str | None:
    return meta.get("signal") if meta.get("ended_by") == "signal" else None


def _exit_signal(exit_status) -> str | None:
    return signal_name(exit_status - 128) if exit_status in SIGNALLED_STATUS else None


def _signals(entries, origin: int) -> list[dict]:
    """run.json's "signals" (older runs: none), those it can read, in the order they came:
    signal name, at_ns and at_s (from the run's start), wall_ns."""
    out = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and isinstance(entry.get("signal"), str) and fields.is_int(entry.get("at_ns")):
            wall = entry.get("wall_ns")
            out.append({"signal": entry["signal"], "at_ns": entry["at_ns"], "at_s": (entry["at_ns"] - origin) / 1e9,
                        "wall_ns": wall if fields.is_int(wall) else None})
    return sorted(out, key=lambda s: s["at_s"])


def _recording_end(run, offsets: dict[str, int], origin: int) -> dict:
    """Of a recording whose run.json was never finished: the latest time any
    of its records shows (s from the run's start, on the recording host's
    time line; None: no record), its probed processes and how many of them
    left an exit record."""
    shift = np.array([offsets.get(h, 0) for h in run.processes["host"].tolist()], dtype=np.int64)
    latest = []
    for proc, times in ((run.events["proc"], run.events["t_ns"]), (run.io["proc"], run.io["end_ns"]),
                        (run.shm["proc"], run.shm["t_ns"]), (run.placements["proc"], run.placements["t_ns"])):
        if len(times):
            latest.append(int((times + shift[proc]).max()))
    bounds = run_saves.index(run).chunk_bounds  # chunk records grouped by process: each one's last end
    has = np.flatnonzero(bounds[1:] > bounds[:-1])
    if len(has):
        latest.append(int((np.maximum.reduceat(run.chunk_columns["end_ns"], bounds[:-1][has]) + shift[has]).max()))
    host_shift = np.array([offsets.get(h, 0) for h in run.hosts] or [0], dtype=np.int64)
    for readings in (run.samples, run.threads):
        if len(readings):
            latest.append(int((readings["t_ns"] + host_shift[readings["host_index"]]).max()))
    probed = ~_interposed_only(run)
    return {"at_s": (max(latest) - origin) / 1e9 if latest else None, "processes": int(probed.sum()),
            "exited": int((probed & (run.processes["exited_ns"] >= 0)).sum())}


def _interposed_only(run) -> np.ndarray:
    """Per process row: known only by its interposer journal (not Python, or
    not probed): it leaves no exit record, killed or not."""
    out = np.zeros(len(run.processes), dtype=bool)
    identities = run.events[run.events["kind"] == "process"]
    for proc, data in zip(identities["proc"].tolist(), identities["data"].tolist()):
        out[proc] = bool(data.get("interposed_only"))
    return out


def _statuses(run, found: list[dict], cut_ns: int | None, offsets: dict[str, int]) -> list[str]:
    """Each save's status in a run cut short (see the module's docstring);
    cut_ns: when the cut came, on the recording host's clock (None: not known)."""
    closed = _closed(run)
    exited = run.processes["exited_ns"] >= 0
    # Whose exit tells: a writer child, one save's alone (a pool's worker or a rank saves many).
    one_save = ~filesaves.pool_workers(run) & ~_interposed_only(run)
    records = _record_times(run, {s["producer"] for s in found})
    out = []
    for s in found:
        writer, end = s["writer"], s["end_ns"]
        # A save done before the cut is confirmed by what its owner did before it: what it did after
        # is its answer to the signal (a handler's message, its exit).
        cut = cut_ns - offsets.get(s["host"], 0) if cut_ns is not None else None
        until = cut if cut is not None and end < cut else np.iinfo(np.int64).max
        mine = records[s["producer"]]
        upload = s.get("upload")
        unfinished = (upload["status"] in (uploads.NO_RESPONSE, uploads.NOT_COMPLETED) if upload is not None
                      else s["path"] is not None and writer is not None
                      and not closed(writer, s["path"], s["start_ns"], end))
        if (unfinished or writer is not None and writer != s["producer"] and one_save[writer] and not exited[writer]):
            out.append(INTERRUPTED)
        elif np.searchsorted(mine, until, side="right") == np.searchsorted(mine, end, side="right"):
            out.append(UNCONFIRMED)
        else:
            out.append(COMPLETE)
    return out


def _closed(run):
    """closed(process row, path, from_ns, to_ns): whether that process closed
    that file between those times (the interposer's records)."""
    io = run.io
    rows = np.flatnonzero(np.isin(io["op"], CLOSE_CODES) & (io["path"] >= 0))
    closes: dict[tuple[int, int], list[int]] = {}
    for key in zip(io["proc"][rows].tolist(), io["path"][rows].tolist(), io["start_ns"][rows].tolist()):
        closes.setdefault(key[:2], []).append(key[2])
    code = {path: i for i, path in enumerate(run.io_paths.tolist())}

    def closed(proc: int, path: str, from_ns: int, to_ns: int) -> bool:
        return any(from_ns <= t <= to_ns for t in closes.get((proc, code.get(path, -1)), ()))

    return closed


def _record_times(run, procs: set[int]) -> dict[int, np.ndarray]:
    """Per process row of procs: the starts of all its records (events,
    hooked and file calls, buffers), sorted."""
    bounds = run_saves.index(run).chunk_bounds  # chunk records grouped by process
    wanted = np.array(sorted(procs), dtype=np.int64)
    found: dict[int, list] = {p: [run.chunk_columns["start_ns"][bounds[p]:bounds[p + 1]]] for p in procs}
    for proc, times in ((run.events["proc"], run.events["t_ns"]), (run.io["proc"], run.io["start_ns"]),
                        (run.shm["proc"], run.shm["t_ns"]), (run.placements["proc"], run.placements["t_ns"])):
        rows = np.flatnonzero(np.isin(proc, wanted))
        order = np.argsort(proc[rows], kind="stable")
        rows = rows[order]
        edges = np.searchsorted(proc[rows], wanted)
        for p, a, b in zip(wanted.tolist(), edges.tolist(), [*edges[1:].tolist(), len(rows)]):
            found[p].append(times[rows[a:b]])
    return {p: np.sort(np.concatenate(parts).astype(np.int64)) for p, parts in found.items()}
