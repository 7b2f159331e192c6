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


# --- a list of variables on the launcher's command line, which outranks the environment's ---------------

def _on_command_line(*command):
    return launchers.on_command_line(list(command), OURS)


def test_open_mpis_list_on_the_command_line_gets_records_names_after_the_users():
    for option in ("--mca", "-mca", "--gmca", "--omca"):
        command, changed = _on_command_line("mpirun", "-n", "2", option, "mca_base_env_list", "FOO;PYTHONPATH",
                                            "python", "x.py")
        assert command == ["mpirun", "-n", "2", option, "mca_base_env_list", "FOO;PYTHONPATH;WRITERPROF_RUN",
                           "python", "x.py"]
        assert changed == [f"{option} mca_base_env_list"]
    assert _on_command_line("mpirun", "--mca", "mca_base_env_list", "", "a")[0][3] == "WRITERPROF_RUN;PYTHONPATH"
    # Another parameter, or the program's own arguments (after no launcher), are left as they are.
    for command in (["mpirun", "--mca", "btl", "self", "a"], ["python", "x.py", "--mca", "mca_base_env_list", "A"]):
        assert _on_command_line(*command) == (command, [])


def test_hydras_lists_get_records_names_and_none_becomes_a_list_of_them():
    command, changed = _on_command_line("mpiexec", "-genvlist", "A", "-n", "1", "a", ":", "-n", "1",
                                        "--envlist=B,PYTHONPATH", "b", ":", "-envnone", "c")
    assert command == ["mpiexec", "-genvlist", "A,WRITERPROF_RUN,PYTHONPATH", "-n", "1", "a", ":", "-n", "1",
                       "--envlist=B,PYTHONPATH,WRITERPROF_RUN", "b", ":", "-envlist", "WRITERPROF_RUN,PYTHONPATH", "c"]
    assert changed == ["-genvlist", "--envlist", "-envnone, as -envlist"]
    # Hydra refuses -genvnone beside -genvlist: the one option becomes the other.
    assert _on_command_line("mpiexec.hydra", "--genvnone", "-n", "2", "a")[0] == [
        "mpiexec.hydra", "--genvlist", "WRITERPROF_RUN,PYTHONPATH", "-n", "2", "a"]


def test_a_shell_strings_list_is_rewritten_in_place_and_the_rest_kept():
    script = "cd /x && mpirun -n 2 --mca mca_base_env_list FOO\\;BAR python x.py; echo --mca mca_base_env_list X"
    command, changed = _on_command_line("sh", "-c", script)
    assert command == ["sh", "-c", "cd /x && mpirun -n 2 --mca mca_base_env_list 'FOO;BAR;WRITERPROF_RUN;PYTHONPATH' "
                                   "python x.py; echo --mca mca_base_env_list X"]  # echo's is no launcher's
    assert changed == ["--mca mca_base_env_list"]
    # A list the shell makes when it runs: record's names appended, which the shell joins to it.
    command, _ = _on_command_line("bash", "-c", 'mpirun --mca mca_base_env_list "$MINE" python -c "print(1)"')
    assert command[2] == """mpirun --mca mca_base_env_list "$MINE"';WRITERPROF_RUN;PYTHONPATH' python -c "print(1)\""""
    command, _ = _on_command_line("bash", "-c", "mpiexec -genvnone -n 2 python -c 'print(1)'")
    assert command[2] == "mpiexec -genvlist WRITERPROF_RUN,PYTHONPATH -n 2 python -c 'print(1)'"


def test_only_a_shells_script_is_read_as_one():
    code = "x = '-genvnone'"  # python's -c: no shell reads it
    assert _on_command_line("mpiexec", "-n", "2", "python", "-c", code) == (
        ["mpiexec", "-n", "2", "python", "-c", code], [])
    command, _ = _on_command_line("srun", "bash", "-l", "-c", "mpiexec -genvnone python x.py")
    assert command[-1] == "mpiexec -genvlist WRITERPROF_RUN,PYTHONPATH python x.py"
