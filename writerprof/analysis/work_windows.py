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

import numpy as np

from writerprof.analysis import saves as saves_found
from writerprof.analysis.components import loop_components
from writerprof.probes.writerprof_probe.format import SHM_OPS
from writerprof.run import files

CREATED = (SHM_OPS["create"],)
MAPPED = (SHM_OPS["attach"], SHM_OPS["inherited"])
# Saves taken a block of about this many calls at a time: temporaries malloc
# reuses. All at once, a 10M-chunk run's took 3x the CPU time, most of it the
# kernel's faulting in fresh pages.
BLOCK_RECORDS = 1 << 20
NONE, NOT_SET = np.iinfo(np.int64).min, np.iinfo(np.int64).max  # no time found, for a max and a min


# A run's spans, in pieces: [(process row, int32; start_ns; end_ns)], each
# piece's row in any order; a piece of calls has their times as Taken from
# the chunk columns (8 bytes a span, not 20). Never joined: a 10M-chunk run's
# 19M, joined a column at a time, grew its report's memory by their size
# again (the pieces' freed heap is not given back).
Spans = list[tuple]


class Taken:
    """values[index], read when indexed: a column of calls' times not copied out."""

    def __init__(self, values: np.ndarray, index: np.ndarray):
        self.values, self.index = values, index

    def __getitem__(self, rows) -> np.ndarray:
        return self.values[self.index[rows]]

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.asarray(self.values[self.index], dtype=dtype)


def taken(column: np.ndarray, index: np.ndarray) -> Taken:
    """A column of calls as Taken, its index in 4 bytes where the column is short enough."""
    return Taken(column, index.astype(np.int32) if len(column) <= np.iinfo(np.int32).max else index)


def spans(run, found: list[dict]) -> Spans:
    """Every producer's and writer's work in the saves found (saves.find), on
    each host's clock, in pieces: per block of saves, the calls found and
    the windows taken whole. Not sorted: threads.worked takes a few
    processes' at a time."""
    if not found:
        return []
    work = _Work(run)
    per_block = max(1, len(found) * BLOCK_RECORDS // max(len(run.chunk_columns), 1))
    return [piece for at in range(0, len(found), per_block) for piece in _work_of(work, found[at:at + per_block])]


def _work_of(work: _Work, found: list[dict]) -> Spans:
    """The work of these saves: the writers' (where a process of its own)
    and the producers'. Every save at once, step by step."""
    start, end = (np.array([save[k] for save in found], np.int64) for k in ("start_ns", "end_ns"))
    producer = np.array([save["producer"] for save in found], np.int64)
    writer = np.array([-1 if save["writer"] is None else save["writer"] for save in found], np.int64)
    apart = np.flatnonzero((writer >= 0) & (writer != producer))  # the saves whose writer is a process of its own
    end[apart] = work.close(writer[apart], start[apart], end[apart])
    started = work.started_groups([(save["producer"], save["writer_pid"]) for save in found])
    return [*work.writes(writer[apart], start[apart], end[apart]), *work.fill(producer, start, end, started)]


class _Work:
    """What the spans are found from: each process's hooked calls (chunk_columns:
    each process's in start order), buffer records, writers started and
    checkpoint files; each asked about many (process row, window) at once."""

    def __init__(self, run):
        codes = {name: code for code, name in run.phase_names.items()}
        self.gen, self.put, self.write = (codes.get(name, -1) for name in ("gen", "put", "write"))
        c = run.chunk_columns
        self.starts, self.ends, self.phases = c["start_ns"], c["end_ns"], c["phase"]
        self.call_starts = _Sorted(self.starts, saves_found.index(run).chunk_bounds)
        self.is_loop = np.zeros(max([*run.phase_names, int(self.phases.max()) if len(self.phases) else 0]) + 1, bool)
        self.is_loop[list(loop_components(codes))] = True  # a writer's loop calls: the last is its close
        n = len(run.processes)
        self.created, self.mapped = (_times(run.shm, ops, n) for ops in (CREATED, MAPPED))
        self.started_pairs, self.started = _writers_started(run)
        self.file_ends = _times(files.checkpoint_spans(run), None, n, "end_ns")

    def calls(self, rows: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(window, call) of each row's calls inside its window [a, b], in window then time order."""
        window, call = _ranges(self.call_starts.search(rows, a), self.call_starts.search(rows, b, "right"))
        inside = self.ends[call] <= b[window]
        return window[inside], call[inside]

    def close(self, writer: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """The writer's close in each save [start, end]: its last loop call's end or its
        checkpoint file's (the interposer's), else the save's end (its exit, as a rule)."""
        window, call = self.calls(writer, start, end)
        loop = self.is_loop[self.phases[call]]
        close = np.full(len(writer), NONE)
        np.maximum.at(close, window[loop], self.ends[call[loop]])
        files_in = self.file_ends.search(writer, start), self.file_ends.search(writer, end, "right")
        has = files_in[1] > files_in[0]
        close[has] = np.maximum(close[has], self.file_ends.times[files_in[1][has] - 1])  # the last inside
        return np.where(close == NONE, end, close)

    def writes(self, writer: np.ndarray, start: np.ndarray, end: np.ndarray) -> Spans:
        """Its write calls from its attach of the buffers (else its first call) to its close, else that span."""
        # Its first call inside: the first begun in the window, as a rule; else searched among them all.
        lo, hi = self.call_starts.search(writer, start), self.call_starts.search(writer, end, "right")
        first, has = np.full(len(writer), NOT_SET), lo < hi
        first[has] = self.starts[lo[has]]
        unsure = has.copy()
        unsure[has] = self.ends[lo[has]] > end[has]
        window, call = self.calls(writer[unsure], start[unsure], end[unsure])
        first[unsure] = NOT_SET
        np.minimum.at(first, np.flatnonzero(unsure)[window], self.starts[call])
        attached = self.mapped.first_inside(writer, start, end, np.where(first == NOT_SET, start, first))
        window, call = self.calls(writer, attached, end)
        mine = self.phases[call] == self.write
        window, call = window[mine], call[mine]
        return self._pieces(writer, window, call, np.bincount(window, minlength=len(writer)) == 0, attached, end)

    def fill(self, producer: np.ndarray, start: np.ndarray, end: np.ndarray, started: np.ndarray) -> Spans:
        """Its gen calls from the buffers' creation to the writer's close; else from its
        writer's start (its group in self.started) to its last hand-off (handoffs' fill); else that span."""
        begin = self.created.first_inside(producer, start, end, start)
        window, call = self.calls(producer, begin, end)
        gen = self.phases[call] == self.gen
        has_gen = np.bincount(window[gen], minlength=len(producer)) > 0
        put = self.phases[call] == self.put
        last_put = np.full(len(producer), NONE)
        np.maximum.at(last_put, window[put], self.ends[call[put]])
        handed = (last_put != NONE) & ~has_gen
        a, b = begin.copy(), end.copy()
        a[handed] = self.started.first_inside(started[handed], begin[handed], end[handed], begin[handed])
        b[handed] = last_put[handed]
        return self._pieces(producer, window[gen], call[gen], ~has_gen, a, b)

    def started_groups(self, pairs: list[tuple]) -> np.ndarray:
        """Each (process row, child pid)'s group in self.started (none: an empty one)."""
        return np.array([self.started_pairs.get(pair, len(self.started_pairs)) for pair in pairs], np.int64)

    def _pieces(self, rows, window, call, whole, a, b) -> Spans:
        """The calls found in each window, and for the windows `whole`, [a, b]: two pieces."""
        return [(rows[window].astype(np.int32), taken(self.starts, call), taken(self.ends, call)),
                (rows[whole].astype(np.int32), a[whole], b[whole])]


class _Sorted:
    """Times in groups (process rows, ...), ascending within each: group g's are
    times[bounds[g]:bounds[g + 1]]; searched for many (group, time) at once."""

    def __init__(self, times: np.ndarray, bounds: np.ndarray):
        self.times, self.bounds = times, np.asarray(bounds, np.int64)

    @classmethod
    def of(cls, groups: np.ndarray, times: np.ndarray, n_groups: int) -> _Sorted:
        """From (group, time) pairs in any order; group n_groups is an empty one."""
        order = np.lexsort((times, groups))
        return cls(times[order].astype(np.int64), np.searchsorted(groups[order], np.arange(n_groups + 2)))

    def search(self, groups: np.ndarray, t: np.ndarray, side: str = "left") -> np.ndarray:
        """Per (group, time): np.searchsorted's place for t among the group's times, as an index of times.
        A binary search of every pair at once, a halving per pass: no copy of
        the times (a 10M-chunk run's calls are 38M), and a pass costs what the
        pairs number (the windows of a block of saves)."""
        lo, hi = self.bounds[groups], self.bounds[groups + 1]
        below = np.less if side == "left" else np.less_equal
        while True:
            open_ = np.flatnonzero(lo < hi)
            if not len(open_):
                return lo
            mid = (lo[open_] + hi[open_]) // 2
            right = below(self.times[mid], t[open_])
            lo[open_[right]] = mid[right] + 1
            hi[open_[~right]] = mid[~right]

    def first_inside(self, groups: np.ndarray, a: np.ndarray, b: np.ndarray, otherwise: np.ndarray) -> np.ndarray:
        """Per group: its first time inside [a, b], else otherwise."""
        if not len(self.times):
            return otherwise.copy()
        at = self.search(groups, a)
        t = self.times[np.minimum(at, len(self.times) - 1)]
        return np.where((at < self.bounds[groups + 1]) & (t <= b), t, otherwise)


def _ranges(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) for every j in range(lo[i], hi[i]), in order."""
    n = np.maximum(hi - lo, 0)
    i = np.repeat(np.arange(len(lo)), n)
    return i, np.arange(int(n.sum()), dtype=np.int64) + np.repeat(lo - np.cumsum(n) + n, n)


def _times(records: np.ndarray, ops: tuple[int, ...] | None, n_rows: int, column: str = "t_ns") -> _Sorted:
    """The times of each process row's records (of these ops: buffer records)."""
    chosen = records if ops is None else records[np.isin(records["op"], ops)]
    return _Sorted.of(chosen["proc"].astype(np.int64), chosen[column], n_rows)


def _writers_started(run) -> tuple[dict[tuple[int, int], int], _Sorted]:
    """(process row, child pid) -> its group of the ends of its Process.start() calls that started that child."""
    pairs: dict = {}
    groups, times = [], []
    starts = run.events[run.events["kind"] == "process_start"]
    for proc, data in zip(starts["proc"].tolist(), starts["data"].tolist()):
        if data.get("started") and data.get("child_pid") is not None and data.get("end_ns") is not None:
            groups.append(pairs.setdefault((proc, int(data["child_pid"])), len(pairs)))
            times.append(int(data["end_ns"]))
    return pairs, _Sorted.of(np.array(groups, np.int64), np.array(times, np.int64), len(pairs))
