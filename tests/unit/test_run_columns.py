"""The columnar data path gives the answers of the record-array one: the
chunk columns against the files read record by record, journal lines checked
a field at a time against one at a time, interval labels painted over sorted
points against a search per point, a big run's saves host by host against
the whole run's."""

import json
import random

import numpy as np
import pytest
from test_run_load import chunk, write_journal, write_meta

from writerprof.analysis import criticalpath, hostwise, saves
from writerprof.probes.writerprof_probe import format as journal
from writerprof.run import columns, fields, load
from writerprof.run.loader import CHUNK_DTYPE, CHUNKS_DTYPE
from writerprof.synthetic import Scenario, write_run

PHASE = journal.PHASES


def reference_chunks(run):
    """Every whole record of every loaded journal, with its process, in start order (the old loader's way)."""
    parts = []
    for proc, (host, pid, created) in enumerate(zip(run.processes["host"], run.processes["pid"],
                                                    run.processes["created_ns"])):
        file = run.path / "hosts" / host / "procs" / f"{pid}-{created}{journal.CHUNKS_SUFFIX}"
        data = file.read_bytes()
        records = np.frombuffer(data[:len(data) - len(data) % CHUNK_DTYPE.itemsize], CHUNK_DTYPE)
        parts.append((records, proc, run.hosts.index(host), pid))
    out = np.concatenate([r for r, *_ in parts]) if parts else np.empty(0, CHUNK_DTYPE)
    extra = {"host_index": [h for r, _, h, _ in parts for _ in r], "pid": [p for r, *_, p in parts for _ in r],
             "proc": [p for r, p, *_ in parts for _ in r]}
    order = np.argsort(out["start_ns"], kind="stable")
    return out[order], {name: np.array(v, dtype=np.int64)[order] for name, v in extra.items()}


def nested_run(tmp_path):
    """Two hosts; each process's outer calls recorded after the calls inside
    them (as the probe appends a record when its call ends), one file empty,
    one cut mid-record."""
    run = write_meta(tmp_path / "run")
    outer = (PHASE["save"], 0, 1, -1, 0, 7, 1500, 2500, -1, 0, 0)
    write_journal(run, "alpha", 100, 1000, chunks=[
        chunk(PHASE["gen"], 2000), (PHASE["put"], 1, 2, 0, 0, 7, 2050, 2060, 4096, 0, 0), outer,
        chunk(PHASE["gen"], 1400)])
    write_journal(run, "alpha", 200, 1100, chunks=[])  # an empty chunks file
    write_journal(run, "beta", 100, 900, chunks=[chunk(PHASE["write"], 1950), chunk(PHASE["write"], 1200)],
                  cut_chunks=journal.CHUNK.pack(*chunk(4, 3000))[:30])
    write_journal(run, "beta", 300, 950, chunks=[chunk(PHASE["write"], 2000, tid=9)])
    return run


@pytest.mark.parametrize("batch_bytes", [columns.BATCH_BYTES, CHUNK_DTYPE.itemsize])
def test_columns_hold_every_record_grouped_by_process_in_start_order(tmp_path, monkeypatch, batch_bytes):
    monkeypatch.setattr(columns, "BATCH_BYTES", batch_bytes)  # one batch, or a file a batch
    run = load(nested_run(tmp_path))
    c = run.chunk_columns
    assert len(c) == 7 and c["proc"].tolist() == [0, 0, 0, 0, 2, 2, 3]  # the empty file has none
    assert c["start_ns"].tolist()[:4] == [1400, 1500, 2000, 2050]  # the outer save before what it holds
    assert c["depth"].tolist()[:4] == [0, 0, 0, 1]
    assert c["host_index"].tolist() == [0, 0, 0, 0, 1, 1, 1] and c["pid"].tolist() == [100] * 4 + [100, 100, 300]
    assert all(column.flags.c_contiguous for column in c._columns.values())
    assert "hosts/beta/procs/100-900.chunks.bin: 30 bytes of a partial record dropped (target killed mid-write?)" \
        in run.losses


def impossible_run(tmp_path):
    """Processes with impossible records among plausible ones, before and after the worker's first file."""
    run = write_meta(tmp_path / "run", started_ns=1, ended_ns=10**9)
    for i, pid in enumerate(range(100, 700, 100)):
        impossible = [chunk(4, 2**62), chunk(4, 5000 + i, end_ns=4000)] if pid in (200, 500) else []
        write_journal(run, "alpha", pid, 1000 + i, chunks=[chunk(4, 1300 + i), *impossible, chunk(3, 1200 + i, tid=i)])
    return run


@pytest.mark.parametrize("fails", [False, True])
@pytest.mark.parametrize("share", [0.3, 0.7, 1.0])
def test_columns_read_partly_by_a_worker_are_those_read_here(tmp_path, monkeypatch, share, fails):
    here = load(impossible_run(tmp_path))
    monkeypatch.setattr(columns, "PARALLEL_RECORDS", 0)
    monkeypatch.setattr(columns.forked, "spare_cpu", lambda: True)
    monkeypatch.setattr(columns, "WORKER_SHARE", share)
    monkeypatch.setattr(columns, "BATCH_BYTES", 2 * CHUNK_DTYPE.itemsize)
    if fails:  # the worker's result cannot be sent: read here instead
        monkeypatch.setattr(columns.forked, "dumps", lambda value: 1 / 0)
    there = load(impossible_run(tmp_path / "again"))
    assert there.losses == here.losses and len(here.losses) == 2
    assert len(there.chunk_columns) == len(here.chunk_columns) == 12
    for name in here.chunk_columns.names:
        assert there.chunk_columns[name].tolist() == here.chunk_columns[name].tolist(), name


def test_columns_a_worker_filled_in_shared_pages_take_no_writes(tmp_path, monkeypatch):
    """A write to them would reach the processes summarize forks after."""
    monkeypatch.setattr(columns, "PARALLEL_RECORDS", 0)
    monkeypatch.setattr(columns.forked, "spare_cpu", lambda: True)
    c = load(nested_run(tmp_path)).chunk_columns
    assert len(c) and not any(c[name].flags.writeable for name in c.names if name not in ("pid", "host_index"))
    with pytest.raises(ValueError):
        c["start_ns"][0] = 0


def test_run_chunks_are_the_records_interleaved_in_start_order(tmp_path):
    run = load(nested_run(tmp_path))
    records, extra = reference_chunks(run)
    assert run.chunks.dtype == CHUNKS_DTYPE
    for name in CHUNK_DTYPE.names:
        assert run.chunks[name].tolist() == records[name].tolist(), name
    for name, values in extra.items():
        assert run.chunks[name].tolist() == values.tolist(), name
    assert [tuple(r) for r in run.chunk_columns[np.argsort(run.chunk_columns["start_ns"], kind="stable")]] == \
        [tuple(r) for r in run.chunks]


def test_empty_and_missing_chunk_files(tmp_path):
    run = write_meta(tmp_path / "run")
    write_journal(run, "alpha", 100, 1000, chunks=[])
    loaded = load(run)
    assert len(loaded.chunk_columns) == 0 and len(loaded.chunks) == 0
    assert loaded.chunk_columns["pid"].dtype == np.int32 and loaded.losses == []
    assert saves.find(loaded) == []


def test_chunks_select_like_a_record_array(tmp_path):
    c = load(nested_run(tmp_path)).chunk_columns
    writes = c[c["phase"] == PHASE["write"]]
    assert len(writes) == 3 and writes["pid"].tolist() == [100, 100, 300]
    pairs = c[["proc", "tid"]]
    assert pairs.names == ("proc", "tid") and {(int(r["proc"]), int(r["tid"])) for r in pairs} == {(0, 7), (2, 7),
                                                                                                    (3, 9)}
    assert int(c[1]["start_ns"]) == 1500 and c[np.array([6, 0])]["proc"].tolist() == [3, 0]
    part = c.processes(2, 4)
    assert part["proc"].tolist() == [0, 0, 1] and part["pid"].tolist() == [100, 100, 300]


def test_fieldwise_cleaning_is_recordwise_cleaning():
    rng = random.Random(5)
    good = [{"kind": "shm", "t_ns": 10 + i, "op": "attach", "name": f"b{i}", "size": 4096, "index": i}
            for i in range(30)]
    odd = [
        {"kind": "shm", "t_ns": 5, "op": "attach", "name": "x", "size": -1, "index": 0},  # a negative size
        {"kind": "exit", "t_ns": 9, "via": "atexit", "code": None, "rusage": {"ru_maxrss": 1.5}},
        {"kind": "exit", "t_ns": 9, "via": "atexit", "code": "0", "rusage": {"a": float("nan")}},
        {"kind": "exit", "t_ns": 9, "via": "atexit", "code": 0, "rusage": {"a": 2, "b": 2.5, "c": float("-inf")}},
        {"kind": "phase", "t_ns": 3, "code": -2, "name": "compress"},  # a phase code must be a count
        {"kind": "phase", "t_ns": 3, "code": 40, "name": "compress"},
        {"kind": "process_start", "t_ns": 4, "start_ns": 1},  # no end_ns: unreadable
        {"kind": "process_start", "t_ns": 4, "start_ns": 1, "end_ns": 2},  # beside it: a kind of several shapes
        {"kind": "process_start", "t_ns": 4, "start_ns": 1, "method": "spawn"},  # as many fields, others
        {"kind": "exit", "t_ns": 9, "via": "atexit"},
        {"kind": "fork", "t_ns": 6, "threads": ["a", 3], "native_threads": True},
        {"kind": "fork", "t_ns": 6, "threads": ["a", "b"], "native_threads": 2},
        {"kind": ["not", "hashable"], "t_ns": 1},
        {"kind": 7, "t_ns": 1}, {"t_ns": 2}, "a string line", None,
        {"kind": "process", "t_ns": 1, "pid": 1 << 31, "created_ns": 5, "rank": None, "affinity": [0, -1]},
        {"kind": "process", "t_ns": 1, "pid": 3, "created_ns": 5, "rank": 2, "affinity": [0, 1]},
    ]
    for _ in range(5):
        files = [rng.sample(good + odd, 12) for _ in range(4)]
        expected = []
        for lines in json.loads(json.dumps(files)):
            kept, wrong = [], []
            for r in lines:
                if isinstance(r, dict):
                    readable, left_out = fields.clean_event(r)
                    wrong += left_out
                    if readable:
                        kept.append(r)
            expected.append((kept, wrong))
        got = fields.clean_events(json.loads(json.dumps(files)))
        assert json.dumps(got) == json.dumps(expected)


def _label_by_search(points, starts, ends, labels):
    """The labels as found before: a search per point among the starts."""
    order = np.argsort(starts, kind="stable")
    starts, ends, labels = starts[order], ends[order], labels[order]
    at = np.searchsorted(starts, points, side="right") - 1
    inside = (at >= 0) & (points < ends[np.maximum(at, 0)])
    return np.where(inside, labels[np.maximum(at, 0)], -1)


def test_pieces_hold_the_searched_labels():
    rng = np.random.default_rng(3)
    for _ in range(50):
        points = np.unique(rng.integers(0, 200, 120))
        starts = rng.integers(0, 200, 30)  # overlapping, tied and empty intervals too
        ends = starts + rng.integers(0, 40, 30)
        labels = rng.integers(0, 9, 30)
        start, stop, label = criticalpath._pieces(starts, ends, labels)
        at = np.searchsorted(start, points, side="right") - 1
        inside = (at >= 0) & (points < stop[np.maximum(at, 0)])
        assert np.where(inside, label[np.maximum(at, 0)], -1).tolist() == \
            _label_by_search(points, starts, ends, labels).tolist()
    assert [len(a) for a in criticalpath._pieces(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))] == \
        [0, 0, 0]


def test_saves_host_by_host_are_the_whole_runs(tmp_path, monkeypatch):
    write_run(tmp_path / "run", Scenario(hosts=3, ranks_per_host=2, saves=2, chunks_per_save=6, jitter=0.2,
                                         start_method="forkserver"))
    run = load(tmp_path / "run")
    whole = saves.find(run)
    monkeypatch.setattr(hostwise, "PART_RECORDS", len(run.chunk_columns) // 3)
    parts = hostwise.parts(run)
    assert parts is not None and len(parts) >= 2
    saves._indexed.clear()
    assert json.dumps(saves.find(run)) == json.dumps(whole)
    assert {s["producer"] for s in whole} == {p for p, role in enumerate(run.processes["role"]) if role == "main"}
