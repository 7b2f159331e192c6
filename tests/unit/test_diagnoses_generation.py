"""generation-undersized on synthetic runs (writerprof.synthetic: 2 ranks of
a 16-CPU host, OMPI_COMM_WORLD_LOCAL_SIZE=2, the generator on each
producer's main thread): generation-bound saves with CPUs to spare are
warned of with the numbers and the pool's size from the local rank count;
busy CPUs, saves bound by the writer and runs without thread readings are
not. Real recordings: tests/integration/test_generation_sizing.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from writerprof.analysis import diagnoses, fixes, ranks
from writerprof.analysis.summary import summarize
from writerprof.run import load
from writerprof.run.loader import CPU_SAMPLES_DTYPE
from writerprof.synthetic import Scenario, write_run

GENERATION_BOUND = dict(gen_s=0.05, write_s=0.005, fsync_s=0.01)


def _run(tmp_path, **fields):
    path = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
    write_run(path, Scenario(**fields))
    return load(path)


def _undersized(run) -> list[dict]:
    return [d for d in summarize(run)["diagnoses"] if d["code"] == "generation-undersized"]


def test_a_generation_bound_rank_with_idle_cpus_is_warned_of_with_the_numbers_and_the_pool_size(tmp_path):
    summary = summarize(_run(tmp_path, **GENERATION_BOUND))
    found = [d for d in summary["diagnoses"] if d["code"] == "generation-undersized"]
    assert len(found) == 2  # each rank
    for d in found:
        e = d["evidence"]
        assert d["severity"] == "warning" and d["cost_s"] > 0
        assert e["generator_threads"] == 1 and e["cpus"] == list(range(16)) and not e["bound"]
        assert (e["local_ranks"], e["local_ranks_from"], e["pool_size"]) == (2, "OMPI_COMM_WORLD_LOCAL_SIZE", 8)
        assert e["generator_cpus"] == pytest.approx(1.0, abs=0.1)  # its one thread, busy
        assert e["busy_cpus"] == pytest.approx(2.2, abs=0.3)  # both ranks' generators and their writers
        assert e["idle_cpus"] == pytest.approx(16 - e["busy_cpus"]) and e["others_cpus"] is None
        assert "on 1 thread" in d["message"] and "16 CPUs // 2 local ranks = 8 threads" in d["message"]
        assert "(OMPI_COMM_WORLD_LOCAL_SIZE=2)" in d["message"]
        (fix,) = d["fix"]
        assert "len(os.sched_getaffinity(0)) // local_size" in fix["what"] and "16 // 2 = 8" in fix["what"]
        assert all(name in fix["what"] for name in ranks.LOCAL_SIZE_VARS)
        assert fix["recovery_s"] == pytest.approx(d["cost_s"] / 3)
        # At most what the writer waited for chunks: once it waits no more, a larger pool wins nothing.
        mine = [s for s in summary["saves"] if s["producer_pid"] == d["pid"]]
        assert d["cost_s"] <= sum(s["get_wait_s"] for s in mine) + 1e-9


def test_a_bound_rank_is_sized_to_its_own_cpus(tmp_path):
    (d, _) = _undersized(_run(tmp_path, producer_cpus="0-3", **GENERATION_BOUND))
    assert d["evidence"]["bound"] and d["evidence"]["pool_size"] == 4 and d["evidence"]["cpus"] == [0, 1, 2, 3]
    assert "the 4 CPUs it is bound to" in d["message"]
    assert "the CPUs the rank is bound to (here 4)" in d["fix"][0]["what"]


def test_cpus_busy_generating_are_not_undersized(tmp_path):
    # Eight generator threads' worth of CPU on the rank's 8 CPUs: none idle.
    run = _run(tmp_path, producer_cpus="0-7", gen_threads=8, **GENERATION_BOUND)
    assert _undersized(run) == []


def test_idle_cpus_other_programs_held_are_info_without_a_cost(tmp_path):
    run = _run(tmp_path, **GENERATION_BOUND)
    ticks = np.arange(run.threads["t_ns"].min() - 10**8, run.threads["t_ns"].max() + 10**8, 50_000_000)
    cpus = np.zeros(len(ticks) * 16, CPU_SAMPLES_DTYPE)
    cpus["t_ns"], cpus["cpu"] = np.repeat(ticks, 16), np.tile(np.arange(16), len(ticks))
    cpus["busy_ns"] = cpus["t_ns"]  # every CPU busy all along
    found = _undersized(dataclasses.replace(run, cpus=cpus))
    assert len(found) == 2
    for d in found:
        assert d["severity"] == "info" and "cost_s" not in d and "fix" not in d
        assert d["evidence"]["others_cpus"] == pytest.approx(d["evidence"]["idle_cpus"], abs=0.5)
        assert "other programs held them, a larger pool would compete with them" in d["message"]


def test_a_generator_that_waits_on_something_else_is_not_short_of_threads(tmp_path):
    """Its thread on a CPU half of the generation (the rest blocked, on page
    faults say, not waiting for a CPU): more threads are not what it lacks."""
    run = _run(tmp_path, **GENERATION_BOUND)
    (d, _) = _undersized(run)
    assert d["evidence"]["generator_busy_share"] == pytest.approx(1.0, abs=0.1)
    threads = run.threads.copy()
    for field in ("utime_ns", "stime_ns"):
        threads[field] //= 2
    assert _undersized(dataclasses.replace(run, threads=threads)) == []


def test_saves_bound_by_the_writer_are_not_undersized(tmp_path):
    assert _undersized(_run(tmp_path, gen_s=0.005, write_s=0.05, fsync_s=0.01)) == []


def test_a_run_without_thread_readings_says_nothing(tmp_path):
    run = _run(tmp_path, **GENERATION_BOUND)
    assert _undersized(dataclasses.replace(run, threads=run.threads[:0])) == []


def test_the_local_rank_count_comes_from_the_launcher_else_from_the_recorded_producers():
    assert ranks.local_ranks({"MPI_LOCALNRANKS": "4", "SLURM_NTASKS_PER_NODE": "8"}, 1) == (4, "MPI_LOCALNRANKS")
    assert ranks.local_ranks({"LOCAL_WORLD_SIZE": "3"}, 1) == (3, "LOCAL_WORLD_SIZE")
    assert ranks.local_ranks({"OMPI_COMM_WORLD_LOCAL_SIZE": "x"}, 2) == (2, ranks.RECORDED)
    assert ranks.local_ranks({}, 0) == (1, ranks.RECORDED)


def test_the_fix_names_the_reproducers_option():
    d = {"code": "generation-undersized", "severity": "warning", "cost_s": 0.3,
         "evidence": {"cpus": [0, 1], "pool_size": 2, "bound": False, "local_ranks": 1,
                      "local_ranks_from": "OMPI_COMM_WORLD_LOCAL_SIZE"}}
    (fix,) = fixes.for_diagnosis(d, fixes.Target(main="/x/writerprof/repro/main.py"), 3)
    assert fix["where"] == "writerprof repro --gen-threads 2" and fix["recovery_s"] == pytest.approx(0.1)
    assert diagnoses.CODES["generation-undersized"].severities == ("warning", "info")
