"""numpy's BLAS at one thread in writerprof's own commands (writerprof.blas)."""

import os
import subprocess
import sys

from writerprof import blas


def test_the_setting_is_the_block_s_only_and_never_the_user_s(monkeypatch):
    monkeypatch.delenv(blas.THREADS_ENV, raising=False)
    with blas.one_thread():
        assert os.environ[blas.THREADS_ENV] == "1"
    assert blas.THREADS_ENV not in os.environ
    monkeypatch.setenv(blas.THREADS_ENV, "4")
    with blas.one_thread():
        assert os.environ[blas.THREADS_ENV] == "4"
    assert os.environ[blas.THREADS_ENV] == "4"


def test_an_analysis_command_imports_numpy_with_one_blas_thread_and_record_leaves_the_environment():
    """The console script (cli.entry) around a command that first imports
    numpy: the threads the process has then, and the variable's value."""
    code = ("import os, sys\n"
            "import writerprof.cli as cli\n"
            "def command(argv):\n"
            "    import numpy\n"
            "    print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))\n"
            "    return 0\n"
            "cli.main = command\n"
            "sys.argv = ['writerprof'] + sys.argv[1:]\n"
            "cli.entry()\n")
    env = {k: v for k, v in os.environ.items() if k != blas.THREADS_ENV}

    def printed(*argv):
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True,
                              cwd="/", env=env)  # from /: no checkout shadows the installed package
        return done.stdout.split()

    assert printed("report", "RUN") == ["1", "1"]
    assert printed("record", "--", "true")[1] == "None"  # its CMD gets the environment as it was
