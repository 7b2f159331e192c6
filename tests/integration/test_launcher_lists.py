"""A list of variables on the launcher's command line outranks the
environment record sets: record adds its own to it (launchers.on_command_line),
so the ranks on a host that inherits nothing of mpiexec's environment (a
stand-in for ssh, openmpi_env.FAKE_SSH) are probed whatever list the user
gives MPICH's Hydra: `-genvlist`, `-envlist`, `--genvlist=`, or none at all
(`-genvnone`). On this one machine: Hydra's proxy there talks to mpiexec over
this host's own address. Open MPI's `--mca mca_base_env_list`:
test_openmpi.py and test_openmpi4.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import writerprof_command
from openmpi_env import FAKE_SSH
from writerprof.run import load

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent))
pytestmark = pytest.mark.skipif(MPIEXEC is None or not os.path.exists(f"{MPIEXEC}.hydra"),
                                reason="no MPICH Hydra mpiexec (pip install 'writerprof[mpi]')")
SHOW = [sys.executable, "-c", "import os; e = os.environ; print(e.get('WRITERPROF_RUN'), e.get('MINE'))"]
LISTS = {  # (mpiexec's options, the rank's own): the user's variable MINE listed, or none passed on
    "-genvlist": (["-genvlist", "MINE"], []),
    "--genvlist=": (["--genvlist=MINE"], []),
    "-envlist": ([], ["-envlist", "MINE"]),
    "-genvnone": (["-genvnone"], []),
}


@pytest.mark.parametrize("listed", list(LISTS))
def test_records_variables_join_the_list_hydra_is_given(tmp_path, listed):
    ssh = tmp_path / "fake-ssh"
    ssh.write_text(FAKE_SSH)
    ssh.chmod(0o755)
    options, own = LISTS[listed]
    command = [MPIEXEC, "-launcher", "ssh", "-launcher-exec", str(ssh), "-hosts", "elsewhere", *options,
               "-n", "1", *own, *SHOW]
    # Not last: Hydra 5.0's -genvlist passes on every variable it lists but the environment's last.
    env = {"MINE": "mine", **os.environ}
    mine = "None" if listed == "-genvnone" else "mine"
    plain = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert plain.stdout == f"None {mine}\n", plain.stderr  # the stand-in host gets the list alone
    out = tmp_path / "run"
    recorded = subprocess.run([*writerprof_command(), "record", "-o", str(out), "--", *command],
                              capture_output=True, text=True, timeout=120, env=env)
    assert recorded.returncode == 0 and recorded.stdout == f"{out.resolve()} {mine}\n", recorded.stderr
    assert f"record added its variables to the list on CMD's command line ({listed.rstrip('=')}" in recorded.stderr
    ranked = [e["data"] for e in load(out).events_of("process") if e["data"].get("rank") is not None]
    assert [(d["rank"], d["source"]) for d in ranked] == [(0, "mpich")]  # the rank, probed
