"""A big run's analysis in two processes (writerprof.forked) gives the summary one process gives."""

from __future__ import annotations

import json
import os
import time

import pytest

from writerprof import forked
from writerprof.analysis import hostwise, summary
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run


def test_a_child_s_result_comes_back_and_the_parent_s_is_its_own():
    child, parent = forked.beside(lambda: {"pid": os.getpid(), "list": [1.5, None]}, os.getpid)
    assert parent == os.getpid() and child["pid"] != os.getpid() and child["list"] == [1.5, None]


def test_a_failed_child_s_part_runs_again_here_and_raises_here():
    with pytest.raises(ZeroDivisionError):
        forked.beside(lambda: 1 / 0, lambda: None)


def test_a_big_run_s_summary_in_two_processes_is_the_one_in_one(tmp_path, monkeypatch):
    write_run(tmp_path / "run", Scenario(hosts=4, ranks_per_host=2, saves=2, chunks_per_save=6, jitter=0.2,
                                         start_method="forkserver"))
    run = load(tmp_path / "run")
    monkeypatch.setattr(forked, "spare_cpu", lambda: False)
    whole = json.dumps(summary.summarize(run))  # one part: its saves and threads' work found all at once
    assert any(p["threads"] for p in json.loads(whole)["processes"])
    monkeypatch.setattr(hostwise, "PART_RECORDS", len(run.chunk_columns) // 4)
    assert len(hostwise.parts(run)) >= 3
    alone = json.dumps(summary.summarize(load(tmp_path / "run")))
    assert alone == whole
    forks = []
    beside, shared = forked.beside, forked.shared
    monkeypatch.setattr(forked, "spare_cpu", lambda: True)
    monkeypatch.setattr(forked, "beside", lambda child, parent: forks.append("beside") or beside(child, parent))
    monkeypatch.setattr(forked, "shared", lambda *args: forks.append(args[3:]) or shared(*args))
    assert json.dumps(summary.summarize(run)) == alone
    assert forks == [(True,), "beside"]  # the parts shared out with a worker, then the diagnoses beside the plots'


def test_shared_items_come_back_in_order_from_both_processes_and_first_is_done_here():
    def each(i):
        time.sleep(0.02)  # long enough that the worker, started at once, takes some
        return i * i, os.getpid()

    done, first = forked.shared(12, each, lambda: (time.sleep(0.05), os.getpid())[1])
    assert [square for square, _ in done] == [i * i for i in range(12)] and first == os.getpid()
    assert {pid for _, pid in done} - {os.getpid()}, "the worker took none"
    assert forked.shared(3, each, lambda: "first", fork_worker=False) == ([(0, os.getpid()), (1, os.getpid()),
                                                                         (4, os.getpid())], "first")


def test_the_items_a_failed_worker_took_are_done_here():
    parent = os.getpid()

    def each(i):
        if os.getpid() != parent:
            raise RuntimeError("the worker fails")
        return i

    done, _ = forked.shared(6, each, lambda: time.sleep(0.05))  # the worker takes items, and fails, meanwhile
    assert done == list(range(6))


def test_an_error_here_ends_the_worker_and_is_raised(monkeypatch):
    workers = []
    fork = forked.fork
    monkeypatch.setattr(forked, "fork", lambda child: workers.append(fork(child)) or workers[-1])
    with pytest.raises(ZeroDivisionError):
        forked.shared(4, lambda i: time.sleep(0.01), lambda: 1 / 0)
    (pid, _), = workers
    with pytest.raises(ChildProcessError):  # killed and reaped: no worker left behind
        os.waitpid(pid, os.WNOHANG)


def test_free_cpus_are_those_the_other_runnable_tasks_leave(monkeypatch, tmp_path):
    cpus = len(os.sched_getaffinity(0))
    loadavg = tmp_path / "loadavg"
    monkeypatch.setattr(forked, "LOADAVG", str(loadavg))
    monkeypatch.setattr(os, "getloadavg", lambda: (cpus + 1.0, 0.0, 0.0))  # a minute of load, gone now
    loadavg.write_text(f"{cpus + 1.0:.2f} 0.50 0.20 1/180 4242\n")  # this process alone runnable
    assert forked.free_cpus() == cpus
    loadavg.write_text(f"0.10 0.50 0.20 {cpus + 1}/180 4242\n")  # and one task per CPU besides
    assert forked.free_cpus() == 0
    loadavg.unlink()  # not Linux: the load average
    assert forked.free_cpus() == 0
