"""`--probe __main__:NAME=PHASE`: a function of the entry script, observed
through sys.monitoring on Python 3.12+ in the script and in its children
(re-run as __mp_main__ under forkserver), and said plainly to be out of
reach before 3.12."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from writerprof.run import load

from helpers import writerprof_command
from test_probe_journal import INTERPRETERS

TARGET = Path(__file__).parent / "targets" / "entry_fill.py"


def _version(python: str) -> tuple[int, int]:
    done = subprocess.run([python, "-c", "import sys; print(*sys.version_info[:2])"], capture_output=True, text=True)
    return tuple(map(int, done.stdout.split()))


@pytest.mark.parametrize("method", ["fork", "forkserver"])
@pytest.mark.parametrize("name", sorted(INTERPRETERS))
def test_a_function_of_the_entry_script_is_timed_where_python_can_observe_it(tmp_path, name, method):
    python = INTERPRETERS[name]
    done = subprocess.run(writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--probe",
                                                  "__main__:fill=gen", "--", python, str(TARGET), method],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    own = json.loads(done.stdout)
    run = load(tmp_path / "run")
    gen = {n: c for c, n in run.phase_names.items()}["gen"]
    c = run.chunk_columns
    fills = {int(run.processes["pid"][p]): c[(c["proc"] == p) & (c["phase"] == gen)]
             for p in range(len(run.processes))}
    if _version(python) < (3, 12):
        assert not any(len(f) for f in fills.values())
        assert "Python 3.12+ observes their calls" in done.stderr  # record's summary says why
        return
    parent = int(run.processes["pid"][0])
    for pid, calls, truth in ((parent, 5, own["parent_s"]), (own["child_pid"], 3, own["child_s"])):
        took = fills[pid]["end_ns"] - fills[pid]["start_ns"]
        assert len(took) == calls and abs(took.sum() / 1e9 - truth) <= 0.05 * truth + 0.001, (pid, took, truth)
