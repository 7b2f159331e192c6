"""The py-spy driver of `writerprof record` (writerprof.record.pyspy): which
py-spy, whether ptrace lets it attach, py-spy's failures, its output
compressed and indexed (fake py-spy executables stand in for it), and
record's stack options."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from writerprof.record import pyspy as collection
from writerprof.record import stackoptions
from writerprof.record.system import System
from writerprof.run import layout

# Real py-spy output (see test_stacks.py), as a fake py-spy's file.
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stacks" / "forkserver.raw"

def _sysroot(tmp_path, scope=None, cap_eff="0000000000000000"):
    root = tmp_path / "root"
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/status").write_text(f"Name:\tpython\nCapEff:\t{cap_eff}\n")
    if scope is not None:
        (root / "proc/sys/kernel/yama").mkdir(parents=True)
        (root / "proc/sys/kernel/yama/ptrace_scope").write_text(f"{scope}\n")
    return System(root)


@pytest.mark.parametrize("scope, cap, problem", [
    (None, False, None),  # no Yama: the classic rules, same user may
    (0, False, None),
    (1, False, "kernel.yama.ptrace_scope=1 and no CAP_SYS_PTRACE"),
    (1, True, None),
    (2, False, "kernel.yama.ptrace_scope=2 and no CAP_SYS_PTRACE"),
    (2, True, None),
    (3, True, "ptrace is disabled on this host (kernel.yama.ptrace_scope=3"),
])
def test_ptrace_policy(tmp_path, scope, cap, problem):
    system = _sysroot(tmp_path, scope, "00000000a80c25fb" if cap else "00000000a8040000")
    found = collection.ptrace_problem(system)
    assert found == problem if problem is None else problem in found


def test_which_py_spy(tmp_path):
    fake = _fake(tmp_path, "exit 0")
    assert collection.find_py_spy({collection.PY_SPY_ENV: str(fake)}) == str(fake)
    assert collection.find_py_spy({collection.PY_SPY_ENV: str(tmp_path / "none")}) is None
    beside = Path(sys.executable).with_name("py-spy")
    expected = str(beside) if beside.exists() else None
    assert collection.find_py_spy({"PATH": str(tmp_path / "empty")}) == expected


def _fake(tmp_path, body: str) -> Path:
    script = tmp_path / "py-spy"
    script.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'py-spy 9.9'; exit 0; fi\n" + body + "\n")
    script.chmod(0o755)
    return script


@pytest.fixture
def target():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    yield child
    child.kill()
    child.wait()


def _record_with(tmp_path, target, body, monkeypatch, wait_s=0.0):
    monkeypatch.setenv(collection.PY_SPY_ENV, str(_fake(tmp_path, body)))
    monkeypatch.setattr(collection, "ptrace_problem", lambda system=None: None)
    said = []
    recorder, outcome = collection.start(target.pid, tmp_path / "stacks", stackoptions.StackOptions(), said.append)
    time.sleep(wait_s)
    target.kill()
    target.wait()
    return recorder.stop(), said


def test_py_spy_refused_by_ptrace_is_one_line_with_the_fix(tmp_path, target, monkeypatch):
    body = ("echo \"Permission Denied: Try running again with elevated permissions by going "
            "'sudo env \\\"PATH=\\$PATH\\\" !!'\" >&2; exit 1")
    outcome, said = _record_with(tmp_path, target, body, monkeypatch, wait_s=0.5)
    assert len(said) == 1 and "no ptrace permission" in said[0] and "--cap-add SYS_PTRACE" in said[0]
    assert outcome["taken"] is False and "ptrace" in outcome["reason"] and outcome["segments"] == 0


def test_py_spy_that_finds_no_python_is_tried_again_quietly(tmp_path, target, monkeypatch):
    counter = tmp_path / "tries"
    body = f"echo x >> {counter}; echo 'Error: No python processes found in process 1' >&2; exit 1"
    outcome, said = _record_with(tmp_path, target, body, monkeypatch, wait_s=1.3)
    assert said == [] and len(counter.read_text().split()) >= 2
    assert outcome["taken"] is False and outcome["reason"] == "no Python process was found in CMD's process tree"


def test_py_spy_output_is_compressed_and_indexed(tmp_path, target, monkeypatch):
    # A fake py-spy that writes a one-process file to its --output and waits to be stopped.
    body = (f'out=""; prev=""; for a in "$@"; do [ "$prev" = --output ] && out="$a"; prev="$a"; done\n'
            f'trap \'printf "main (m.py:1);wait (m.py:2) 7\\n" > "$out"; echo "Samples: 430 Errors: 2" >&2; exit 0\' INT TERM\n'
            f'while kill -0 $$ 2>/dev/null; do sleep 0.05; done')
    monkeypatch.setattr(collection, "_FLUSH_WAIT_S", 0.3)
    outcome, said = _record_with(tmp_path, target, body, monkeypatch)
    assert said == [] and outcome["taken"] and outcome["samples"] == 430 and outcome["py_spy"] == "9.9"
    index = json.loads((tmp_path / "stacks" / layout.STACKS_INDEX).read_text())
    (segment,) = index["segments"]  # CMD's own py-spy: no --subprocesses, no py-spy for the whole tree
    assert segment["file"] == f"{target.pid}-000.raw.gz" and segment["errors"] == 2
    assert segment["pid"] == target.pid and segment["rate_hz"] == stackoptions.SPARSE_RATE_HZ
    assert segment["stage"] == "whole" and segment["cpu_s"] >= 0
    text = gzip.decompress((tmp_path / "stacks" / segment["file"]).read_bytes()).decode()
    assert text == f'process {target.pid}:"{" ".join(target.args)}";main (m.py:1);wait (m.py:2) 7\n'
    assert not (tmp_path / "stacks" / f"{target.pid}-000.raw").exists()
    assert "--subprocesses" not in index["command"] and "--idle" in index["command"]


def test_missing_py_spy_and_no_stacks(tmp_path, monkeypatch):
    monkeypatch.setenv(collection.PY_SPY_ENV, str(tmp_path / "nowhere"))
    said = []
    recorder, outcome = collection.start(os.getpid(), tmp_path, stackoptions.StackOptions(), said.append)
    assert recorder is None and len(said) == 1 and said[0].startswith("py-spy not found")
    recorder, outcome = collection.start(os.getpid(), tmp_path, stackoptions.StackOptions(enabled=False), said.append)
    assert recorder is None and len(said) == 1 and outcome["reason"] == "not requested (--no-stacks)"


def test_record_options(capsys):
    from writerprof.cli import main

    assert main(["record", "--stack-rate", "0", "--", "true"]) == 2
    assert "argument --stack-rate: '0' is not a rate" in capsys.readouterr().err


def test_py_spy_cut_off_by_a_full_disk_keeps_whole_lines_and_says_so(tmp_path, target, monkeypatch):
    # A fake py-spy whose disk fills while it writes: two lines and half of a third.
    body = (f'out=""; prev=""; for a in "$@"; do [ "$prev" = --output ] && out="$a"; prev="$a"; done\n'
            f'printf \'a;b 3\\nc;d 4\\ne;f\' > "$out"\n'
            f'echo "Error: No space left on device (os error 28)" >&2; exit 1')
    outcome, said = _record_with(tmp_path, target, body, monkeypatch, wait_s=0.3)
    assert said == [] and outcome["taken"] and outcome["segments"] == 1
    (segment,) = json.loads((tmp_path / "stacks" / layout.STACKS_INDEX).read_text())["segments"]
    lines = gzip.decompress((tmp_path / "stacks" / segment["file"]).read_bytes()).decode().splitlines()
    assert [line.rpartition('";')[2] for line in lines] == ["a;b 3", "c;d 4"]  # each under CMD's process frame


def test_py_spy_that_could_write_nothing_on_a_full_disk(tmp_path, target, monkeypatch):
    body = 'echo "Error: No space left on device (os error 28)" >&2; exit 1'
    monkeypatch.setenv(collection.PY_SPY_ENV, str(_fake(tmp_path, body)))
    monkeypatch.setattr(collection, "ptrace_problem", lambda system=None: None)
    recorder, _ = collection.start(target.pid, tmp_path / "stacks", stackoptions.StackOptions(), print)
    time.sleep(0.3)
    target.kill()
    target.wait()
    outcome = recorder.stop()
    assert outcome["taken"] is False and outcome["reason"] == "py-spy could not write its stacks: No space left on device"
    assert recorder.write_error == outcome["reason"]


def test_no_py_spy_for_a_tree_without_python(tmp_path, monkeypatch):
    tries = tmp_path / "tries"
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        monkeypatch.setenv(collection.PY_SPY_ENV, str(_fake(tmp_path, f"echo x >> {tries}; exit 1")))
        monkeypatch.setattr(collection, "ptrace_problem", lambda system=None: None)
        recorder, _ = collection.start(sleeper.pid, tmp_path / "stacks", stackoptions.StackOptions(), print)
        time.sleep(0.3)
    finally:
        sleeper.kill()
        sleeper.wait()
    outcome = recorder.stop()
    assert not tries.exists() and outcome["py_spy"] is None  # never run, not even for its version
    assert outcome["reason"] == "no Python process was found in CMD's process tree"


def test_a_journal_is_a_python_process_to_sample(tmp_path, monkeypatch):
    """A Python that is not named python* (an embedded interpreter) is found by its journal."""
    tries = tmp_path / "tries"
    journals = tmp_path / "procs"
    journals.mkdir()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        monkeypatch.setenv(collection.PY_SPY_ENV, str(_fake(tmp_path, f"echo x >> {tries}; exit 1")))
        monkeypatch.setattr(collection, "ptrace_problem", lambda system=None: None)
        recorder, _ = collection.start(sleeper.pid, tmp_path / "stacks", stackoptions.StackOptions(), print,
                                       journals=journals)
        (journals / f"{sleeper.pid}-1.events.jsonl").write_text("")
        deadline = time.monotonic() + 10
        while not tries.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        sleeper.kill()
        sleeper.wait()
    recorder.stop()
    assert tries.exists()


def test_a_py_spy_that_ended_before_its_signal_is_still_reaped_with_its_cpu_time():
    # The startup's end and a py-spy's own end can cross: the signal must not
    # reap it (Popen.send_signal polls), or wait4 finds no child and the watch fails.
    process = subprocess.Popen([sys.executable, "-c", "sum(range(10**6))"])
    while collection._alive(process.pid):  # a zombie now, not yet reaped
        time.sleep(0.01)
    spy = collection._Spy(process.pid, [], 10, collection.WHOLE, "x.raw", [], process, 0)
    collection._signal(process, collection.signal.SIGINT)
    assert collection.StackRecorder._reaped(spy, 5.0)
    assert process.returncode == 0 and spy.cpu_s > 0
    collection._signal(process, collection.signal.SIGINT)  # reaped: no signal to a pid perhaps reused
