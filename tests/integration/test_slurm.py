"""`writerprof record` under a real Slurm (a one-node cluster: slurm_env):
srun under salloc, record inside sbatch with and without exec, scancel
mid-save, a one-minute time limit, tasks that ignore SIGTERM, USR1 to the
whole job or its batch shell. A recorded job ends in the same Slurm state
as a plain one, and its run says how it ended, with nothing lost."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from collections import Counter

import pytest
from writerprof.run.loader import load

from helpers import TARGETS, run_writerprof, writerprof_command
from slurm_env import (KILL_WAIT_S, SEGMENTS, output, remove_segments, sbatch, scancel, slurm,  # noqa: F401
                       wait_ended, wait_output)

SAVER = f"{TARGETS}/slurm_saver.py"


def _record(run, *cmd) -> str:
    return shlex.join([*writerprof_command(), "record", "-o", str(run), "--", *map(str, cmd)])


def _saver(directory, saves, chunks=8, pause=0.05, *flags) -> list[str]:
    return ["srun", "-n", "2", "--cpu-bind=cores", sys.executable, SAVER, str(directory), str(saves), str(chunks),
            str(pause), *flags]


def _printed(text: str) -> Counter:
    """Per rank, the saves the target itself counted ("saved RANK N")."""
    return Counter({rank: max(int(n) for r, n in re.findall(r"^saved (\d+) (\d+)$", text, re.M) if r == rank)
                    for rank, _ in re.findall(r"^saved (\d+) (\d+)$", text, re.M)})


def _report(run) -> dict:
    return json.loads(run_writerprof("report", "--json", run).stdout)


class Jobs:
    """A test's directory, and the jobs it submitted: what they left in /dev/shm is removed after it."""

    def __init__(self, where):
        self.where, self.ids = where, []

    def submit(self, slurm, script: str, where=None, *options: str) -> str:
        self.ids.append(sbatch(slurm, script, where or self.where, *options))
        return self.ids[-1]


@pytest.fixture
def jobs(tmp_path):
    (tmp_path / "ckpt").mkdir()
    submitted = Jobs(tmp_path)
    yield submitted
    for job_id in submitted.ids:
        remove_segments(f"{SEGMENTS}{job_id}-")


@pytest.fixture(scope="module")
def time_limit_job(slurm, tmp_path_factory):
    """A recorded job of a one-minute limit, submitted first: it runs beside the module's other tests."""
    where = tmp_path_factory.mktemp("limit")
    (where / "ckpt").mkdir()
    job_id = sbatch(slurm, "exec " + _record(where / "run", *_saver(where / "ckpt", 10_000, 8, 0.1)) + "\n",
                    where, "-n", "2", "--time=1")
    yield where, job_id
    subprocess.run(["scancel", job_id], env=slurm, capture_output=True)  # (if test_time_limit was not run)
    wait_ended(slurm, job_id)
    remove_segments(f"{SEGMENTS}{job_id}-")


def test_srun_under_salloc(slurm, jobs, time_limit_job):
    """Every task and writer recorded, ranks and local ranks from Slurm, the
    job's context in run.json, one core per task found uniform."""
    run = jobs.where / "run"
    done = subprocess.run(["salloc", "-n", "2", "--time=5", *writerprof_command(), "record", "-o", str(run), "--",
                           *_saver(jobs.where / "ckpt", 2)], env=slurm, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert _printed(done.stdout) == {"0": 2, "1": 2}
    meta = json.loads((run / "run.json").read_text())
    assert meta["slurm"]["job_id"] == re.search(r"Granted job allocation (\d+)", done.stderr).group(1)
    assert meta["slurm"]["ntasks"] == 2 and meta["slurm"]["time_limit_s"] == 300
    report = _report(run)
    assert report["run"]["ending"]["cut_short"] is False
    saves = report["saves"]
    assert sorted(s["rank"] for s in saves) == [0, 0, 1, 1]
    assert {s["status"] for s in saves} == {"complete"}
    recorded = load(run)
    ranks = {int(p["rank"]): recorded.identity(p["host"], int(p["pid"]), int(p["created_ns"]))
             for p in recorded.processes if p["role"] == "main"}
    assert {r: who["local_rank"] for r, who in ranks.items()} == {0: 0, 1: 1}
    assert report["placement"]["consistent"], report["placement"]
    assert "DIFFERS" not in run_writerprof("report", run).stdout


@pytest.mark.parametrize("exec_", [True, False], ids=["exec", "no-exec"])
def test_scancel_mid_save(slurm, jobs, exec_, time_limit_job):
    """Cancelled mid-save: the job ends as a plain one does; the run says it
    was cut short, first; every save the target counted is complete, the
    one cut is marked interrupted with its bytes so far, and the headline
    counts complete saves only. Without exec the batch shell dies at once and
    Slurm SIGKILLs record with the rest of the step: the run is reported up to
    its journals' last record."""
    run = jobs.where / "run"
    command = _record(run, *_saver(jobs.where / "ckpt", 1000, 8, 0.1))
    job_id = jobs.submit(slurm, ("exec " if exec_ else "") + command + "\n", None, "-n", "2")
    wait_output(jobs.where, job_id, "saved 1 2")
    scancel(slurm, job_id)
    ended = wait_ended(slurm, job_id)
    assert ended["JobState"] == "CANCELLED"
    meta = json.loads((run / "run.json").read_text())
    if exec_:  # record, the batch shell, got the SIGTERM and passed it on
        assert [s["signal"] for s in meta["signals"]] == ["SIGTERM"] and meta["ended_ns"] is not None
    else:  # record never got one: SIGKILLed with the rest of the batch step
        assert meta["signals"] == [] and meta["ended_ns"] is None
    report = _report(run)
    ending = report["run"]["ending"]
    assert ending["cut_short"] is True, ending
    text = run_writerprof("report", run).stdout
    assert "cut short" in "\n".join(text.splitlines()[:4]).lower(), text[:800]
    printed = _printed(output(jobs.where, job_id))
    complete = Counter(str(s["rank"]) for s in report["saves"] if s["status"] == "complete")
    for rank, n in printed.items():
        assert complete[rank] >= n, (rank, n, complete)
    if exec_:  # srun printed all the target did: the report counts no save more
        assert complete == printed, (complete, printed)
    assert report["throughput"]["saves"] == sum(complete.values())


def test_tasks_ignore_sigterm(slurm, jobs, time_limit_job):
    """Tasks that ignore SIGTERM are SIGKILLed after KillWait, record with
    them: run.json holds the SIGTERM record passed on, and the run is reported cut."""
    run = jobs.where / "run"
    job_id = jobs.submit(slurm, "exec " + _record(run, *_saver(jobs.where / "ckpt", 1000, 8, 0.1, "--ignore-term"))
                         + "\n", None, "-n", "2")
    wait_output(jobs.where, job_id, "saved 1 1")
    cancelled = time.monotonic()
    scancel(slurm, job_id)
    assert wait_ended(slurm, job_id)["JobState"] == "CANCELLED"
    assert time.monotonic() - cancelled >= KILL_WAIT_S - 1  # the tasks did ignore it
    meta = json.loads((run / "run.json").read_text())
    assert [s["signal"] for s in meta["signals"]] == ["SIGTERM"]
    ending = _report(run)["run"]["ending"]
    assert ending["cut_short"] is True and ending["signal"] == "SIGTERM", ending


@pytest.mark.parametrize("signal_, how", [("USR1", "--full"), ("USR1", "--batch"), ("TERM", "--batch")])
def test_signals_as_plain(slurm, jobs, signal_, how, time_limit_job):
    """`scancel --signal=X` to every process of the job, or to its batch
    shell (record, exec'd): the recorded job ends as the plain one does. USR1
    reaches the tasks, which go on; TERM ends them, and the run says so."""
    states = {}
    for recorded in (False, True):
        where = jobs.where / ("recorded" if recorded else "plain")
        (where / "ckpt").mkdir(parents=True)
        saver = _saver(where / "ckpt", 6, 8, 0.1, "--on-usr1")
        script = "exec " + (_record(where / "run", *saver) if recorded else shlex.join(saver)) + "\n"
        job_id = jobs.submit(slurm, script, where, "-n", "2")
        wait_output(where, job_id, "saved 0 2")
        scancel(slurm, job_id, f"--signal={signal_}", how)
        ended = wait_ended(slurm, job_id)
        text = output(where, job_id)
        states[recorded] = (ended["JobState"], ended["ExitCode"])
        if signal_ == "USR1":
            assert "usr1" in text and _printed(text) == {"0": 6, "1": 6}, text[-2000:]
    assert states[True] == states[False], states
    if signal_ == "USR1":
        assert states[True] == ("COMPLETED", "0:0")
    else:
        ending = _report(jobs.where / "recorded" / "run")["run"]["ending"]
        assert ending["cut_short"] and ending["signal"] == "SIGTERM", ending


def test_time_limit(slurm, time_limit_job):
    """A job out of time: TIMEOUT as plain, and the run says it was cut by the time limit."""
    where, job_id = time_limit_job
    ended = wait_ended(slurm, job_id, timeout=240)
    assert ended["JobState"] == "TIMEOUT"
    report = _report(where / "run")
    ending = report["run"]["ending"]
    assert ending["cut_short"] is True and ending["by"] == "slurm_time_limit", ending
    assert report["run"]["slurm"]["time_limit_s"] == 60
