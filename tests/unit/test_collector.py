"""The collector's pause, and a run's objects kept to a quick exit."""

import gc
import json
import subprocess
import sys

from writerprof import collector
from writerprof.cli import main
from writerprof.collector import collector_paused, keep_until_exit
from writerprof.synthetic import Scenario, write_run


def test_what_a_paused_block_made_is_not_left_for_the_youngest_generation():
    gc.collect()
    with collector_paused():
        made = [{} for _ in range(50_000)]
    assert gc.isenabled()
    assert gc.get_count()[0] < 50_000  # else the next collection would walk every one of them
    assert len(made) == 50_000


def test_nothing_is_kept_where_the_process_does_not_leave_by_os_exit():
    keep_until_exit(object())
    assert collector._kept is None


def test_the_console_script_s_report_is_main_s_and_its_errors_exit_non_zero(tmp_path, capsys):
    """python -m writerprof leaves a report by os._exit (cli.entry): the output
    is flushed whole first, and a failure still exits non-zero."""
    write_run(tmp_path / "run", Scenario(hosts=1, ranks_per_host=2, saves=2, chunks_per_save=4))
    assert main(["report", "--json", str(tmp_path / "run")]) == 0
    in_process = capsys.readouterr().out
    # Run from tmp_path: -m puts the working directory first on sys.path, and
    # a checkout's writerprof/ would shadow the installed one (which has writerprof.probes).
    done = subprocess.run([sys.executable, "-m", "writerprof", "report", "--json", str(tmp_path / "run")],
                          capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 0 and done.stdout == in_process
    assert json.loads(done.stdout)["schema"] == "writerprof.summary/1"
    missing = subprocess.run([sys.executable, "-m", "writerprof", "report", str(tmp_path / "none")],
                             capture_output=True, text=True, check=False, cwd=tmp_path)
    assert missing.returncode == 1 and missing.stderr.startswith("writerprof report: ")
