"""A job whose ranks are not all in the run says so first, and a whole one
never does, through real `writerprof record` of an MPI job: MPICH's Hydra
runs 4 ranks here, those from rank 2 on filed under another host
(WRITERPROF_HOST) into a part of their own, as a node-local run directory
leaves them on a host that cannot send its part home. record's summary and report (text, JSON, HTML) say PARTIAL
with the missing ranks until `writerprof merge` brings the part in; then
the run is whole. Open MPI 4 on a stand-in host (openmpi_env) says how many
hosts its job had: the one whose rank went unprobed is counted missing."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from helpers import run_writerprof, writerprof_command
from openmpi_env import environment, stand_in_host
from writerprof.probes.writerprof_probe.format import HOMECOMING_ENV
from writerprof.record import launchers

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
MPIRUN4 = Path("/usr/bin/mpirun")  # Debian's Open MPI 4
REPRO = ["repro", "--saves", "2", "--size", "32MiB", "--chunk-size", "8MiB"]
HERE = os.uname().nodename  # the host the probe files this machine's processes under
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install 'writerprof[mpi]')")


def _ranks_from(first: int, host: str, part: Path) -> str:
    """A rank's shell line: from rank `first` on, its processes are `host`'s, journaling into `part`, on a
    host that cannot send its part home (it has not record's address): the part stays where it is."""
    return (f'if [ "$PMI_RANK" -ge {first} ]; then export WRITERPROF_HOST={host} WRITERPROF_RUN={part}; '
            f'unset {HOMECOMING_ENV}; fi; exec {" ".join(writerprof_command() + REPRO)}')


def _agent_gone(part: Path, timeout_s: float = 60) -> bool:
    """The sampler agent of that part has exited (it ends once its host's processes have)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any("writerprof.record.agent" in (p.info["cmdline"] or []) and str(part) in p.info["cmdline"]
                   for p in psutil.process_iter(["cmdline"])):
            return True
        time.sleep(0.2)
    return False


def _summary_lines(stderr: str) -> list[str]:
    return stderr[stderr.rindex("writerprof record: "):].splitlines()


def _first_field(lines: list[str]) -> str:
    """report's first header field: the line after its first (and the path it wraps onto more)."""
    return next(line for line in lines if line.startswith("  ") and not line.startswith("   "))


def _report(run: Path, tmp_path: Path) -> tuple[list[str], dict, str]:
    """report's text lines, its JSON and its HTML page of run."""
    page = tmp_path / f"{run.name}.html"
    text = run_writerprof("report", run, "--html", page).stdout.splitlines()
    return text, json.loads(run_writerprof("report", "--json", run).stdout), page.read_text()


def test_ranks_filed_under_another_host_are_missing_until_merged(tmp_path):
    run, part = tmp_path / "run", tmp_path / "hostb-part"
    part.mkdir()
    done = run_writerprof("record", "-o", run, "--", MPIEXEC, "-n", "4", "sh", "-c", _ranks_from(2, "hostb", part))
    assert _agent_gone(part)
    summary = _summary_lines(done.stderr)
    partial = f"PARTIAL: 2 of 4 ranks recorded; ranks 2-3 missing; hosts seen: {HERE} (ranks 0-1)"
    assert summary[1] == f"  world            {partial}"
    assert summary[-1].startswith("  next:            the job is not whole here: without shared storage each other "
                                  f"host keeps its part at {run.resolve()} there")
    assert f"`writerprof merge {run} PART... -o MERGED`" in summary[-1]
    assert "  saves            4, over the 2 of 4 ranks recorded (PARTIAL: not the job's)" in summary

    text, found, page = _report(run, tmp_path)
    assert text[0].startswith("writerprof report (PARTIAL job)") and _first_field(text) == f"  world     {partial}"
    world = found["world"]
    assert world["partial"] and world["missing_ranks"] == [2, 3] and world["ranks_expected"] == 4
    assert world["ranks_seen"] == 2 and world["launcher"] == "mpich" and world["hosts"] == [HERE]
    assert page.index("PARTIAL: 2 of 4 ranks recorded") < page.index("<h2>")

    merged = tmp_path / "merged"
    run_writerprof("merge", run, part, "-o", merged)
    text, found, page = _report(merged, tmp_path)
    assert text[0].startswith("writerprof report /")
    assert _first_field(text) == f"  world     4 of 4 ranks, all recorded; hosts: {HERE} (ranks 0-1), hostb (ranks 2-3)"
    assert not found["world"]["partial"] and found["world"]["ranks_seen"] == 4
    assert {s["rank"] for s in found["saves"]} == {0, 1, 2, 3}
    assert not any("PARTIAL" in shown for shown in ("\n".join(text), page, json.dumps(found)))


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_whole_job_never_says_partial(tmp_path, ranks):
    run = tmp_path / "run"
    done = run_writerprof("record", "-o", run, "--", MPIEXEC, "-n", ranks, *writerprof_command(), *REPRO)
    summary = _summary_lines(done.stderr)
    whole = f"{ranks} of {ranks} ranks, all recorded; hosts: {HERE} (ranks 0-{ranks - 1})"
    assert summary[1] == f"  world            {whole}"
    assert summary[-1] == f"  next:            writerprof report {run}"
    text, found, page = _report(run, tmp_path)
    assert text[0].startswith("writerprof report /") and not found["world"]["partial"]
    assert _first_field(text) == f"  world     {whole}"
    assert found["world"]["missing_ranks"] == [] and found["world"]["ranks_seen"] == ranks
    assert not any("PARTIAL" in shown for shown in (done.stderr, "\n".join(text), page, json.dumps(found)))


@pytest.mark.skipif(not (MPIRUN4.exists() and launchers.orte(str(MPIRUN4))), reason="no Open MPI 4 in /usr/bin")
def test_open_mpi_4_says_how_many_hosts_its_job_had(tmp_path):
    """Rank 1 on a host that inherits nothing: Open MPI 4 gives it none of
    record's variables, and the world says which rank and that a host is missing."""
    prefix, ssh = stand_in_host(tmp_path)
    run = tmp_path / "run"
    command = [str(MPIRUN4), "--mca", "plm_rsh_agent", str(ssh), "--host", f"{socket.gethostname()}:1,elsewhere:1",
               "-np", "2", sys.executable, "-c", "pass"]
    done = subprocess.run([*prefix, *writerprof_command(), "record", "-o", str(run), "--", *command],
                          capture_output=True, text=True, timeout=120, env=environment())
    assert done.returncode == 0, done.stderr
    found = json.loads(run_writerprof("report", "--json", run).stdout)["world"]
    assert found["missing_ranks"] == [1] and found["ranks_by_host"] == {HERE: [0]}
    assert (found["hosts_expected"], found["missing_hosts"]) == (2, 1)
    assert ("PARTIAL: 1 of 2 ranks recorded; rank 1 missing; 1 of 2 hosts missing (by OMPI_MCA_orte_num_nodes; "
            "their names not known here)") in _summary_lines(done.stderr)[1]
