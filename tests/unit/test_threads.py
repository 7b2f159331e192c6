"""Per-thread readings: the sampler reads every thread of a process from
/proc/PID/task/TID/stat (files in the real format of a two-node guest kernel,
../shared/fixtures/numa2), and the analysis weights each thread's node by the
CPU time it used, so a main thread idling on node 0 while two filling threads
burn CPU on node 1 is judged as node 1."""

from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np
import pytest

from test_procfs import NUMA2, SAMPLE_PID, needs_numa2, write_process
from writerprof.analysis import processes, threads
from writerprof.probes.writerprof_probe import format as journal
from writerprof.record import procfs
from writerprof.record.sampler import Sampler
from writerprof.record.system import System
from writerprof.record.topology import snapshot
from writerprof.run import directory, layout, load
from writerprof.run.loader import PROCESSES_DTYPE, thread_samples

PID = 4242
MAIN, FILL1, FILL2 = PID, 4250, 4251


def real_stat() -> str:
    return (NUMA2 / "proc" / SAMPLE_PID / "stat").read_text()


def thread_stat(tid: int, comm: str, *, utime: int, stime: int, cpu: int, start: int = 1503) -> str:
    """The guest's real stat line with this thread's pid, comm, times, start and CPU."""
    text = real_stat()
    close = text.rindex(")")
    fields = text[close + 2:].split()
    fields[11], fields[12], fields[19], fields[36] = str(utime), str(stime), str(start), str(cpu)
    return f"{tid} ({comm}) {' '.join(fields)}\n"


def write_threads(root, readings: dict[int, tuple]) -> None:
    """task/TID/stat of PID, and its stat summing them (cpu: the main thread's)."""
    task = root / "proc" / str(PID) / "task"
    for tid, (comm, utime, stime, cpu) in readings.items():
        (task / str(tid)).mkdir(parents=True, exist_ok=True)
        (task / str(tid) / "stat").write_text(thread_stat(tid, comm, utime=utime, stime=stime, cpu=cpu))
    total_u = sum(r[1] for r in readings.values())
    total_s = sum(r[2] for r in readings.values())
    main_cpu = readings[MAIN][3]
    write_process(root, PID, cpus="0-1", utime=total_u, stime=total_s, cpu=main_cpu, threads=len(readings))


@needs_numa2
def test_thread_stat_of_the_real_format():
    thread = procfs.parse_thread_stat(real_stat().encode())
    assert thread == procfs.ThreadStat(tid=286, name="python3", cpu=0, utime_ns=116 * procfs.TICK_NS,
                                       stime_ns=62 * procfs.TICK_NS, start_ticks=1503)


@needs_numa2
def test_thread_names_with_spaces_and_parentheses():
    thread = procfs.parse_thread_stat(thread_stat(7, "fill (1) x", utime=3, stime=1, cpu=1).encode())
    assert (thread.tid, thread.name, thread.cpu, thread.utime_ns) == (7, "fill (1) x", 1, 3 * procfs.TICK_NS)


@needs_numa2
def test_every_thread_is_read(tmp_path):
    write_threads(tmp_path, {MAIN: ("python3", 50, 5, 0), FILL1: ("fill", 10, 0, 1), FILL2: ("fill", 20, 1, 1)})
    found = {t.tid: t for t in procfs.read_threads(System(tmp_path), PID)}
    assert set(found) == {MAIN, FILL1, FILL2}
    assert (found[FILL2].cpu, found[FILL2].utime_ns, found[FILL2].stime_ns) == (1, 20 * procfs.TICK_NS,
                                                                               procfs.TICK_NS)
    assert procfs.read_threads(System(tmp_path), 999) == []  # gone


@needs_numa2
def test_thread_files_stay_open_up_to_the_budget_and_close_as_threads_end(tmp_path):
    write_threads(tmp_path, {MAIN: ("python3", 50, 5, 0), FILL1: ("fill", 10, 0, 1), FILL2: ("fill", 20, 1, 1)})
    reader = procfs.TaskFiles(System(tmp_path), PID, "stat", keep_open=2)
    assert len(reader.read()) == 3 and len(reader.fds) == 2
    write_threads(tmp_path, {MAIN: ("python3", 50, 5, 0), FILL1: ("fill", 99, 0, 1), FILL2: ("fill", 20, 1, 1)})
    read = [procfs.parse_thread_stat(data) for _, data in reader.read()]
    assert {t.tid: t.utime_ns for t in read}[FILL1] == 99 * procfs.TICK_NS  # re-read in place
    kept = set(reader.fds)
    for tid in kept:
        (tmp_path / "proc" / str(PID) / "task" / tid / "stat").unlink()
        (tmp_path / "proc" / str(PID) / "task" / tid).rmdir()
    left = reader.read()
    assert len(left) == 1 and reader.fds.keys() <= {tid for tid, _ in left}
    reader.close()
    assert reader.fds == {}


def record(tmp_path, ticks: list[dict[int, tuple]]) -> tuple:
    """The sampler's ticks over a fixture tree whose threads read as given, tick by tick."""
    run_dir = directory.create(tmp_path / "run", [sys.executable], interval_ns=20_000_000, sampler=True,
                               probes=[], env={})
    host_dir = layout.host_dir(run_dir, journal.host_name())
    root = tmp_path / "root"
    sampler = Sampler(PID, host_dir, 0.02, system=System(root))
    for readings in ticks:
        write_threads(root, readings)
        sampler.tick()
    sampler.stop()
    directory.finish(run_dir, exit_status=0, ended_by="exit", signal=None)
    return run_dir, host_dir


IDLE_MAIN_BUSY_POOL = [
    {MAIN: ("python3", 40, 4, 0), FILL1: ("fill", 0, 0, 1), FILL2: ("fill", 0, 0, 1)},
    {MAIN: ("python3", 40, 4, 0), FILL1: ("fill", 30, 2, 1), FILL2: ("fill", 28, 3, 1)},  # main blocked
    {MAIN: ("python3", 40, 4, 0), FILL1: ("fill", 61, 3, 1), FILL2: ("fill", 59, 4, 1)},
]


def thread_records(host_dir) -> np.ndarray:
    return thread_samples(host_dir / layout.THREADS_FILE)


@needs_numa2
def test_a_thread_is_written_only_when_its_cpu_time_grew(tmp_path):
    _, host_dir = record(tmp_path, IDLE_MAIN_BUSY_POOL)
    t = thread_records(host_dir)
    t = t[np.lexsort((t["tid"], t["t_ns"]))]  # a tick's threads in the order the kernel lists them
    # The first tick: the main thread only (the pool had used nothing yet); then the pool alone.
    assert t["tid"].tolist() == [MAIN, FILL1, FILL2, FILL1, FILL2]
    assert (t["pid"] == PID).all() and t["name"].tolist() == [b"python3"] + [b"fill"] * 4
    ticks = np.unique(t["t_ns"])
    assert len(ticks) == 3  # and none in the last tick, stop()'s: nothing ran
    assert (t["since_ns"][1:3] == ticks[0]).all() and (t["since_ns"][3:] == ticks[1]).all()
    assert t["utime_ns"][3] == 61 * procfs.TICK_NS and (t["cpu"][1:] == 1).all()


@needs_numa2
def test_a_process_that_did_not_run_costs_no_thread_read(tmp_path, monkeypatch):
    reads = []
    read = procfs.TaskFiles.read
    monkeypatch.setattr(procfs.TaskFiles, "read",
                        lambda self, *given: (self.name == "/stat" and reads.append(self.base)) or read(self, *given))
    same = IDLE_MAIN_BUSY_POOL[0]
    _, host_dir = record(tmp_path, [same, same, same])
    assert thread_records(host_dir)["tid"].tolist() == [MAIN]
    assert len(reads) == 1  # at first sight only: its CPU time and thread count stayed the same


def with_process(run, created_ns=0):
    """The run as if the probe had journaled PID, on the two-node guest's topology."""
    p = np.zeros(1, PROCESSES_DTYPE)
    p[0] = (run.hosts[0], PID, 1, created_ns, -1, "", -1)
    return dataclasses.replace(run, processes=p, topology={run.hosts[0]: snapshot(System(NUMA2))})


@needs_numa2
def test_an_idle_main_thread_on_node_0_weighs_nothing_against_a_filling_pool_on_node_1(tmp_path):
    run_dir, _ = record(tmp_path, IDLE_MAIN_BUSY_POOL)
    run = with_process(load(run_dir))
    assert run.losses == []
    assert set(run.samples["cpu"].tolist()) == {0}  # the process's own stat: its main thread's CPU
    # Only the filling time: the spans start after the main thread's start-up.
    (t0, t1, t2) = np.unique(run.threads["t_ns"])
    found = threads.worked(run, [(np.array([0]), np.array([t0]), np.array([t2]))])
    assert found[0]["nodes"] == {1: pytest.approx((61 + 3 + 59 + 4) / 1e2)}
    assert [(t["tid"], t["name"], t["main"]) for t in found[0]["threads"]] == [
        (FILL1, "fill", False), (FILL2, "fill", False)]  # the busiest first: 64 ticks, then 63
    assert found[0]["threads"][0]["cpu_s"] + found[0]["threads"][1]["cpu_s"] == pytest.approx(1.27)
    nodes, source = processes._worked(processes.shares(found[0]["nodes"]), {"0": 1.0}, {"0": 1.0})
    assert (nodes, source) == ({"1": 1.0}, processes.WORKED_FROM_THREADS)


@needs_numa2
def test_over_its_whole_life_the_main_threads_start_up_counts_too(tmp_path):
    run_dir, _ = record(tmp_path, IDLE_MAIN_BUSY_POOL)
    found = threads.worked(with_process(load(run_dir)), [])
    assert found[0]["nodes"] == {0: pytest.approx(0.44), 1: pytest.approx(1.27)}
    assert found[0]["threads"][-1]["tid"] == MAIN and found[0]["threads"][-1]["main"]


@needs_numa2
def test_the_probes_stack_sampling_thread_is_not_the_processs_work(tmp_path):
    sampler = 4260
    readings = [{**reading, sampler: (journal.STACKS_THREAD, 5 * i, i, 0)}
                for i, reading in enumerate(IDLE_MAIN_BUSY_POOL)]
    run_dir, _ = record(tmp_path, readings)
    run = with_process(load(run_dir))
    assert sampler in run.threads["tid"].tolist()  # read as any thread, and left out of the work
    found = threads.worked(run, [])
    assert found[0]["nodes"] == {0: pytest.approx(0.44), 1: pytest.approx(1.27)}
    assert sampler not in [t["tid"] for t in found[0]["threads"]]


def test_a_run_without_thread_readings_falls_back(tmp_path):
    assert processes._worked({}, {"0": 1.0}, {"1": 1.0}) == ({"0": 1.0}, processes.WORKED_FROM_CALLS)
    assert processes._worked({}, {}, {"1": 1.0}) == ({"1": 1.0}, processes.WORKED_FROM_SAMPLES)
    assert processes._worked({}, {}, {}) == ({}, None)


def test_spans_are_merged_and_time_inside_them_counted():
    starts, ends = threads.merged(np.array([5, 0, 20, 8]), np.array([10, 6, 30, 9]))
    assert starts.tolist() == [0, 20] and ends.tolist() == [10, 30]
    assert threads.time_inside(starts, ends, np.array([0, 5, 15, 25, 40])).tolist() == [0, 5, 10, 15, 20]


def test_each_process_is_counted_inside_its_own_spans_only():
    rng = np.random.default_rng(1)
    rows = np.repeat([0, 2, 3], 50)
    since = rng.integers(1000, 2000, 150)
    until = since + rng.integers(1, 300, 150)
    span_row = np.repeat([0, 2, 3], 5)
    span_start = rng.integers(900, 2100, 15)
    span_end = span_start + rng.integers(1, 200, 15)
    found = threads._share_inside(rows, since, until, span_row, span_start, span_end)
    for row, a, b, share in zip(rows, since, until, found):
        starts, ends = threads.merged(span_start[span_row == row], span_end[span_row == row])
        inside = threads.time_inside(starts, ends, np.array([a, b]))
        assert share == pytest.approx((inside[1] - inside[0]) / (b - a))


def test_spans_taken_a_few_processes_at_a_time_weigh_the_threads_as_all_at_once(tmp_path, monkeypatch):
    from writerprof.analysis import saves, work_windows
    from writerprof.run import roles
    from writerprof.synthetic import Scenario, write_run

    write_run(tmp_path / "run", Scenario(hosts=2, ranks_per_host=2, saves=2, chunks_per_save=6, chunk_size=1 << 20))
    run = load(tmp_path / "run")
    found = saves.find(run)
    whole = processes.work(run, roles.roles(run), found)[1]
    assert threads._blocks([(np.zeros(10, np.int32), None, None)], 3) == [(0, 3)]
    monkeypatch.setattr(threads, "SPAN_BLOCK", 5)
    monkeypatch.setattr(work_windows, "BLOCK_RECORDS", 1)  # a piece of spans per save
    blocks = threads._blocks(work_windows.spans(run, found), len(run.processes))
    assert len(blocks) > 3 and blocks[0][0] == 0 and blocks[-1][1] == len(run.processes)  # every row, in ranges
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    assert processes.work(run, roles.roles(run), found)[1] == whole
    assert any(work["threads"] for work in whole.values())


def test_spans_of_processes_without_thread_readings_change_nothing(tmp_path):
    from writerprof.analysis.samples import thread_rows
    from writerprof.synthetic import Scenario, write_run

    write_run(tmp_path / "run", Scenario(hosts=1, ranks_per_host=1, saves=1, chunks_per_save=2, chunk_size=1 << 20))
    run = load(tmp_path / "run")
    run = dataclasses.replace(run, threads=run.threads[thread_rows(run) != 2])  # row 2: no readings
    assert len(run.threads)
    assert threads.worked(run, [(np.array([2]), np.array([0]), np.array([1]))]) == threads.worked(run, [])
