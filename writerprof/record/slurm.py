"""The Slurm job a recording runs in, for run.json's "slurm": who the job
is (its variables), and what it may last (its time limit, and its end as
the wall clock will see it, from squeue's time left: no time zone to read).
None outside a job. The report tells a cut at the time limit from a
scancel by the end time."""

from __future__ import annotations

import re
import shutil
import subprocess
import time

# squeue's limits and times left: [DAYS-]HH:MM:SS, MM:SS or UNLIMITED.
_DURATION = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")
SQUEUE_TIMEOUT_S = 3.0


def context(environ, ask=None) -> dict | None:
    """run.json's "slurm" from a job's variables, with its limit and end
    from squeue (`ask`, for tests: job id -> squeue's "%l|%L" line, or None)."""
    job = environ.get("SLURM_JOB_ID") or environ.get("SLURM_JOBID")
    if not job:
        return None
    limit, left = _limits((ask or _squeue)(job))
    return {
        "job_id": job,
        "step_id": environ.get("SLURM_STEP_ID") or environ.get("SLURM_STEPID"),
        "array_job_id": environ.get("SLURM_ARRAY_JOB_ID"),
        "array_task_id": environ.get("SLURM_ARRAY_TASK_ID"),
        "nodelist": environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST"),
        "nnodes": _int(environ.get("SLURM_JOB_NUM_NODES") or environ.get("SLURM_NNODES")),
        "ntasks": _int(environ.get("SLURM_NTASKS")),
        "tasks_per_node": environ.get("SLURM_TASKS_PER_NODE"),
        "time_limit_s": limit,
        "end_wall_ns": time.time_ns() + left * 1_000_000_000 if left is not None else None,
    }


def _squeue(job: str) -> str | None:
    squeue = shutil.which("squeue")
    if squeue is None:
        return None
    try:
        done = subprocess.run([squeue, "-h", "-j", job, "-o", "%l|%L"], capture_output=True, text=True,
                              timeout=SQUEUE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _limits(line: str | None) -> tuple[int | None, int | None]:
    """(time limit, time left) in s; None where unlimited or not told."""
    if not line or "|" not in line:
        return None, None
    limit, left = line.split("|", 1)
    return seconds(limit), seconds(left)


def seconds(text: str) -> int | None:
    """A Slurm duration in s ("1-02:03:04", "5:00", "00:01:00"); None for UNLIMITED and the like."""
    match = _DURATION.match(text.strip())
    if match is None:
        return None
    days, hours, minutes, secs = (int(g) if g else 0 for g in match.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + secs


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
