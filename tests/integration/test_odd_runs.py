"""Real recordings of odd input: a command with a non-UTF-8 argument (its
writer process and a thread named after it) read from a run directory whose
path holds a non-UTF-8 byte, through every output; and a target that
os.execv's another Python, which is one process with two images, not a loss."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import writerprof_command

TARGETS = Path(__file__).parent / "targets"
LABEL = b"caf\xe9"  # not UTF-8
SHOWN = "caf\\xe9"  # how HTML and SVG show it
ESCAPED = "caf\udce9"  # how Python (and JSON's \udce9) carries it


def writerprof(*args, **kwargs) -> subprocess.CompletedProcess:
    """The installed writerprof with bytes in and out, and a stdout that is
    strict UTF-8 (PYTHONIOENCODING), where a surrogate would be an error."""
    env = dict(os.environ, PYTHONIOENCODING="utf-8",  # and "python" is the tests' interpreter
               PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]))
    argv = [os.fsencode(a) if not isinstance(a, bytes) else a for a in (*writerprof_command(), *args)]
    done = subprocess.run(argv, capture_output=True, env=env, timeout=240, **kwargs)
    assert b"Traceback" not in done.stderr and b"internal error" not in done.stderr, done.stderr.decode(errors="replace")
    return done


@pytest.fixture(scope="module", params=["probe", "py-spy"])
def odd(tmp_path_factory, request) -> Path:
    """The recording, in a directory whose name is not UTF-8, stacks included
    (by the probe, and by py-spy)."""
    tmp = tmp_path_factory.mktemp("odd")
    run = Path(os.fsdecode(bytes(tmp) + b"/run-" + LABEL))
    # A short command line (python, the target by its name): the text report shows it whole.
    done = writerprof("record", "-o", run, "--stacks-by", request.param, "--", "python", "odd_names.py", LABEL,
                      cwd=TARGETS)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    index = json.loads(next(run.glob("hosts/*/stacks/stacks.json")).read_text())
    # Its stacks written under that path.
    assert index["segments"] if request.param == "py-spy" else list(run.glob("hosts/*/stacks/*.stacks.txt")), index
    return run


def test_text_report_prints_the_bytes_as_they_were(odd):
    done = writerprof("report", odd)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert bytes(odd) in lines[0]  # the run directory's path: its bytes back, as they were
    command = next(line for line in lines if line.strip().startswith(b"command"))
    # An argument as a shell takes it back ($'...' gives these bytes again), on one line.
    assert b"odd_names.py" in command and b"$'" + LABEL.replace(b"\xe9", b"\\xe9") + b"'" in command


def test_json_report_carries_them_escaped(odd):
    done = writerprof("report", "--json", odd)
    assert done.returncode == 0
    done.stdout.decode("ascii")  # every non-ASCII character escaped
    summary = json.loads(done.stdout)
    assert summary["run"]["command"][-1] == ESCAPED
    assert summary["run"]["path"] == os.fsdecode(bytes(odd))


def test_html_report_is_valid_utf8_and_shows_them(odd, tmp_path):
    out = Path(os.fsdecode(bytes(tmp_path) + b"/report-" + LABEL + b".html"))
    done = writerprof("report", odd, "--html", out, "--plots", tmp_path / "plots")
    assert done.returncode == 0
    page = out.read_bytes().decode("utf-8")  # a browser's parser would refuse anything else
    assert SHOWN in page and ESCAPED not in page
    assert len(list((tmp_path / "plots").glob("*.svg"))) >= 1


def test_plot_flame_and_exports(odd, tmp_path):
    done = writerprof("plot", odd, "-o", tmp_path / "plots")
    assert done.returncode == 0 and list((tmp_path / "plots").glob("*.png"))
    done = writerprof("flame", odd, "--role", "all", "-o", tmp_path / "flame")
    assert done.returncode == 0, done.stderr
    svg = (tmp_path / "flame.svg").read_bytes().decode("utf-8")
    assert SHOWN in svg and ESCAPED not in svg  # the title: the run's name
    trace_file, profile_file = tmp_path / "trace.json", tmp_path / "profile.json"
    done = writerprof("export", odd, "--perfetto", trace_file, "--speedscope", profile_file)
    assert done.returncode == 0, done.stderr
    raw = trace_file.read_bytes()
    raw.decode("ascii")
    trace = json.loads(raw)
    assert trace["otherData"]["command"].endswith(ESCAPED)
    names = {e["args"].get("name") for e in trace["traceEvents"] if e["name"] == "bootstrap"}
    assert names == {f"writer-{ESCAPED}"}  # the writer process's name, escaped like the rest
    profile_file.read_bytes().decode("ascii")
    assert json.loads(profile_file.read_bytes())["profiles"]


def test_compare_and_merge(odd, tmp_path):
    done = writerprof("compare", odd, odd)
    assert done.returncode == 0 and LABEL in done.stdout
    out = Path(os.fsdecode(bytes(tmp_path) + b"/merged-" + LABEL))
    done = writerprof("merge", odd, "-o", out)
    assert done.returncode == 0 and (out / "run.json").exists()


def test_an_exec_is_one_process_with_two_images(tmp_path):
    code = "import os, sys; os.execv(sys.executable, [sys.executable, '-c', 'print(1)'])"
    done = writerprof("record", "--no-stacks", "-o", tmp_path / "run", "--", sys.executable, "-c", code)
    assert done.returncode == 0 and done.stdout == b"1\n"
    assert b"Data lost" not in done.stderr and b"SIGKILL" not in done.stderr
    summary = json.loads(writerprof("report", "--json", tmp_path / "run").stdout)
    assert summary["run"]["losses"] == []
    text = writerprof("report", tmp_path / "run").stdout.decode()
    assert "Data lost" not in text

    from writerprof.run import load

    run = load(tmp_path / "run")
    assert len(run.processes) == 2 and len(set(run.processes["pid"].tolist())) == 1
    first, second = (e["data"] for e in run.events_of("process"))
    first_row = int(run.events_of("process")[0]["proc"])
    assert second["exec_of"] == first_row and "exec_of" not in first
    assert second["argv"][-1] == "print(1)"
