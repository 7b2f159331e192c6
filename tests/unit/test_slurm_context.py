"""run.json's "slurm": a job's variables (as srun and sbatch set them in
Slurm 22.05), its limit and end from squeue's "%l|%L"."""

import time

import pytest

from writerprof.record import slurm

# As `srun -n2 env` printed them in a one-node Slurm 22.05 (tests/slurm/cluster.sh).
SRUN = {"SLURM_JOB_ID": "3", "SLURM_JOBID": "3", "SLURM_STEP_ID": "0", "SLURM_STEPID": "0",
        "SLURM_JOB_NODELIST": "vm", "SLURM_NODELIST": "vm", "SLURM_JOB_NUM_NODES": "1", "SLURM_NNODES": "1",
        "SLURM_NTASKS": "2", "SLURM_TASKS_PER_NODE": "2", "SLURM_LOCALID": "0", "SLURM_PROCID": "0"}


@pytest.mark.parametrize("text, seconds", [
    ("1:00", 60), ("00:01:00", 60), ("5:07", 307), ("2:03:04", 7384), ("1-00:00:00", 86400),
    ("3-02:00:01", 266401), ("UNLIMITED", None), ("INVALID", None), ("NOT_SET", None), ("", None),
])
def test_durations(text, seconds):
    assert slurm.seconds(text) == seconds


def test_outside_a_job_nothing():
    assert slurm.context({"PATH": "/bin"}, ask=lambda job: pytest.fail("squeue asked outside a job")) is None


def test_a_step_with_a_limit():
    before = time.time_ns()
    got = slurm.context(SRUN, ask=lambda job: "10:00|4:30" if job == "3" else None)
    assert {k: v for k, v in got.items() if k != "end_wall_ns"} == {
        "job_id": "3", "step_id": "0", "array_job_id": None, "array_task_id": None, "nodelist": "vm",
        "nnodes": 1, "ntasks": 2, "tasks_per_node": "2", "time_limit_s": 600}
    assert before + 270e9 <= got["end_wall_ns"] <= time.time_ns() + 270e9


def test_an_array_task_of_a_batch_script_unlimited():
    env = {"SLURM_JOB_ID": "17", "SLURM_ARRAY_JOB_ID": "16", "SLURM_ARRAY_TASK_ID": "1",
           "SLURM_NODELIST": "n[01-04]", "SLURM_NNODES": "4", "SLURM_TASKS_PER_NODE": "8(x4)"}
    got = slurm.context(env, ask=lambda job: "UNLIMITED|UNLIMITED")
    assert (got["array_job_id"], got["array_task_id"], got["nodelist"], got["nnodes"], got["tasks_per_node"],
            got["step_id"], got["ntasks"]) == ("16", "1", "n[01-04]", 4, "8(x4)", None, None)
    assert got["time_limit_s"] is None and got["end_wall_ns"] is None


@pytest.mark.parametrize("answer", [None, "", "garbage", "1:00"])
def test_squeue_unavailable_or_odd(answer):
    got = slurm.context(SRUN, ask=lambda job: answer)
    assert got["job_id"] == "3" and got["time_limit_s"] is None and got["end_wall_ns"] is None
