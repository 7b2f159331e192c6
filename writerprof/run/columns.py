"""A run's chunk records as columns: one contiguous array per field, read
from the .chunks.bin files in batches, so that a run of tens of millions of
records is read in seconds and held once, and every analysis pass over a
field reads contiguous memory (a field of the packed on-disk records is a
strided view, several times slower to scan).

Rows are grouped by process (run.processes order), each process's in the
order its calls started. The `pid` and `host_index` of a row are its
process's: computed from `proc` when asked for, not stored.

Chunks answers what the analysis asks of a structured array: c["start_ns"]
(a column), c[["proc", "tid"]] and c[mask or rows] (a Chunks of those), len,
dtype; iterating it, or np.asarray(c), makes the records (for the few
per-record uses: exports, tests)."""

from __future__ import annotations

import mmap
import os
from contextlib import contextmanager
from functools import partial
from pathlib import Path

import numpy as np

from writerprof import forked
from writerprof.run import ownfile

# Bytes of records read per batch: small enough that the batch stays in the
# CPU's cache while its fields are copied out one by one (a batch of tens of
# MiB is read from memory once per field, three times slower), big enough
# that numpy's per-call cost is nothing.
BATCH_BYTES = 4 << 20

# Runs of this many records or more are read partly by a forked worker (see
# reading): the fork (of a process of some GB) and the shared pages' faults
# cost tens of ms.
PARALLEL_RECORDS = 2 << 20
WORKER_SHARE = 0.55  # the caller has little else to do meanwhile (read the samples)

# Records a pass over every chunk record takes at a time where it needs
# temporaries of what it takes (a mask's selection, a field widened to
# int64 or float64): MiBs, not a 10M-chunk run's GiB.
BLOCK_RECORDS = 1 << 21


def blocks(n: int) -> list[slice]:
    """Slices of BLOCK_RECORDS covering records 0 to n - 1 (none for none)."""
    return [slice(at, at + BLOCK_RECORDS) for at in range(0, n, BLOCK_RECORDS)]


class Chunks:
    def __init__(self, columns: dict[str, np.ndarray], dtype: np.dtype, per_proc: dict[str, np.ndarray]):
        self._columns = columns  # field -> 1-D array, all of one length
        self._dtype = dtype  # the fields as records (CHUNKS_DTYPE), their order
        self._per_proc = per_proc  # a derived field -> its value per process row
        self._len = len(next(iter(columns.values()))) if columns else 0

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def names(self) -> tuple[str, ...]:
        return self._dtype.names

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, key):
        if isinstance(key, str):
            if key in self._columns:
                return self._columns[key]
            if key in self._per_proc:
                return self._per_proc[key][self._columns["proc"]]
            raise ValueError(f"no field of name {key}")
        if isinstance(key, list) and all(isinstance(k, str) for k in key):
            return Chunks({k: self[k] for k in key}, np.dtype([(k, self._dtype[k]) for k in key]), {})
        if isinstance(key, (int, np.integer)):
            return self.to_records(np.array([key]))[0]
        return Chunks({k: v[key] for k, v in self._columns.items()}, self._dtype, self._per_proc)

    def processes(self, first: int, stop: int) -> Chunks:
        """The rows of process rows first to stop - 1 (views of the columns but
        proc), renumbered from 0, as a run of those processes alone has them."""
        proc = self._columns["proc"]
        a, b = np.searchsorted(proc, np.array([first, stop], dtype=proc.dtype))  # proc's type: no copy of it
        columns = {name: column[a:b] for name, column in self._columns.items()}
        columns["proc"] = columns["proc"] - np.int32(first)
        return Chunks(columns, self._dtype, {name: v[first:stop] for name, v in self._per_proc.items()})

    def to_records(self, rows=None) -> np.ndarray:
        """These rows (all: None) as a structured array of dtype self.dtype."""
        n = len(self) if rows is None else len(rows)
        out = np.empty(n, self._dtype)
        for name in self._dtype.names:
            out[name] = self[name] if rows is None else self[name][rows]
        return out

    def __array__(self, dtype=None, copy=None):
        records = self.to_records()
        return records if dtype is None else records.astype(dtype)

    def __iter__(self):
        return iter(self.to_records())

    def __repr__(self) -> str:
        return f"Chunks({len(self)} records: {', '.join(self.names)})"


@contextmanager
def reading(files: list[tuple[str | Path, int]], file_dtype: np.dtype, dtype: np.dtype,
            per_proc: dict[str, np.ndarray], implausible, renumber):
    """A function that returns the records of the journals' chunk files
    (files[p]: process p's file, or an array of its records, and their
    count) as Chunks, grouped
    by process and in start order within one, and, per process, the records
    implausible dropped. implausible(records, procs, counts) -> None if every
    record of a batch (counts[i] records of process procs[i], one after
    another) is plausible, else the rows that are not; renumber(phase,
    procs, counts) -> run-wide phase codes.

    Of a run of PARALLEL_RECORDS or more, with a CPU to spare, a forked
    worker reads the last files' records (WORKER_SHARE of them) from the
    start, into columns in shared memory, while the caller does its other
    work before it asks; the caller's process reads the rest when it asks."""
    total = sum(count for _, count in files)
    split = len(files) if total < PARALLEL_RECORDS or not forked.spare_cpu() else int(
        np.searchsorted(np.cumsum([count for _, count in files]), total * (1 - WORKER_SHARE)))
    shared = split < len(files)
    columns = {name: _empty(total, dtype[name], shared) for name in dtype.names if name not in per_proc}
    theirs = sum(count for _, count in files[:split])  # the worker's first row
    fill = partial(_fill, files, file_dtype, columns, implausible, renumber)
    worker = forked.fork(lambda: forked.dumps(fill(range(split, len(files)), theirs))) if shared else None

    def result() -> tuple[Chunks, np.ndarray]:
        nonlocal columns, worker
        filled, dropped = fill(range(split), 0)
        if shared:
            done, worker = forked.collect(*worker) if worker else None, None
            end, their_dropped = done if done is not None else fill(range(split, len(files)), theirs)
            if filled < theirs:  # some of the first files' records dropped: the worker's follow on
                for column in columns.values():
                    column[filled:filled + end - theirs] = column[theirs:end]
            filled += end - theirs
            dropped += their_dropped
        if filled < total:  # some dropped: let the unused tails go
            columns = {name: column[:filled].copy() for name, column in columns.items()}
        elif shared:  # a write to shared pages would reach every process forked after (summarize's)
            for column in columns.values():
                column.flags.writeable = False
        return Chunks(columns, dtype, per_proc), dropped

    try:
        yield result
    finally:
        if worker:  # the caller failed
            forked.discard(*worker)


def _fill(files, file_dtype: np.dtype, columns: dict[str, np.ndarray], implausible, renumber,
          indices: range, start: int) -> tuple[int, np.ndarray]:
    """Those files' plausible records into the columns from row start on, in
    batches: the row after the last, and the records dropped per file."""
    dropped = np.zeros(len(files), dtype=np.int64)
    filled = start
    batches = list(_batches(files, indices, file_dtype))
    # One buffer for every batch (each is copied out of it), the size of the biggest.
    buffer = memoryview(np.empty(max((_batch_bytes(files, batch, file_dtype) for batch in batches), default=0),
                                 dtype=np.uint8))
    for batch in batches:
        records, counts = _read_batch(files, batch, file_dtype, buffer)
        procs = np.array(batch, dtype=np.int32)
        bad = implausible(records, procs, counts)
        if bad is not None:
            lost = np.bincount(np.repeat(np.arange(len(batch)), counts)[bad], minlength=len(batch))
            dropped[procs] += lost
            counts = counts - lost
            records = records[~bad]
        _in_start_order(records, counts, file_dtype)
        end = filled + len(records)
        for name in columns:
            if name == "proc":
                columns[name][filled:end] = np.repeat(procs, counts)
            elif name == "phase":
                columns[name][filled:end] = renumber(records["phase"], procs, counts)
            else:
                columns[name][filled:end] = records[name]
        filled = end
    return filled, dropped


def _empty(n: int, dtype: np.dtype, shared: bool = False) -> np.ndarray:
    """A column to fill, in plain pages: numpy asks for transparent huge
    pages for a big array, and on the 2-CPU VM the benchmarks run on their
    first touch cost 2-3x the kernel time of 4 KiB pages (loading the
    10M-chunk run, 2 GiB of columns: 5-8 s of system time with them, 3 s
    without). Shared: pages a forked worker fills for this process."""
    size = n * dtype.itemsize
    if size < 1 << 22 and not shared:  # numpy's threshold for huge pages
        return np.empty(n, dtype)
    flags = (mmap.MAP_SHARED if shared else mmap.MAP_PRIVATE) | mmap.MAP_ANONYMOUS
    return np.frombuffer(mmap.mmap(-1, max(size, 1), flags=flags), dtype=dtype, count=n)


def _in_start_order(records: np.ndarray, counts: np.ndarray, file_dtype: np.dtype) -> None:
    """Put the batch's records of each process in start order: a file is in
    the order the calls ended, so a call that holds others (a save) comes
    after them. Only the files out of order are sorted, in place (records is
    a scratch buffer): a tenth of the files, so moving the whole batch costs more."""
    start = records["start_ns"]
    late = np.flatnonzero(start[1:] < start[:-1]) + 1
    if not len(late):
        return
    firsts = np.cumsum(counts) - counts  # each file's first row
    late = late[~np.isin(late, firsts)]  # a file's first record after the last one's of the file before: in order
    # Whole records moved as opaque bytes.
    whole = records.view(np.dtype((np.void, file_dtype.itemsize)))
    files = np.searchsorted(firsts, late, side="right") - 1  # ascending, as late is
    # Each once (np.unique would import numpy.ma: 0.035 CPU s of record's summary).
    for file in files[np.diff(files, prepend=-1) != 0].tolist():
        a, b = firsts[file], firsts[file] + counts[file]
        whole[a:b] = whole[a:b][np.argsort(start[a:b], kind="stable")]


def _batches(files: list[tuple[str | Path, int]], indices: range, file_dtype: np.dtype):
    """Runs of consecutive file indices (of those) of about BATCH_BYTES of
    records (a bigger file alone)."""
    batch, size = [], 0
    for i in indices:
        count = files[i][1]
        if not count:
            continue
        if batch and size + count * file_dtype.itemsize > BATCH_BYTES:
            yield batch
            batch, size = [], 0
        batch.append(i)
        size += count * file_dtype.itemsize
    if batch:
        yield batch


def _batch_bytes(files, batch: list[int], file_dtype: np.dtype) -> int:
    return sum(files[i][1] for i in batch) * file_dtype.itemsize


def _read_batch(files, batch: list[int], file_dtype: np.dtype, buffer: memoryview) -> tuple[np.ndarray, np.ndarray]:
    """The records of those files, one after another (read into buffer), and how many each file had."""
    at, counts = 0, []
    for i in batch:
        path, count = files[i]
        want = count * file_dtype.itemsize
        if isinstance(path, np.ndarray):  # records made in memory (writerprof.run.io's)
            buffer[at:at + want] = path.view(np.uint8)
            counts.append(count)
            at += want
            continue
        got = 0
        if not want:  # none counted (writerprof.run.loader._count): nothing to open, whatever is there
            counts.append(0)
            continue
        fd = ownfile.open_fd(path)  # os's own calls, straight into place: 1.6x faster than through a file object
        try:
            while got < want:
                n = os.readv(fd, [buffer[at + got:at + want]])
                if not n:
                    break
                got += n
        finally:
            os.close(fd)
        got -= got % file_dtype.itemsize  # a file cut shorter since it was counted: its whole records
        counts.append(got // file_dtype.itemsize)
        at += got
    return np.frombuffer(buffer, dtype=file_dtype, count=at // file_dtype.itemsize), np.array(counts, dtype=np.int64)
