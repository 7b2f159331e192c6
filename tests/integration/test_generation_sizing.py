"""generation-undersized on real recordings (mlcommons/storage #689): a
rank of a 2-rank job, one rank per host (Open MPI's variables), whose
generator pool is sized from the global rank count (targets/generator_pool.py:
2 CPUs // 2 ranks = 1 thread) is told so, with the numbers and the pool
its local rank count gives (2 // 1 = 2). Silent, each recorded twice,
interleaved with it: the pool sized from the local count (#702's fix); the
undersized pool beside a process burning the same 2 CPUs; and the
undersized pool whose saves the disk bounds, not generation (its CPUs sit
idle just the same: the check's own readings say so).

On 2 CPUs the margin is small: the undersized pool leaves about 0.8 CPU
idle, the burner about 0.2, against the threshold's 0.5 (IDLE_CPUS). Other
programs on a shared machine take some of the idle CPUs: then the warning
is info (it says they held them), and the silent sides may be info too,
never a warning."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from writerprof.analysis.diagnoses import IDLE_CPUS
from writerprof.analysis.diagnoses import generation, pipeline
from writerprof.analysis.summary import summarize
from writerprof.run import load

from helpers import TARGETS, two_cpus, writerprof_command

RECORDINGS = 2
TARGET = os.path.join(TARGETS, "generator_pool.py")
# One rank of two, alone on its host: the global count 2, the local 1.
RANK_ENV = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_SIZE": "2",
            "OMPI_COMM_WORLD_LOCAL_SIZE": "1"}


def _record(run_dir, work, *cmd) -> None:
    env = dict(os.environ, **RANK_ENV, PYTHONPATH=os.pathsep.join(filter(None, [TARGETS, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([*writerprof_command(), "record", "-o", str(run_dir), "--probe", "generator_pool:fill=gen",
                           "--", *cmd], env=env, cwd=work, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr


def _pool(cpus: str, size_var: str, *more) -> list[str]:
    return ["taskset", "-c", cpus, sys.executable, TARGET, size_var, ".", *more]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    cpus = two_cpus()
    work = tmp_path_factory.mktemp("generation")
    kinds = {"undersized": _pool(cpus, "OMPI_COMM_WORLD_SIZE"),
             "sized": _pool(cpus, "OMPI_COMM_WORLD_LOCAL_SIZE"),
             "burner": [sys.executable, os.path.join(TARGETS, "burn_beside.py"), cpus,
                        *_pool(cpus, "OMPI_COMM_WORLD_SIZE")],
             "storage_bound": _pool(cpus, "OMPI_COMM_WORLD_SIZE", "--storage-bound")}
    runs = {kind: [] for kind in kinds}
    for i in range(RECORDINGS):
        for kind, cmd in kinds.items():
            _record(work / f"{kind}{i}", work, *cmd)
            runs[kind].append(work / f"{kind}{i}")
    return runs


def _undersized(run_dir) -> tuple[list[dict], dict]:
    summary = summarize(load(run_dir))
    return [d for d in summary["diagnoses"] if d["code"] == "generation-undersized"], summary


def test_a_pool_sized_from_the_global_rank_count_is_told_with_the_numbers_and_the_local_size(recorded):
    for run_dir in recorded["undersized"]:
        (d,), _ = _undersized(run_dir)
        e = d["evidence"]
        assert e["generator_threads"] == 1 and len(e["cpus"]) == 2 and e["pool_size"] == 2
        assert (e["local_ranks"], e["local_ranks_from"]) == (1, "OMPI_COMM_WORLD_LOCAL_SIZE")
        assert e["get_wait_share"] >= pipeline.WAIT_SHARE and e["idle_cpus"] >= IDLE_CPUS
        assert 0 < e["generator_cpus"] <= 1.1  # one thread: a CPU at most (less where others took it)
        assert "on 1 thread" in d["message"] and "(OMPI_COMM_WORLD_LOCAL_SIZE=1)" in d["message"]
        # The pool's size: the host's 2 CPUs over its 1 local rank (a bigger host: the 2 it is bound to).
        assert ("the 2 CPUs it is bound to" if e["bound"] else "2 CPUs // 1 local rank = 2 threads") in d["message"]
        # A warning where the idle CPUs were free; where other programs held them, info that says so.
        free = e["idle_cpus"] - (e["others_cpus"] or 0.0)
        assert d["severity"] == ("warning" if free >= IDLE_CPUS else "info"), d["message"]
        if d["severity"] == "warning":
            (fix,) = d["fix"]
            assert "len(os.sched_getaffinity(0))" in fix["what"] and d["cost_s"] > 0


def test_a_pool_sized_from_the_local_rank_count_is_not(recorded):
    for run_dir in recorded["sized"]:
        found, summary = _undersized(run_dir)
        assert found == [] and "generation-bound" in {d["code"] for d in summary["diagnoses"]}


def test_cpus_busy_with_another_process_are_no_idle_cpus(recorded):
    for run_dir in recorded["burner"]:
        found, summary = _undersized(run_dir)
        assert "generation-bound" in {d["code"] for d in summary["diagnoses"]}
        assert [d["message"] for d in found if d["severity"] == "warning"] == []


def test_saves_the_disk_bounds_are_not_undersized_though_the_cpus_sit_idle(recorded):
    for run_dir in recorded["storage_bound"]:
        found, summary = _undersized(run_dir)
        assert found == [] and "generation-bound" not in {d["code"] for d in summary["diagnoses"]}
        # What keeps it silent is the bound alone: its one generator left a CPU idle here too.
        run = load(run_dir)
        saves = pipeline.piped(summary["saves"])
        proc = summary["processes"][saves[0]["producer"]]
        readings = [generation._during_generation(run, proc, s, proc["allowed_cpus"]) for s in saves]
        idle = len(proc["allowed_cpus"]) - sum(r["busy_s"] for r in readings) / sum(r["gen_s"] for r in readings)
        assert idle >= IDLE_CPUS
