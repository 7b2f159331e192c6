"""The spans in which each process worked on a save's buffers, by which its
placement is judged (processes.with_work). Each save's window runs from the
buffers' creation (the writer's: from its attach of them; its first call,
where it attached none) to the writer's close; inside it, the work: the
producer's fill (its hooked gen calls; else, where it handed chunks over,
from its writer's start to its last hand-off, as handoffs infers the fill;
else all the window), the writer's writes (its hooked write calls, else all
its window). Whichever threads ran then did the work: never a process's
start-up, nor its setting up of a save before the fill (a thread that
first-touched the buffers, the fork of its writer), nor what it did between
saves. A producer's interpreter start-up on one node and its fill on
another, or a writer's re-run of __main__, say nothing of where the chunks
were copied."""

from __future__ import annotations

import bisect

import numpy as np

from writerprof.analysis import nesting
from writerprof.analysis import saves as saves_found
from writerprof.analysis.components import loop_components
from writerprof.probes.writerprof_probe.format import SHM_OPS
from writerprof.run import files

CREATED = (SHM_OPS["create"],)
MAPPED = (SHM_OPS["attach"], SHM_OPS["inherited"])


def spans(run, found: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(process row, start_ns, end_ns) of every producer's and writer's work
    in the saves found (saves.find), in row order, then start; on each host's clock."""
    work = _Work(run)
    out: list[tuple] = []  # (row, starts, ends) per process and save
    for save in found:
        producer, writer, end = save["producer"], save["writer"], save["end_ns"]
        if writer is not None and writer != producer:
            end = work.close(writer, save["start_ns"], end)
            out.append((writer, *work.writes(writer, save["start_ns"], end)))
        out.append((producer, *work.fill(producer, save, end)))
    if not out:
        return tuple(np.zeros(0, np.int64) for _ in range(3))
    row = np.repeat(np.array([proc for proc, _, _ in out], np.int64), [len(starts) for _, starts, _ in out])
    start, end = (np.concatenate([piece[i] for piece in out]) for i in (1, 2))
    # Stable: ties in the order found. One key for the pair, not np.lexsort((start, row)):
    # 4x faster on the tens of millions of a 10M-chunk run.
    try:
        order = np.argsort(_keys(row, start, len(run.processes)), kind="stable")
    except ValueError:  # (a process's life too long for one key with this many: sorted as a pair)
        order = np.lexsort((start, row))
    return row[order], start[order], end[order]


def _keys(rows: np.ndarray, times: np.ndarray, n_rows: int) -> np.ndarray:
    """Each (row, time) as one int64 that sorts as the pair: row << bits | the time since the row's first."""
    first = np.full(n_rows, np.iinfo(np.int64).max)
    last = np.full(n_rows, np.iinfo(np.int64).min)
    np.minimum.at(first, rows, times)
    np.maximum.at(last, rows, times)
    has = last >= first
    keys = times - first[rows]
    keys |= rows << nesting.key_bits(int((last[has] - first[has]).max(initial=0)), n_rows)
    return keys


class _Work:
    """What the spans are found from: each process's hooked calls (chunk_columns:
    each process's in start order), buffer records, writers started and checkpoint files."""

    def __init__(self, run):
        codes = {name: code for code, name in run.phase_names.items()}
        self.gen, self.put, self.write = (codes.get(name, -1) for name in ("gen", "put", "write"))
        c = run.chunk_columns
        self.starts, self.ends, self.phases = c["start_ns"], c["end_ns"], c["phase"]
        self.bounds = saves_found.index(run).chunk_bounds
        self.is_loop = np.zeros(max([*run.phase_names, int(self.phases.max()) if len(self.phases) else 0]) + 1, bool)
        self.is_loop[list(loop_components(codes))] = True  # a writer's loop calls: the last is its close
        self.created, self.mapped = _times(run.shm, CREATED), _times(run.shm, MAPPED)
        self.started = _writers_started(run)
        self.file_ends = _times(files.checkpoint_spans(run), None, "end_ns")

    def calls(self, row: int, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(starts, ends, phases) of the row's calls inside [a, b]."""
        first, stop = int(self.bounds[row]), int(self.bounds[row + 1])
        lo = first + int(np.searchsorted(self.starts[first:stop], a))
        hi = first + int(np.searchsorted(self.starts[first:stop], b, side="right"))
        inside = self.ends[lo:hi] <= b
        return (self.starts[lo:hi][inside].astype(np.int64), self.ends[lo:hi][inside].astype(np.int64),
                self.phases[lo:hi][inside])

    def close(self, writer: int, start: int, end: int) -> int:
        """The writer's close in the save [start, end]: its last loop call's end or its
        checkpoint file's (the interposer's), else the save's end (its exit, as a rule)."""
        _, ends, phases = self.calls(writer, start, end)
        closes = ends[self.is_loop[phases]].tolist() + [t for t in self.file_ends.get(writer, ()) if start <= t <= end]
        return max(closes, default=end)

    def writes(self, writer: int, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        """Its write calls from its attach of the buffers (else its first call) to its close, else that span."""
        starts, _, _ = self.calls(writer, start, end)
        attached = _first(self.mapped.get(writer, ()), start, end, int(starts.min()) if len(starts) else start)
        starts, ends, phases = self.calls(writer, attached, end)
        mine = phases == self.write
        return (starts[mine], ends[mine]) if mine.any() else _one(attached, end)

    def fill(self, producer: int, save: dict, end: int) -> tuple[np.ndarray, np.ndarray]:
        """Its gen calls from the buffers' creation to the writer's close; else from its
        writer's start to its last hand-off (handoffs' fill); else that span."""
        begin = _first(self.created.get(producer, ()), save["start_ns"], end, save["start_ns"])
        starts, ends, phases = self.calls(producer, begin, end)
        if (phases == self.gen).any():
            return starts[phases == self.gen], ends[phases == self.gen]
        if (phases == self.put).any():
            started = _first(self.started.get((producer, save["writer_pid"]), ()), begin, end, begin)
            return _one(started, int(ends[phases == self.put].max()))
        return _one(begin, end)


def _one(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([a], np.int64), np.array([b], np.int64)


def _times(records: np.ndarray, ops: tuple[int, ...] | None, column: str = "t_ns") -> dict[int, list[int]]:
    """Process row -> the times of its records (of these ops: buffer records), in order."""
    chosen = records if ops is None else records[np.isin(records["op"], ops)]
    out: dict[int, list[int]] = {}
    for proc, t in zip(chosen["proc"].tolist(), chosen[column].tolist()):
        out.setdefault(proc, []).append(t)
    return {proc: sorted(times) for proc, times in out.items()}


def _writers_started(run) -> dict[tuple[int, int], list[int]]:
    """(process row, child pid) -> the ends of its Process.start() calls that started that child, in order."""
    out: dict = {}
    starts = run.events[run.events["kind"] == "process_start"]
    for proc, data in zip(starts["proc"].tolist(), starts["data"].tolist()):
        if data.get("started") and data.get("child_pid") is not None and data.get("end_ns") is not None:
            out.setdefault((proc, int(data["child_pid"])), []).append(int(data["end_ns"]))
    return {key: sorted(times) for key, times in out.items()}


def _first(times, start: int, end: int, otherwise: int) -> int:
    """The first of the sorted times inside [start, end], else otherwise."""
    at = bisect.bisect_left(times, start)
    return times[at] if at < len(times) and times[at] <= end else otherwise
