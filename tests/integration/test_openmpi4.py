"""Debian's Open MPI 4 (openmpi-bin: /usr/bin/mpirun is ORTE's orterun)
under `writerprof record`. Open MPI 4 refuses OMPI_MCA_mca_base_env_list
beside `-x`, so record must not set it there: every way a user forwards a
variable (`-x`, `-x VAR=value`, `--mca`/`-mca mca_base_env_list`, the list in
the environment, an MCA parameter file, a tune file, none) runs recorded as
it runs plainly (exit status, output), both ranks probed, from the command
line and from a script that runs mpirun itself. A rank on another host
(the stand-in host of openmpi_env) that record cannot reach under 4.x is
said in the summary; one the user's list reaches is probed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from openmpi_env import environment, stand_in_host
from writerprof.record import launchers
from writerprof.run import load

MPIRUN = Path("/usr/bin/mpirun")  # Debian's, beside the PyPI wheels' (which never install into /usr/bin)
pytestmark = pytest.mark.skipif(not (MPIRUN.exists() and launchers.orte(str(MPIRUN))),
                                reason="no Open MPI 4 in /usr/bin (Debian: apt-get install openmpi-bin)")
WRITERPROF = Path(sys.executable).parent / "writerprof"
# An MPI-free rank: what reached it, in one write (two ranks' lines do not interleave).
TARGET = [sys.executable, "-c", "import os; e = os.environ; "
          "os.write(1, f\"{e['OMPI_COMM_WORLD_RANK']} {e.get('FOO')} {e.get('BAR')}\\n\".encode())"]
NOT_PROBED = "ranks not probed here"


def _files(tmp_path: Path) -> dict:
    """An MCA parameter file that lists BAR, a tune file that names it with -x."""
    params, tune = tmp_path / "mca-params.conf", tmp_path / "tune.conf"
    params.write_text("# the user's own\nmca_base_env_list = BAR\n")
    tune.write_text("-x BAR\n")
    return {"params": params, "tune": tune}


FORMS = {  # (mpirun's options, the environment's additions)
    "none": ([], {}),
    "-x VAR": (["-x", "FOO"], {}),
    "-x VAR=value": (["-x", "FOO=given", "-x", "BAR"], {}),
    "--mca list": (["--mca", "mca_base_env_list", "FOO"], {}),
    "-mca list": (["-mca", "mca_base_env_list", "FOO;BAR"], {}),
    "list in the environment": ([], {launchers.OMPI_ENV_LIST: "FOO"}),
    "parameter file": ([], {launchers.PARAM_FILES: "params"}),
    "tune file and -x": (["--tune", "tune", "-x", "FOO"], {}),
}


def _form(tmp_path: Path, name: str) -> tuple[list[str], dict]:
    files = _files(tmp_path)
    options, extra = FORMS[name]
    return ([str(files.get(o, o)) for o in options],
            environment(FOO="foo", BAR="bar", **{k: str(files.get(v, v)) for k, v in extra.items()}))


def _plain_and_recorded(command: list[str], env: dict, out: Path, prefix=()):
    plain = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120, env=env)
    recorded = subprocess.run([*prefix, str(WRITERPROF), "record", "-o", str(out), "--", *command],
                              capture_output=True, text=True, timeout=120, env=env)
    assert plain.returncode == 0, plain.stderr  # the form itself is one Open MPI 4 accepts
    assert recorded.returncode == plain.returncode, recorded.stderr
    assert sorted(recorded.stdout.splitlines()) == sorted(plain.stdout.splitlines()), recorded.stderr
    return plain, recorded


def _ranks_probed(out: Path) -> set[int]:
    run = load(out)
    ranked = [e["data"] for e in run.events_of("process") if e["data"].get("rank") is not None]
    assert run.complete and {d["world_size"] for d in ranked} == {2} and {d["source"] for d in ranked} == {"openmpi"}
    return {d["rank"] for d in ranked}


@pytest.mark.parametrize("form", list(FORMS))
def test_every_way_of_forwarding_records_as_it_runs_plainly(tmp_path, form):
    options, env = _form(tmp_path, form)
    out = tmp_path / "run"
    _, recorded = _plain_and_recorded([str(MPIRUN), "--oversubscribe", "-np", "2", *options, *TARGET], env, out)
    assert _ranks_probed(out) == {0, 1} and NOT_PROBED not in recorded.stderr


def test_a_script_that_runs_mpirun_with_x(tmp_path):
    """CMD is a script: record cannot see mpirun's options, only that the
    mpirun on the script's PATH is Open MPI 4's."""
    options, env = _form(tmp_path, "-x VAR")
    env["PATH"] = os.pathsep.join([str(MPIRUN.parent), env["PATH"]])  # the script's `mpirun` is Debian's
    script = ["sh", "-c", 'exec mpirun --oversubscribe -np 2 "$@"', "script", *options, *TARGET]
    out = tmp_path / "run"
    _plain_and_recorded(script, env, out)
    assert _ranks_probed(out) == {0, 1}


def test_one_record_per_rank_says_nothing_of_the_other_ranks(tmp_path):
    """record inside a rank: the world is not its to probe."""
    command = [str(MPIRUN), "--oversubscribe", "-np", "2", "sh", "-c",
               f'exec {WRITERPROF} record -o {tmp_path}/run-$OMPI_COMM_WORLD_RANK -- "$@"', "rank", *TARGET]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=environment())
    assert done.returncode == 0 and done.stderr.count("writerprof record: ") >= 2, done.stderr
    assert NOT_PROBED not in done.stderr and _ranks_probed(tmp_path / "run-1") == {1}


@pytest.mark.parametrize("form", ["-x VAR", "list in the environment", "--mca list"])
def test_a_rank_on_another_host(tmp_path, form):
    """Rank 0 here, rank 1 on a host that inherits nothing. With -x, Open MPI 4
    takes no list from record: rank 1 goes unprobed and the summary says so;
    the user's list, in the environment or on mpirun's command line (where
    record adds its names), carries record's variables too."""
    prefix, ssh = stand_in_host(tmp_path)
    options, env = _form(tmp_path, form)
    command = [str(MPIRUN), "--mca", "plm_rsh_agent", str(ssh), "--host", f"{socket.gethostname()}:1,elsewhere:1",
               "-np", "2", *options, *TARGET]
    out = tmp_path / "run"
    plain, recorded = _plain_and_recorded(command, env, out, prefix=prefix)
    assert "1 foo" in plain.stdout  # rank 1 got what was forwarded, and only that
    if form == "-x VAR":
        assert _ranks_probed(out) == {0}
        assert "1 of 2 ranks not probed here (rank 1)" in recorded.stderr, recorded.stderr
    else:
        assert _ranks_probed(out) == {0, 1} and NOT_PROBED not in recorded.stderr
