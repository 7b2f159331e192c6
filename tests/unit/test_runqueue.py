"""Run-queue readings: the sampler reads each thread's schedstat (its CPU
time and run-queue delay) and, where the delay grew, its involuntary
switches and the host's CPU times; threads.bin is versioned, so that a run
from before the readings loads as it was, never misread. Fixture trees in
the kernel's formats (the lines below are a 6.18 kernel's)."""

from __future__ import annotations

import struct
import sys

import numpy as np
import pytest

from test_procfs import stat_line, write_process
from writerprof.analysis import runqueue
from writerprof.probes.writerprof_probe import format as journal
from writerprof.record import procfs
from writerprof.record.sampler import RUN_DELAY_NS, Sampler
from writerprof.record.system import System
from writerprof.run import directory, layout, load
from writerprof.run.loader import thread_samples

PID, POOL = 4242, 4250
MS = 1_000_000
TICK = procfs.TICK_NS
# The real files' shapes.
SCHEDSTAT = "{run} {delay} 172\n"  # /proc/PID/task/TID/schedstat
PROC_STAT = ("cpu  1202884 3712 337053 3326862 52658 0 3634 1072 0 0\n"
             "cpu0 {busy0} 1797 148970 1784431 22269 0 696 528 0 0\n"
             "cpu1 698683 1915 188082 1542430 30389 0 2938 543 0 0\n"
             "intr 19088472 0 0 0 0\nctxt 46071432\nbtime 1765000000\n")
STATUS = ("Name:\tpython3\nState:\tR (running)\nTgid:\t{pid}\nPid:\t{tid}\nCpus_allowed:\t3\n"
          "Cpus_allowed_list:\t0-1\nMems_allowed_list:\t0\nvoluntary_ctxt_switches:\t12\n"
          "nonvoluntary_ctxt_switches:\t{involuntary}\n")


def test_the_kernels_files_parse():
    assert procfs.parse_schedstat(b"41029135 18084936 172\n") == (41029135, 18084936)
    assert procfs.parse_involuntary(STATUS.format(pid=1, tid=1, involuntary=50).encode()) == 50
    assert procfs.parse_involuntary(b"Name:\tx\n") == -1
    cpus = procfs.parse_cpu_times(PROC_STAT.format(busy0=504200).encode())
    assert [c.cpu for c in cpus] == [0, 1]  # not the first line, which sums them
    assert cpus[0].busy_ns == (504200 + 1797 + 148970 + 0 + 696) * TICK
    assert cpus[0].idle_ns == (1784431 + 22269) * TICK and cpus[1].steal_ns == 543 * TICK
    text = PROC_STAT.format(busy0=504200).encode()
    cut = text[:text.index(b"cpu1") + 12]  # a read cut short in CPU 1's line
    assert [c.cpu for c in procfs.parse_cpu_times(cut)] == [0]


def write_tick(root, threads: dict[int, tuple], busy0: int = 504200, schedstat: bool = True) -> None:
    """PID's threads: tid -> (utime ticks, run ns, delay ns, involuntary); its
    stat sums them; the host's /proc/stat with CPU 0's user time busy0."""
    task = root / "proc" / str(PID) / "task"
    for tid, (utime, run, delay, involuntary) in threads.items():
        (task / str(tid)).mkdir(parents=True, exist_ok=True)
        (task / str(tid) / "stat").write_text(stat_line(tid, utime=utime, stime=0, cpu=1, start=1000))
        (task / str(tid) / "status").write_text(STATUS.format(pid=PID, tid=tid, involuntary=involuntary))
        if schedstat:
            (task / str(tid) / "schedstat").write_text(SCHEDSTAT.format(run=run, delay=delay))
    write_process(root, PID, utime=sum(t[0] for t in threads.values()) + 1, stime=0, threads=len(threads))
    (root / "proc" / "stat").write_text(PROC_STAT.format(busy0=busy0))


def record(tmp_path, ticks: list[dict], schedstat: bool = True):
    run_dir = directory.create(tmp_path / "run", [sys.executable], interval_ns=20 * MS, sampler=True,
                               probes=[], env={})
    host_dir = layout.host_dir(run_dir, journal.host_name())
    root = tmp_path / "root"
    if schedstat:  # what the sampler asks of the kernel, once
        (root / "proc" / "self").mkdir(parents=True)
        (root / "proc" / "self" / "schedstat").write_text(SCHEDSTAT.format(run=1, delay=1))
    sampler = Sampler(PID, host_dir, 0.02, system=System(root))
    for i, threads in enumerate(ticks):
        write_tick(root, threads, busy0=504200 + 2 * i, schedstat=schedstat)
        sampler.tick()
    sampler.stop()
    directory.finish(run_dir, exit_status=0, ended_by="exit", signal=None)
    return run_dir, host_dir


# The main thread runs and waits a little each tick; the pool thread waits 2 ms in the third.
WAITS = [
    {PID: (5, 50 * MS, MS // 2, 3), POOL: (0, 0, 0, 0)},
    {PID: (5, 52 * MS, MS // 2 + 400_000, 4), POOL: (0, 0, 0, 0)},  # 0.4 ms more: not yet
    {PID: (5, 53 * MS, 2 * MS, 9), POOL: (3, 30 * MS, 2 * MS, 6)},  # 1.5 ms since its record: written
    {PID: (5, 53 * MS, 2 * MS, 9), POOL: (3, 30 * MS, 2 * MS, 6)},  # nothing ran
]


def test_a_threads_delay_is_written_once_it_grew_a_millisecond_with_its_involuntary_switches(tmp_path):
    _, host_dir = record(tmp_path, WAITS)
    t = thread_samples(host_dir / layout.THREADS_FILE)
    ticks = np.unique(t["t_ns"])
    main, pool = t[t["tid"] == PID], t[t["tid"] == POOL]
    # The main thread: first sight (its CPU time from zero), then the tick its delay had grown 1.5 ms.
    assert main["t_ns"].tolist() == [ticks[0], ticks[1]] and len(ticks) == 2
    assert main["run_delay_ns"].tolist() == [MS // 2, 2 * MS]
    assert main["nonvoluntary_ctxt"].tolist() == [3, 9]  # its status, read where its delay was written
    assert main["utime_ns"].tolist() == [5 * TICK] * 2  # its CPU time as read, no clock tick since
    assert pool["run_delay_ns"].tolist() == [2 * MS] and pool["nonvoluntary_ctxt"].tolist() == [6]
    assert RUN_DELAY_NS == MS


def test_a_threads_stat_is_read_only_where_its_cpu_time_may_have_crossed_a_clock_tick(tmp_path, monkeypatch):
    reads = []
    read_one = procfs.TaskFiles.read_one
    monkeypatch.setattr(procfs.TaskFiles, "read_one",
                        lambda self, tid, name: reads.append((int(tid), name)) or read_one(self, tid, name))
    record(tmp_path, WAITS)
    stats = [tid for tid, name in reads if name == "stat"]
    # The main thread's CPU time moved 3 ms over the ticks, within a clock tick (50-53 ms: 10 ms ticks).
    assert stats.count(PID) == 1 and stats.count(POOL) == 2  # the pool's: first sight, and 0 -> 30 ms
    assert ("status" in {name for _, name in reads}) and (PID, "status") in reads


def test_the_hosts_cpu_times_are_written_for_the_ticks_threads_waited_and_the_one_before(tmp_path):
    run_dir, host_dir = record(tmp_path, WAITS)
    run = load(run_dir)
    assert run.losses == []
    t = np.unique(run.threads["t_ns"])
    # Written for the third tick (1.5 ms and 2 ms of waits), counted from the second's.
    assert np.unique(run.cpus["t_ns"]).tolist() == [int(run.cpus["t_ns"].min()), int(run.cpus["t_ns"].max())]
    assert len(run.cpus) == 4 and set(run.cpus["cpu"].tolist()) == {0, 1}
    cpu0 = run.cpus[run.cpus["cpu"] == 0]
    assert np.diff(cpu0["busy_ns"]).tolist() == [2 * TICK]
    assert t[0] < cpu0["t_ns"][0] < cpu0["t_ns"][1]  # not the first tick's: nothing waited then
    busy = runqueue.host_busy(run, run.hosts[0], [0], np.array(cpu0["t_ns"]))
    assert busy.tolist() == [pytest.approx(2 * TICK / 1e9)]
    assert runqueue.lifetime_waits(run) == {(run.hosts[0], PID): pytest.approx(4 * MS / 1e9)}  # both threads' last


def test_a_kernel_without_schedstat_reads_stat_and_says_no_delay(tmp_path):
    ticks = [{PID: (5, 0, 0, 0)}, {PID: (9, 0, 0, 0)}]
    run_dir, host_dir = record(tmp_path, ticks, schedstat=False)
    run = load(run_dir)
    assert run.threads["utime_ns"].tolist() == [5 * TICK, 9 * TICK]
    assert (run.threads["run_delay_ns"] == -1).all() and (run.threads["nonvoluntary_ctxt"] == -1).all()
    assert len(run.cpus) == 0 and runqueue.lifetime_waits(run) == {}


# --- the file's versions ---

V1 = struct.Struct("<qqiiiqq16s")  # threads.bin before the run-queue readings: no header


def run_with_threads_file(tmp_path, content, name=layout.THREADS_FILE):
    """A run whose threads.bin (or name) is content(when the run started)."""
    run_dir = directory.create(tmp_path / "run", [sys.executable], interval_ns=20 * MS, sampler=True,
                               probes=[], env={})
    host_dir = layout.host_dir(run_dir, journal.host_name())
    host_dir.mkdir(parents=True, exist_ok=True)
    (host_dir / name).write_bytes(content(load(run_dir).meta["started_ns"]))
    directory.finish(run_dir, exit_status=0, ended_by="exit", signal=None)
    return load(run_dir)


def test_a_version_1_file_loads_as_it_was_with_no_run_queue_readings(tmp_path):
    assert V1.size == 60 and layout.THREAD_SAMPLE.size == 76
    run = run_with_threads_file(tmp_path, lambda t0: b"".join(
        V1.pack(t0 + 10 + i, t0 + 5 + i, PID, PID + i, 1, 30 * TICK * (i + 1), TICK, b"python3") for i in range(3)))
    assert run.losses == []
    assert run.threads["tid"].tolist() == [PID, PID + 1, PID + 2]
    assert run.threads["utime_ns"].tolist() == [30 * TICK, 60 * TICK, 90 * TICK]
    assert run.threads["name"].tolist() == [b"python3"] * 3
    assert (run.threads["run_delay_ns"] == -1).all() and (run.threads["nonvoluntary_ctxt"] == -1).all()
    assert runqueue.lifetime_waits(run) == {}


def test_a_newer_version_is_refused_with_a_line_never_misread(tmp_path):
    record_bytes = layout.THREAD_SAMPLE.size + 8
    head = layout.HEADER.pack(layout.THREADS_MAGIC, layout.THREADS_VERSION + 1, record_bytes)
    run = run_with_threads_file(tmp_path, lambda t0: head + b"\1" * record_bytes * 4)
    assert len(run.threads) == 0
    assert [line for line in run.losses if "threads.bin" in line] == [
        f"hosts/{journal.safe_host(journal.host_name())}/threads.bin: version {layout.THREADS_VERSION + 1} of "
        f"{record_bytes}-byte records is newer than this writerprof reads: upgrade writerprof; its records are lost"]


def test_a_header_cut_short_loses_the_records_and_says_so(tmp_path):
    run = run_with_threads_file(tmp_path, lambda t0: layout.THREADS_MAGIC + b"\2\0")
    assert len(run.threads) == 0 and any("threads.bin: its header is cut short" in line for line in run.losses)


def test_a_cpus_file_without_its_header_is_not_read_as_records(tmp_path):
    run = run_with_threads_file(tmp_path, lambda t0: layout.CPU_SAMPLE.pack(t0 + 10, 0, 1, 2, 3) * 2,
                                name=layout.CPUS_FILE)
    assert len(run.cpus) == 0 and any("cpus.bin: no WPCPUTIM header" in line for line in run.losses)
