"""Which Open MPI CMD may run, and whether record lists its variables in
OMPI_MCA_mca_base_env_list for it: installations laid out as Open MPI 4
(mpirun a link to ORTE's orterun, orted beside it), Open MPI 5 (PRRTE's
prterun) and MPICH lay them out. Recordings under each:
tests/integration/test_openmpi4.py and test_openmpi.py."""

from __future__ import annotations

import os

import pytest

from writerprof.record import launchers

OURS = ["WRITERPROF_RUN", "PYTHONPATH"]


def _install(root, *programs, links=()):
    """root/bin with these programs (executable files) and links (name, target)."""
    bin_dir = root / "bin"
    bin_dir.mkdir(parents=True)
    for name in programs:
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    for name, target in links:
        (bin_dir / name).symlink_to(target)
    return bin_dir


@pytest.fixture
def mpis(tmp_path):
    """{"orte", "prrte", "mpich"}: each installation's bin directory."""
    return {"orte": _install(tmp_path / "ompi4", "orterun", "orted",
                             links=[("mpirun", "orterun"), ("mpiexec", "orterun")]),
            "prrte": _install(tmp_path / "ompi5", "mpirun", "mpiexec", "prterun", "prted"),
            "mpich": _install(tmp_path / "mpich", "mpiexec.hydra", links=[("mpiexec", "mpiexec.hydra"),
                                                                          ("mpirun", "mpiexec.hydra")])}


def _forwarded(command, **env):
    launchers.forward(env, OURS, command)
    return env.get(launchers.OMPI_ENV_LIST)


def test_orte_is_told_nothing_and_the_others_get_the_list(mpis):
    assert launchers.orte(str(mpis["orte"] / "mpirun")) and launchers.orte(str(mpis["orte"] / "mpiexec"))
    assert not any(launchers.orte(str(mpis[m] / "mpirun")) for m in ("prrte", "mpich"))
    for mpi, listed in (("orte", None), ("prrte", "WRITERPROF_RUN;PYTHONPATH"), ("mpich", "WRITERPROF_RUN;PYTHONPATH")):
        assert _forwarded([str(mpis[mpi] / "mpirun"), "-n", "2", "python"], PATH="/nowhere") == listed


def test_the_launcher_cmd_names_decides_else_any_on_its_path(mpis):
    both = os.pathsep.join([str(mpis["prrte"]), str(mpis["orte"])])
    assert _forwarded([str(mpis["prrte"] / "mpirun"), "python"], PATH=both) is not None  # named: that one
    assert _forwarded(["mpirun", "-n", "2", "python"], PATH=both) is not None  # by name: the first on PATH
    assert _forwarded(["timeout", "60", "mpiexec", "python"], PATH=str(mpis["orte"])) is None  # after a wrapper
    assert _forwarded(["sh", "-c", "mpirun -n 2 python x.py"], PATH=str(mpis["orte"])) is None  # in a shell string
    # A script that runs mpirun itself: any Open MPI 4 its PATH leads to could be the one.
    assert _forwarded(["./train.sh"], PATH=both) is None
    assert _forwarded(["./train.sh"], PATH=os.pathsep.join([str(mpis["mpich"]), str(mpis["prrte"])])) is not None


def test_the_users_list_is_kept_and_added_to_whatever_the_mpi(mpis):
    for mpi in mpis.values():
        listed = _forwarded([str(mpi / "mpirun")], OMPI_MCA_mca_base_env_list="FOO;PYTHONPATH;BAR=1")
        assert listed == "FOO;PYTHONPATH;BAR=1;WRITERPROF_RUN"


def test_a_parameter_files_list_is_kept(mpis, tmp_path):
    """The environment's list would hide the file's: record lists the
    file's names first (the first file that sets it, as Open MPI reads them)."""
    prrte = [str(mpis["prrte"] / "mpirun")]
    etc = mpis["prrte"].parent / "etc"
    etc.mkdir()
    (etc / "openmpi-mca-params.conf").write_text("# mca_base_env_list = NOT\nbtl = ^openib\nmca_base_env_list = SYS\n")
    assert _forwarded(prrte) == "SYS;WRITERPROF_RUN;PYTHONPATH"  # the installation's own file
    home = tmp_path / "home"
    (home / ".openmpi").mkdir(parents=True)
    (home / ".openmpi" / "mca-params.conf").write_text("mca_base_env_list = 'MINE;PYTHONPATH'\n")
    assert _forwarded(prrte, HOME=str(home)) == "MINE;PYTHONPATH;WRITERPROF_RUN"  # the user's comes first
    named = tmp_path / "given.conf"
    named.write_text("mca_base_env_list=GIVEN\n")
    files = f"{tmp_path / 'absent.conf'},{named}"
    assert _forwarded(prrte, HOME=str(home), OMPI_MCA_mca_base_param_files=files) == "GIVEN;WRITERPROF_RUN;PYTHONPATH"
    assert _forwarded(prrte, HOME=str(home), OMPI_MCA_mca_base_param_files="none") == "WRITERPROF_RUN;PYTHONPATH"
