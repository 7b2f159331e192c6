"""`mpiexec -n N writerprof repro`: every rank saves its own files, rank 0
prints every rank's figures and the benchmark's aggregate, the writer children
never join MPI under any start method, and a failure or a signal on one rank
ends the whole job quickly and cleanly (the autouse fixture checks /dev/shm)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from helpers import filled_up_env, writerprof_command

GIB = 1 << 30
SHORT = ("--saves", "2", "--size", "64MiB", "--chunk-size", "16MiB")


def _mpiexec() -> str | None:
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.path.exists(beside) else shutil.which("mpiexec")


MPIEXEC = _mpiexec()
pytestmark = pytest.mark.skipif(
    MPIEXEC is None, reason="no mpiexec (pip install 'writerprof[test]' brings MPICH's)"
)


def _command(n: int, *args) -> list[str]:
    return [MPIEXEC, "-n", str(n)] + writerprof_command() + ["repro"] + [str(a) for a in args]


def _mpmd(*per_rank) -> list[str]:
    """One rank per argument list: `mpiexec -n 1 A : -n 1 B` (MPI's own way
    to give ranks different command lines)."""
    command = [MPIEXEC]
    for args in per_rank:
        if len(command) > 1:
            command.append(":")
        command += ["-n", "1"] + writerprof_command() + ["repro"] + [str(a) for a in args]
    return command


def _run(command, env=None, timeout=120) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    return done, time.monotonic() - t0


def _records(stdout: str) -> tuple[list[dict], list[dict], dict]:
    records = [json.loads(line) for line in stdout.splitlines()]
    saves = [r for r in records if r["record"] == "save"]
    aggregates = [r for r in records if r["record"] == "aggregate"]
    (summary,) = [r for r in records if r["record"] == "summary"]
    assert len(records) == len(saves) + len(aggregates) + 1, "nothing else on stdout"
    return saves, aggregates, summary


def _check_figures(saves, aggregates, summary, ranks: int, nsaves: int, size: int):
    """The per-rank records are complete, and the aggregate is the benchmark's
    arithmetic on them: size summed over ranks, over rank 0's save duration."""
    assert sorted((s["rank"], s["save"]) for s in saves) == [
        (rank, save) for rank in range(ranks) for save in range(1, nsaves + 1)
    ]
    assert [a["save"] for a in aggregates] == list(range(1, nsaves + 1))
    for aggregate in aggregates:
        of_save = sorted((s for s in saves if s["save"] == aggregate["save"]),
                         key=lambda s: s["rank"])
        assert aggregate["ranks"] == ranks
        assert aggregate["bytes"] == sum(s["bytes"] for s in of_save) == ranks * size
        assert aggregate["rank0_total_s"] == of_save[0]["total_s"]
        assert aggregate["throughput_gib_s"] == pytest.approx(
            ranks * size / of_save[0]["total_s"] / GIB
        )
        assert aggregate["max_total_s"] == max(s["total_s"] for s in of_save)
        assert aggregate["min_total_s"] == min(s["total_s"] for s in of_save)
    assert summary["ranks"] == ranks and summary["saves"] == nsaves
    assert summary["bytes"] == ranks * nsaves * size
    assert summary["mean_throughput_gib_s"] == pytest.approx(
        statistics.fmean(a["throughput_gib_s"] for a in aggregates)
    )
    assert summary["mean_total_s"] == pytest.approx(
        statistics.fmean(a["rank0_total_s"] for a in aggregates)
    )
    assert [r["rank"] for r in summary["per_rank"]] == list(range(ranks))
    for own in summary["per_rank"]:
        assert own["mean_total_s"] == pytest.approx(
            statistics.fmean(s["total_s"] for s in saves if s["rank"] == own["rank"])
        )
    assert summary["mpi"]["launcher"] in ("mpich", "openmpi", "pmix")
    # One writer per rank and save, each a process of its own.
    assert len({s["writer_pid"] for s in saves}) == ranks * nsaves


# Loaded by every Python process of the job through PYTHONPATH. In a
# multiprocessing child that was exec'd (a spawn child, the forkserver daemon
# and its forks, the resource tracker) it records that it ran, and whether
# anything in it imported mpi4py; it changes nothing.
_WATCH = '''
import os, sys
_cmdline = open("/proc/self/cmdline", "rb").read().replace(b"\\0", b" ").decode()
if "multiprocessing" in _cmdline:
    _marks = os.environ["WRITERPROF_TEST_MARKS"]
    with open(os.path.join(_marks, "seen-%d" % os.getpid()), "w") as _f:
        _f.write(_cmdline)

    class _WatchMPI:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "mpi4py":
                with open(os.path.join(_marks, "mpi4py-%d" % os.getpid()), "w") as f:
                    f.write(name + " in " + _cmdline)
            return None

    sys.meta_path.insert(0, _WatchMPI())
'''


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_two_ranks_save_verify_and_aggregate(method, tmp_path):
    directory, marks, site = tmp_path / "files", tmp_path / "marks", tmp_path / "site"
    marks.mkdir()
    site.mkdir()
    (site / "sitecustomize.py").write_text(textwrap.dedent(_WATCH))
    env = dict(os.environ, WRITERPROF_TEST_MARKS=str(marks),
               PYTHONPATH=os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    done, _ = _run(_command(2, "--start-method", method, *SHORT, "--verify", "--keep",
                            "--dir", directory, "--json"), env=env)
    assert done.returncode == 0, done.stderr
    saves, aggregates, summary = _records(done.stdout)
    _check_figures(saves, aggregates, summary, ranks=2, nsaves=2, size=64 << 20)
    assert all(s["verified"] and s["start_method"] == method for s in saves)
    # Every rank's own files, named by rank, each checked byte for byte (--verify).
    kept = sorted(os.listdir(directory))
    assert len(kept) == 4
    for record in saves:
        name = os.path.basename(record["path"])
        assert name in kept
        assert name.endswith(f"-rank{record['rank']:04d}-save{record['save']:03d}.dat")
        assert os.path.getsize(record["path"]) == 64 << 20
    # Rank 0 alone reports on stderr: its own RESULTS blocks and the aggregates.
    assert done.stderr.count("RESULTS  save ") == 2
    assert done.stderr.count("RESULTS  save 1/2  rank 0  ") == 1
    assert done.stderr.count("AGGREGATE  save ") == 2
    assert "on each of 2 ranks with " + method in done.stderr
    # No writer child, nor the forkserver, imported mpi4py (and so joined MPI).
    seen = [name for name in os.listdir(marks) if name.startswith("seen-")]
    joined = [(marks / name).read_text() for name in os.listdir(marks) if name.startswith("mpi4py-")]
    assert joined == []
    if method != "fork":  # exec'd children: the watch ran in them
        cmdlines = " ".join((marks / name).read_text() for name in seen)
        assert ("spawn_main" if method == "spawn" else "forkserver") in cmdlines


def test_four_ranks_oversubscribed_forkserver(tmp_path):
    done, elapsed = _run(_command(4, "--start-method", "forkserver", *SHORT, "--dir", tmp_path,
                                  "--json"))
    assert done.returncode == 0, done.stderr
    saves, aggregates, summary = _records(done.stdout)
    _check_figures(saves, aggregates, summary, ranks=4, nsaves=2, size=64 << 20)
    assert os.listdir(tmp_path) == []  # files go once their save is done
    assert elapsed < 60


def test_writer_failing_on_one_rank_stops_every_rank(tiny_filesystem, tmp_path):
    # Rank 0 starts a save far too long to finish before rank 1's writer runs
    # out of space: it must stop on rank 1's word, not finish the save.
    good = tmp_path / "good"
    done, elapsed = _run(_mpmd(
        ["--saves", 2, "--size", "8GiB", "--generator", "random", "--dir", good, "--json"],
        ["--saves", 2, "--size", "2MiB", "--chunk-size", "1MiB", "--dir", tiny_filesystem,
         "--json", "--main-imports", "fill_up"],
    ), env=filled_up_env(tiny_filesystem), timeout=120)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("writerprof repro: rank 1: save 1 failed: writer (pid ")
    assert lines[0].endswith("exited with status 1: OSError: [Errno 28] No space left on device")
    assert done.stdout == ""  # no record for a save that did not complete on every rank
    os.remove(tiny_filesystem / "filler")  # the test's own
    assert os.listdir(good) == [] and os.listdir(tiny_filesystem) == []
    assert elapsed < 30


def _rank_processes(mpiexec: psutil.Process) -> dict[int, psutil.Process]:
    """The ranks: the launcher's descendants with a rank variable that are not
    a rank's own children (writers, forkserver, resource tracker)."""
    ranks = {}
    for process in mpiexec.children(recursive=True):
        try:
            rank = process.environ().get("PMI_RANK") or process.environ().get("OMPI_COMM_WORLD_RANK")
            parent_is_rank = "PMI_RANK" in process.parent().environ() or \
                "OMPI_COMM_WORLD_RANK" in process.parent().environ()
        except psutil.Error:
            continue
        if rank is not None and not parent_is_rank:
            ranks[int(rank)] = process
    return ranks


def _wait_for_writer(rank: psutil.Process, deadline: float) -> psutil.Process:
    """A fork writer: a child of the rank with the rank's command line."""
    while time.monotonic() < deadline:
        try:
            for child in rank.children():
                if child.cmdline() == rank.cmdline():
                    return child
        except psutil.Error:
            pass
        time.sleep(0.02)
    raise AssertionError("no writer process appeared")


def _start_long_job(tmp_path) -> tuple[subprocess.Popen, dict[int, psutil.Process]]:
    job = subprocess.Popen(
        _command(2, "--saves", 3, "--size", "8GiB", "--generator", "random", "--dir", tmp_path,
                 "--json"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ranks = _rank_processes(psutil.Process(job.pid))
        if len(ranks) == 2:
            _wait_for_writer(ranks[0], deadline)
            _wait_for_writer(ranks[1], deadline)
            return job, ranks
        time.sleep(0.05)
    job.kill()
    raise AssertionError("the ranks did not start")


def _finish(job: subprocess.Popen, timeout=60) -> tuple[str, str, float]:
    t0 = time.monotonic()
    try:
        out, err = job.communicate(timeout=timeout)
    finally:
        job.kill()
        job.wait()
    return out, err, time.monotonic() - t0


def test_killed_writer_on_one_rank_fails_the_job(tmp_path):
    job, ranks = _start_long_job(tmp_path)
    writer = _wait_for_writer(ranks[1], time.monotonic() + 30)
    os.kill(writer.pid, signal.SIGKILL)
    out, err, elapsed = _finish(job)
    assert job.returncode == 1, err
    assert err.strip().splitlines() == [
        f"writerprof repro: rank 1: save 1 failed: writer (pid {writer.pid}) was killed by SIGKILL"
    ]
    assert out == ""
    assert os.listdir(tmp_path) == []
    assert elapsed < 30


def test_ctrl_c_on_mpiexec_stops_every_rank(tmp_path):
    job, _ = _start_long_job(tmp_path)
    job.send_signal(signal.SIGINT)  # mpiexec forwards it to every rank
    out, err, elapsed = _finish(job)
    assert job.returncode == 130, err
    assert err.strip().splitlines()[-1] == "writerprof repro: interrupted"
    # Only mpiexec's own words ("[mpiexec@host] Sending Ctrl-C ..."): no record.
    assert all(line.startswith("[mpiexec@") for line in out.splitlines()), out
    assert os.listdir(tmp_path) == []
    assert elapsed < 30


def test_signal_to_one_rank_stops_every_rank(tmp_path):
    job, ranks = _start_long_job(tmp_path)
    ranks[1].send_signal(signal.SIGTERM)
    out, err, elapsed = _finish(job)
    assert job.returncode == 143, err
    assert err.strip().splitlines() == ["writerprof repro: interrupted (a signal on rank 1)"]
    assert os.listdir(tmp_path) == []
    assert elapsed < 30


def test_bad_input_on_one_rank_is_one_line(tmp_path):
    done, _ = _run(_mpmd(["--saves", 1, "--size", "1MiB", "--dir", tmp_path],
                         ["--saves", 1, "--size", "1MiB", "--dir", "/proc/self/no/such"]))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "writerprof repro: error: --dir /proc/self/no/such: not writable (No such file or"
        " directory) (on rank 1)"
    ]
    assert done.stdout == ""


def test_mpi_off_runs_each_rank_alone(tmp_path):
    done, _ = _run(_command(2, "--mpi", "off", "--saves", 1, "--size", "4MiB", "--dir", tmp_path,
                            "--json"))
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(r["record"] for r in records) == ["save", "save", "summary", "summary"]
    assert all("rank" not in r for r in records)


def test_mpi_on_outside_a_launcher_is_a_usage_error():
    env = {k: v for k, v in os.environ.items()
           if k not in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")}
    done = subprocess.run(writerprof_command() + ["repro", "--mpi", "on", "--saves", "1"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "writerprof repro: error: --mpi on: not started by an MPI launcher (no"
        " OMPI_COMM_WORLD_RANK, PMI_RANK or PMIX_RANK in the environment); run it under mpiexec"
    ]
