"""Stacks at two rates (issue 16): which processes record samples at the full
rate in a py-spy of their own (full_rate), the py-spy commands, the chain
put at the root of a one-process file, the loader's weighting of the tree's
sparse samples and its choice of a process's own segment, and the recorder
giving a child of a Python CMD its own py-spy (a fake py-spy stands in)."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_run_load import write_meta
from test_stacks import CHILD1, CHILD2, FIXTURE, MAIN, SERVER, SETTINGS, TRACKER, _journal
from writerprof.record import pyspy, stackoptions, stackrate
from writerprof.record.system import System
from writerprof.record.rawstacks import compress, process_chain
from writerprof.run import layout, load
from writerprof.run.stacks import read_raw, load_stacks

FORKSERVER = "python -c from multiprocessing.forkserver import main; main(8, 9, ['__main__'], **{})"
TRACKER_CMD = "python -c from multiprocessing.resource_tracker import main;main(5)"


def test_processes_started_by_python_are_sampled_at_the_full_rate():
    python = (True, "python train.py")
    assert not stackrate.full_rate(10, 10, "python train.py", None)  # CMD itself
    assert not stackrate.full_rate(11, 10, "python rank.py", (False, "mpiexec -n 2 python rank.py"))  # an MPI rank
    assert stackrate.full_rate(12, 10, "python train.py", python)  # a fork child (a writer)
    assert stackrate.full_rate(13, 10, "python -c from multiprocessing.spawn import spawn_main; spawn_main()", python)
    assert not stackrate.full_rate(14, 10, TRACKER_CMD, python)  # multiprocessing's daemons
    assert not stackrate.full_rate(15, 10, FORKSERVER, python)
    assert stackrate.full_rate(16, 10, FORKSERVER, (True, FORKSERVER))  # the forkserver's child: a writer


def test_the_split_and_its_commands(tmp_path):
    options = stackoptions.StackOptions()
    assert options.split and options.tree_rate_hz == stackoptions.SPARSE_RATE_HZ < options.rate_hz == stackoptions.RATE_HZ
    recorder = pyspy.StackRecorder(7, tmp_path, options, "py-spy", warn=print)
    sparse = recorder.command(Path("7-000.raw"), 7, options.tree_rate_hz)  # CMD, the daemons: one py-spy each
    assert sparse[sparse.index("--rate") + 1] == "10" and "--idle" in sparse
    own = recorder.command(Path("8-000.raw"), 8, options.rate_hz)
    assert own[own.index("--pid") + 1] == "8" and own[own.index("--rate") + 1] == "100"
    assert "--subprocesses" not in own + sparse and "--nonblocking" in own
    # One rate for every process (rates equal, or py-spy pausing the processes).
    for single in (stackoptions.StackOptions(sparse_rate_hz=100), stackoptions.StackOptions(nonblocking=False)):
        assert not single.split and single.tree_rate_hz == 100


def test_a_one_process_file_gets_the_chain_at_its_root(tmp_path):
    raw = tmp_path / "8-000.raw"
    raw.write_bytes(b"<module> (w.py:1);write (w.py:9) 12\n 2\n")
    chain = process_chain([(7, "python main.py --token=s3cret"), (8, "python main.py --token=s3cret")])
    assert compress(raw, chain) == "8-000.raw.gz" and not raw.exists()
    by_process, bad, _ = read_raw(gzip.decompress((tmp_path / "8-000.raw.gz").read_bytes()).decode())
    assert bad == 0 and list(by_process) == [(8, 7, "python main.py --token=<redacted>")]
    assert by_process[(8, 7, "python main.py --token=<redacted>")] == {
        ("<module> (w.py:1)", "write (w.py:9)"): 12, ("(no Python frame)",): 2}


def test_the_tree_at_the_sparse_rate_is_weighted_and_a_process_own_segment_wins(tmp_path):
    run = write_meta(tmp_path / "run", stacks={**SETTINGS, "sparse_rate_hz": 10, "taken": True, "reason": None})
    _journal(run, MAIN, 1000, 1, "main", [{"kind": "process_start", "start_ns": 1, "end_ns": 2,
                                           "method": "forkserver", "target": "target", "child_pid": CHILD1,
                                           "name": "w", "writer_seq": 0}])
    _journal(run, TRACKER, 1100, MAIN, "resource_tracker")
    _journal(run, SERVER, 1200, MAIN, "forkserver")
    for pid, created in ((CHILD1, 1300), (CHILD2, 1400)):
        _journal(run, pid, created, SERVER, "forkserver_child", [{"kind": "bootstrap", "target": "target"}])
    directory = layout.stacks_dir(run, "alpha")
    directory.mkdir(parents=True)
    (directory / "000.raw.gz").write_bytes(gzip.compress(FIXTURE.read_bytes()))
    own = process_chain([(MAIN, "python main.py"), (SERVER, FORKSERVER), (CHILD1, FORKSERVER)])
    (directory / f"{CHILD1}-000.raw.gz").write_bytes(gzip.compress(own + b"run (w.py:3) 70\n"))
    segments = [{"file": "000.raw.gz", "root_pid": MAIN, "rate_hz": 10, "samples": 430},
                {"file": f"{CHILD1}-000.raw.gz", "root_pid": MAIN, "pid": CHILD1, "rate_hz": 100, "samples": 70}]
    (directory / layout.STACKS_INDEX).write_text(json.dumps({**SETTINGS, "segments": segments}))
    sparse, _, _ = read_raw(FIXTURE.read_text())
    totals = {pid: sum(s.values()) for (pid, _, _), s in sparse.items()}
    stacks = {s.pid: s for s in load_stacks(load(run))}
    assert stacks[CHILD1].samples == {("run (w.py:3)",): 70}  # its own segment only, at 100 Hz
    for pid in (MAIN, TRACKER, SERVER, CHILD2):  # 10 Hz samples count 10 at 100 Hz
        assert stacks[pid].total == 10 * totals[pid] and stacks[pid].rate_hz == 100



def test_own_segments_of_one_process_at_two_rates_are_summed_weighted(tmp_path):
    """A writer's start-up at 100 Hz and its life after at 10 Hz: two own
    segments of one pid, each weighted by its rate, summed; the tree's
    samples of it still left out."""
    run = write_meta(tmp_path / "run", stacks={**SETTINGS, "sparse_rate_hz": 10, "taken": True, "reason": None})
    _journal(run, MAIN, 1000, 1, "main")
    _journal(run, SERVER, 1200, MAIN, "forkserver")
    _journal(run, CHILD1, 1300, SERVER, "forkserver_child", [{"kind": "bootstrap", "target": "target"}])
    directory = layout.stacks_dir(run, "alpha")
    directory.mkdir(parents=True)
    (directory / "000.raw.gz").write_bytes(gzip.compress(FIXTURE.read_bytes()))
    own = process_chain([(MAIN, "python main.py"), (SERVER, FORKSERVER), (CHILD1, FORKSERVER)])
    (directory / f"{CHILD1}-000.raw.gz").write_bytes(gzip.compress(
        own + b"<module> (w.py:1);import (numpy:1) 40\n" + own + b"run (w.py:3) 6\n"))
    (directory / f"{CHILD1}-001.raw.gz").write_bytes(gzip.compress(own + b"run (w.py:3) 7\n"))
    segments = [{"file": "000.raw.gz", "root_pid": MAIN, "rate_hz": 10, "samples": 430},
                {"file": f"{CHILD1}-000.raw.gz", "root_pid": MAIN, "pid": CHILD1, "rate_hz": 100,
                 "stage": "startup", "ended": "target_start", "samples": 46},
                {"file": f"{CHILD1}-001.raw.gz", "root_pid": MAIN, "pid": CHILD1, "rate_hz": 10,
                 "stage": "after_startup", "ended": "exit", "samples": 7}]
    (directory / layout.STACKS_INDEX).write_text(json.dumps({**SETTINGS, "segments": segments}))
    loaded = load(run)
    stacks = {s.pid: s for s in load_stacks(loaded)}
    assert stacks[CHILD1].samples == {("<module> (w.py:1)", "import (numpy:1)"): 40, ("run (w.py:3)",): 6 + 70}
    assert stacks[CHILD1].rate_hz == 100 and not [x for x in loaded.losses if "stacks.json" in x]


def test_the_start_up_ends_at_the_journal_target_start_or_the_cap(tmp_path):
    journals = tmp_path / "procs"
    journals.mkdir()
    watch = stackrate.StartupEnd(journals, 42, started_ns=0, cap_s=1.0, head_s=0.5)
    assert watch.ended(10) is None  # no journal yet
    (journals / "42-5.events.jsonl").write_text('{"kind":"target_start","t_ns":1}\n')  # an earlier pid 42
    events = journals / "42-900.events.jsonl"
    events.write_text('{"kind":"process","pid":42}\n{"kind":"bootstrap","target":"target_start_x"}\n{"kind":"tar')
    assert watch.ended(20) is None  # the newest journal, whole lines only
    with open(events, "a") as more:
        more.write('get_start","t_ns":900000000}\n')
    assert watch.ended(1_200_000_000) is None and watch.target_ns == 900_000_000  # its head; the cap no more
    assert watch.ended(1_400_000_000) == "target_start"
    assert stackrate.StartupEnd(None, 42, started_ns=0, cap_s=1.0).ended(999_999_999) is None
    assert stackrate.StartupEnd(None, 42, started_ns=0, cap_s=1.0).ended(1_000_000_000) == "startup_cap"

# A fake py-spy: writes one stack to its --output (a one-process file, no
# chain) and exits on SIGINT, or when its --pid is gone.
FAKE = r"""#!/bin/sh
if [ "$1" = --version ]; then echo 'py-spy 9.9'; exit 0; fi
out=""; pid=""; prev=""
for a in "$@"; do
  [ "$prev" = --output ] && out="$a"; [ "$prev" = --pid ] && pid="$a"
  prev="$a"
done
finish() {
  echo "child (c.py:2) 5" > "$out"
  echo "Samples: 9 Errors: 0"; exit 0
}
trap finish INT TERM
while kill -0 "$pid" 2>/dev/null; do sleep 0.02; done
finish
"""

PARENT = ("import subprocess, sys; "
          "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.6)']).wait()")


def _use_fake_py_spy(tmp_path, monkeypatch, script: str) -> None:
    """record's py-spy is `script` (FAKE, BLIND), and ptrace is taken to allow it."""
    fake = tmp_path / "bin" / "py-spy"
    fake.parent.mkdir()
    fake.write_text(script)
    fake.chmod(0o755)
    monkeypatch.setenv(pyspy.PY_SPY_ENV, str(fake))
    monkeypatch.setattr(pyspy, "ptrace_problem", lambda system=None: None)


def _after_exec(segments: list[dict]) -> list[dict]:
    """A child's segments, checked: one seen between its fork and its exec (on
    a loaded machine) has a first, full-rate one that ended at the exec."""
    first = min(segments, key=lambda s: s["started_ns"])
    assert all(s["ended"] != "exec" or (s is first and s["stage"] == "startup") for s in segments), segments
    return segments


def test_a_child_of_a_python_cmd_gets_its_own_py_spy(tmp_path, monkeypatch):
    _use_fake_py_spy(tmp_path, monkeypatch, FAKE)
    cmd = subprocess.Popen([sys.executable, "-c", PARENT])
    recorder, _ = pyspy.start(cmd.pid, tmp_path / "stacks", stackoptions.StackOptions(), print)
    deadline = time.monotonic() + 20
    while len(recorder._spies) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    cmd.wait()
    outcome = recorder.stop()
    index = json.loads((tmp_path / "stacks" / layout.STACKS_INDEX).read_text())
    child = _after_exec([s for s in index["segments"] if s["pid"] != cmd.pid])
    (own,) = [s for s in child if s["ended"] != "exec"]
    (main,) = [s for s in index["segments"] if s["pid"] == cmd.pid]  # CMD's own py-spy, at the sparse rate
    assert own["rate_hz"] == 100 and own["stage"] == "startup" and outcome["busy_cpu_processes"] == 0
    assert (main["rate_hz"], main["stage"]) == (10, "whole") and index["tree_rate_hz"] == 10
    assert outcome["taken"] and outcome["full_rate_processes"] == 1 and outcome["full_rate_samples"] == 9 * len(child)
    text = gzip.decompress((tmp_path / "stacks" / own["file"]).read_bytes()).decode()
    assert text.startswith(f'process {cmd.pid}:"{sys.executable} -c') and f'process {own["pid"]}:"' in text
    assert text.endswith(";child (c.py:2) 5\n")




def test_a_parent_s_later_children_are_sampled_at_the_sparse_rate(tmp_path, monkeypatch):
    """Its first FULL_RATE_STARTS children have their start-up at the full
    rate; the later ones, which re-run the same start-up, a sparse py-spy
    each for their whole life: a forkserver's writers (its command line)
    at the sparse rate, not at its daemon's."""
    recorder = pyspy.StackRecorder(10, tmp_path, stackoptions.StackOptions(), "py-spy", warn=print)
    launched = []
    monkeypatch.setattr(recorder, "_launch", lambda pid, chain, rate, stage, *more: launched.append((rate, stage)))
    server = [(10, "python main.py"), (11, FORKSERVER)]
    recorder._begin(11, server, None, 1.0)  # the forkserver itself
    for pid in range(12, 12 + stackrate.FULL_RATE_STARTS + 2):
        recorder._begin(pid, server + [(pid, FORKSERVER)], 11, 1.0)
    recorder._begin(20, [(10, "python main.py"), (20, "python main.py")], 10, 1.0)  # CMD's own first child
    full, sparse = (100, pyspy.STARTUP), (10, pyspy.WHOLE)
    assert launched == [(stackoptions.DAEMON_RATE_HZ, pyspy.WHOLE)] + [full] * stackrate.FULL_RATE_STARTS + [sparse] * 2 + [full]


def test_a_writer_full_rate_py_spy_gives_way_to_a_sparse_one_at_its_target_start(tmp_path, monkeypatch):
    _use_fake_py_spy(tmp_path, monkeypatch, FAKE)
    journals = tmp_path / "procs"
    journals.mkdir()
    cmd = subprocess.Popen([sys.executable, "-c", PARENT.replace("0.6", "30")])
    try:
        recorder, _ = pyspy.start(cmd.pid, tmp_path / "stacks", stackoptions.StackOptions(), print, journals=journals)
        deadline = time.monotonic() + 20
        while len(recorder._spies) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        (child,) = [pid for pid in recorder._spies if pid != cmd.pid]
        (journals / f"{child}-1.events.jsonl").write_text('{"kind":"target_start","t_ns":1}\n')
        while getattr(recorder._spies.get(child), "stage", None) != "after_startup" and time.monotonic() < deadline:
            time.sleep(0.02)  # (until the sparse one has started)
    finally:
        for pid in [p for p in recorder._spies if p != cmd.pid]:  # the writer (by its pid), then CMD
            os.kill(pid, signal.SIGKILL)
        cmd.kill()
        cmd.wait()
    outcome = recorder.stop()
    index = json.loads((tmp_path / "stacks" / layout.STACKS_INDEX).read_text())
    segments = _after_exec([s for s in index["segments"] if s.get("pid") == child])
    startup, after = sorted((s for s in segments if s["ended"] != "exec"), key=lambda s: s["started_ns"])
    assert (startup["rate_hz"], startup["stage"], startup["ended"]) == (100, "startup", "target_start")
    assert (after["rate_hz"], after["stage"]) == (10, "after_startup") and after["ended"] in ("exit", "record_stop")
    assert startup["file"] != after["file"] and startup["ended_ns"] <= after["started_ns"]
    assert outcome["full_rate_processes"] == 1 and outcome["after_startup_processes"] == 1
    assert outcome["full_rate_samples"] == 9 * (len(segments) - 1)

def _stat(root: Path, user: int, idle: int, iowait: int) -> None:
    (root / "proc").mkdir(parents=True, exist_ok=True)
    (root / "proc" / "stat").write_text(f"cpu  {user} 0 10 {idle} {iowait} 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")


def test_the_free_share_of_the_cpus_from_proc_stat(tmp_path):
    assert stackrate.parse_cpu_line("cpu  100 0 10 300 90 0 0 0 0 0\n") == (390, 500)
    assert stackrate.parse_cpu_line("intr 1 2\n") is None and stackrate.parse_cpu_line("") is None
    _stat(tmp_path, user=100, idle=300, iowait=90)
    free = stackrate.FreeCpu(System(tmp_path))
    assert free.look(0) == 1.0  # one look tells nothing yet
    _stat(tmp_path, user=190, idle=305, iowait=95)  # 100 ticks since: 90 user, 10 free
    assert free.look(10**6) == 1.0  # too soon: the window is 200 ms
    assert free.look(3 * 10**8) == 0.1
    _stat(tmp_path, user=200, idle=380, iowait=110)  # 100 ticks: 10 user, 90 free (iowait counts as free)
    assert free.look(6 * 10**8) == 0.9
    assert stackrate.FreeCpu(System(tmp_path / "none")).look(0) == 1.0


def test_a_busy_rate_if_asked_while_the_cpus_are_busy():
    assert stackrate.adapted_rate(100, 0.9, 30) == 100
    assert stackrate.adapted_rate(100, stackrate.BUSY_BELOW, 30) == 100
    assert stackrate.adapted_rate(100, 0.1, 30) == 30
    assert stackrate.adapted_rate(100, 0.0, None) == 100  # not asked: the full rate always


# CMD forks a child that execs after a moment (the watch sees it first with
# CMD's command line); the program it execs forks a child of its own.
EXECS = """import os, sys, time
if os.fork() == 0:
    time.sleep(0.4)
    os.execv(sys.executable, [sys.executable, "-c", {program!r}])
os.wait()
"""
# A fake py-spy that, like py-spy, reads nothing of a process that execs after
# it attached: one started before the exec (CMD's command line, which sleeps
# 0.4 s) writes no file.
BLIND = FAKE.replace("finish() {\n", 'started=$(tr "\\0" " " < /proc/$pid/cmdline)\nfinish() {\n'
                     '  case "$started" in *"sleep(0.4)"*) exit 0;; esac\n')
# The exec'd program: multiprocessing's forkserver by its command line (the
# loader's test of a daemon), or a program; either forks a writer.
DAEMON_PROGRAM = ("'from multiprocessing.forkserver import main'; import os, time\n"
                  "if os.fork() == 0: time.sleep(1.0); os._exit(0)\nos.wait()")
SPAWNED_PROGRAM = DAEMON_PROGRAM.replace("'from multiprocessing.forkserver import main'", "'spawned'")


@pytest.mark.parametrize("program, second", [
    (DAEMON_PROGRAM, (stackoptions.DAEMON_RATE_HZ, "whole")),
    (SPAWNED_PROGRAM, (100, "startup")),
], ids=["daemon", "program"])
def test_a_child_seen_before_its_exec_is_sampled_as_the_program_it_execs(tmp_path, monkeypatch, program, second):
    """Its py-spy, attached before the exec, would read nothing after it: a
    new one samples the new program (a daemon at the daemons' rate, a program
    from its start-up), and the program's own child is known by its parent's
    new command line (a forkserver's writer, at the full rate: not at the
    daemons' rate by a stale one)."""
    _use_fake_py_spy(tmp_path, monkeypatch, BLIND)
    cmd = subprocess.Popen([sys.executable, "-c", EXECS.format(program=program)])
    recorder, _ = pyspy.start(cmd.pid, tmp_path / "stacks", stackoptions.StackOptions(), print)
    cmd.wait()
    recorder.stop()
    segments = json.loads((tmp_path / "stacks" / layout.STACKS_INDEX).read_text())["segments"]
    by_pid = {}
    for segment in sorted(segments, key=lambda s: s["started_ns"]):
        by_pid.setdefault(segment["pid"], []).append(segment)
    child, writer = sorted(set(by_pid) - {cmd.pid})
    (own,) = by_pid[writer]
    assert (own["rate_hz"], own["stage"]) == (100, "startup")
    (then,) = by_pid[child]  # (the blind py-spy before the exec wrote nothing)
    assert (then["rate_hz"], then["stage"]) == second
    log = (tmp_path / "stacks" / "py-spy.log").read_text()
    assert log.count(f"--pid {child} ") == 2 and log.count(f"--pid {writer} ") == 1
    text = gzip.decompress((tmp_path / "stacks" / own["file"]).read_bytes()).decode()
    assert f'process {child}:"{sys.executable} -c {program.split(";")[0]};' in text


EXECS_SLEEP = """import os, time
if os.fork() == 0:
    time.sleep(0.4)
    os.execv("/bin/sleep", ["sleep", "1.5"])
os.wait()
"""


def test_a_child_that_execs_a_program_not_python_gets_no_py_spy_after(tmp_path, monkeypatch):
    """Not Python after its exec: its blind py-spy ends, and none is started
    again for it (py-spy would find no Python, and be retried every half
    second while it lives)."""
    _use_fake_py_spy(tmp_path, monkeypatch, BLIND)
    cmd = subprocess.Popen([sys.executable, "-c", EXECS_SLEEP])
    recorder, _ = pyspy.start(cmd.pid, tmp_path / "stacks", stackoptions.StackOptions(), print)
    cmd.wait()
    recorder.stop()
    log = (tmp_path / "stacks" / "py-spy.log").read_text()
    pids = {int(p) for p in re.findall(r"--pid (\d+) ", log)} - {cmd.pid}
    assert len(pids) == 1 and log.count(f"--pid {pids.pop()} ") == 1
