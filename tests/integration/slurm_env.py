"""A real one-node Slurm for the tests (tests/slurm/cluster.sh): the one
.ci/run started, else one started here as root and stopped at the end; the
tests skip, saying why, where Slurm is not installed or cannot start.
Jobs run as this user, with this environment (sbatch's --export=ALL)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

STATE = Path(os.environ.get("WRITERPROF_SLURM", "/tmp/writerprof-slurm"))
CLUSTER = Path(__file__).resolve().parents[1] / "slurm" / "cluster.sh"
KILL_WAIT_S = 5  # cluster.sh's KillWait
SEGMENTS = "wp-slurm-"  # the prefix of targets/slurm_saver.py's shared-memory segments


def environment() -> dict:
    return dict(os.environ, SLURM_CONF=str(STATE / "slurm.conf"))


def _up(env: dict) -> bool:
    try:
        done = subprocess.run(["scontrol", "ping"], env=env, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "UP" in done.stdout


@pytest.fixture(scope="session")
def slurm():
    """The cluster's client environment; its proctrack plugin in env["WRITERPROF_PROCTRACK"]."""
    if shutil.which("srun") is None or shutil.which("slurmd") is None:
        pytest.skip("Slurm is not installed (.ci/run installs Debian's slurm-wlm and munge)")
    env = environment()
    started = False
    if not _up(env):
        if os.geteuid() != 0:
            pytest.skip("no Slurm cluster running, and starting one needs root")
        done = subprocess.run([str(CLUSTER), "start"], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            pytest.skip(f"cannot start a one-node Slurm here: {(done.stdout + done.stderr).strip()}")
        started = True
    env["WRITERPROF_PROCTRACK"] = (STATE / "proctrack").read_text().strip()
    yield env
    if started:
        subprocess.run([str(CLUSTER), "stop"], capture_output=True, timeout=60)


def sbatch(env: dict, script: str, directory: Path, *options: str) -> str:
    """Submit script (its text) from directory; the job id. Its output in directory/out-ID.txt."""
    path = directory / f"job-{time.monotonic_ns()}.sh"
    path.write_text("#!/bin/bash\n" + script)
    done = subprocess.run(["sbatch", "--parsable", f"--chdir={directory}", f"--output={directory}/out-%j.txt",
                           *options, str(path)], env=env, capture_output=True, text=True, timeout=30, check=True)
    return done.stdout.strip().split(";")[0]


def output(directory: Path, job: str) -> str:
    path = directory / f"out-{job}.txt"
    return path.read_text(errors="replace") if path.exists() else ""


def job(env: dict, job_id: str) -> dict:
    """scontrol's fields of the job (MinJobAge keeps an ended job for 5 min)."""
    done = subprocess.run(["scontrol", "show", "job", "-o", job_id], env=env, capture_output=True, text=True,
                          timeout=30)
    return dict(re.findall(r"(\w+)=(\S*)", done.stdout))


def wait_ended(env: dict, job_id: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        fields = job(env, job_id)
        if fields.get("JobState") not in (None, "PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"):
            return fields
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} still {job(env, job_id).get('JobState')} after {timeout} s")


def wait_output(directory: Path, job_id: str, text: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while text not in output(directory, job_id):
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} never printed {text!r}:\n{output(directory, job_id)[-3000:]}")
        time.sleep(0.1)


def scancel(env: dict, job_id: str, *options: str) -> None:
    subprocess.run(["scancel", *options, job_id], env=env, check=True, timeout=30)


def remove_segments(prefix: str) -> None:
    """What a SIGKILLed job's processes left in /dev/shm (their resource trackers died with them)."""
    for name in os.listdir("/dev/shm"):
        if name.startswith(prefix):
            try:
                os.unlink(os.path.join("/dev/shm", name))
            except FileNotFoundError:
                pass
