"""The probe's stack sampler (writerprof_probe.stacks) in real processes,
under every CPython from 3.9 that pyenv has: every process of a fork,
forkserver and spawn run sampled, the target's output and warnings
unchanged (no "multi-threaded fork" warning), and what a killed process
had sampled kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from test_probe_journal import INTERPRETERS, PROBE_DIR, journals, kinds, run_probed

from writerprof.probes.writerprof_probe import format as journal_format
from writerprof.run.stacks import parse_line

STACKS = {journal_format.STACKS_ENV: "100,10,5"}
# Every start method, and a bare os.fork in __main__ (where Python 3.12+ shows
# its multi-threaded-fork DeprecationWarning by default).
TARGET = """
import multiprocessing, os, sys, time

def spin_in_child(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sum(range(1000))

if __name__ == "__main__":
    for method in ("fork", "forkserver", "spawn"):
        child = multiprocessing.get_context(method).Process(target=spin_in_child, args=(0.3,))
        child.start()
        child.join()
        print(method, child.exitcode)
    pid = os.fork()
    if pid == 0:  # the script's third child: at the sparse rate (FULL_RATE_STARTS), so longer
        spin_in_child(0.6)
        os._exit(0)
    print("os.fork", os.waitpid(pid, 0)[1])
"""


def _stacks(run):
    """{pid: {frames: count}} of every file the probe wrote."""
    out = {}
    for file in run.glob("hosts/*/stacks/*" + journal_format.STACKS_SUFFIX):
        samples = {}
        for line in file.read_text().splitlines():
            chain, frames, count = parse_line(line)
            assert chain == [] and count > 0
            samples[frames] = samples.get(frames, 0) + count
        out[int(file.name.split("-")[0])] = samples
    return out


@pytest.mark.parametrize("python", INTERPRETERS.values(), ids=INTERPRETERS.keys())
def test_every_process_is_sampled_and_the_target_sees_nothing_of_it(tmp_path, python):
    script = tmp_path / "target.py"
    script.write_text(TARGET)
    plain = subprocess.run([python, "-W", "always", str(script)], capture_output=True, text=True, timeout=120)
    run, done = run_probed(tmp_path, "-W", "always", script, python=python, extra_env=STACKS)
    assert (done.returncode, done.stdout, done.stderr) == (plain.returncode, plain.stdout, plain.stderr) == \
        (0, "fork 0\nforkserver 0\nspawn 0\nos.fork 0\n", "")
    stacks = _stacks(run)
    spinning = [pid for pid, samples in stacks.items()
                if any(any(f.startswith("spin_in_child (target.py:") for f in frames) for frames in samples)]
    # Each process's role and its "stacks" event: which one went unsampled, and why, if it failed.
    events = {pid: (evs[0].get("role"), kinds(evs, "stacks")) for pid, (evs, _) in journals(run).items()}
    assert not [e for _, stacks_events in events.values() for e in stacks_events if "error" in e], events
    assert len(spinning) == 4, (events, stacks)  # the three writers and the bare fork child
    for pid in spinning:  # 0.3-0.6 s of work: 30-60 periods of the full rate, give or take the machine's load
        assert 10 <= sum(stacks[pid].values()) <= 200, (pid, stacks[pid])
    writer = next(samples for pid, samples in stacks.items() if pid in spinning and any(
        "multiprocessing/spawn.py:" in f for frames in samples for f in frames))
    assert any(f.startswith(("BaseProcess._bootstrap (", "_bootstrap (")) for frames in writer for f in frames)


def test_a_killed_process_keeps_what_it_had_sampled(tmp_path):
    script = tmp_path / "target.py"
    script.write_text("import time\nprint('started', flush=True)\nwhile True:\n    sum(range(1000))\n")
    run = tmp_path / "run"
    run.mkdir()
    env = {**os.environ, journal_format.RUN_ENV: str(run), "PYTHONPATH": PROBE_DIR, **STACKS}
    target = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline() == "started\n"
    time.sleep(1.2)  # past the rewrites at 0.25 and 0.75 s
    target.send_signal(signal.SIGKILL)
    target.wait()
    target.stdout.close()
    [samples] = _stacks(run).values()
    assert any(frames[-1].startswith("<module> (target.py:") for frames in samples)
    # At 10 Hz (a main process), each sample counts for ten periods of the full rate.
    assert sum(samples.values()) >= 30


POOL = """
import multiprocessing, time

def nap(_):
    time.sleep(0.2)

if __name__ == "__main__":
    for method in ("spawn", "forkserver"):
        started = [multiprocessing.get_context(method).Process(target=nap, args=(0,)) for _ in range(4)]
        for child in started:
            child.start()
        for child in started:
            child.join()
"""


def test_only_the_first_writers_of_each_parent_are_at_the_full_rate(tmp_path):
    # Four writers started at once, under spawn (their parent: the script) and
    # forkserver (the daemon): two of each parent's at the full rate, counted in
    # stacks/PPID.starts however their start-ups interleave.
    script = tmp_path / "target.py"
    script.write_text(POOL)
    run, done = run_probed(tmp_path, script, extra_env=STACKS)
    assert done.returncode == 0, done.stderr
    firsts = {}
    for pid, (events, _) in journals(run).items():
        process = events[0]
        if process["role"] in ("spawn_child", "forkserver_child"):
            (stacks_event,) = kinds(events, "stacks")
            firsts.setdefault((process["role"], process["ppid"]), []).append(stacks_event["first_start"])
    assert sorted(map(sorted, firsts.values())) == [[False, False, True, True]] * 2, firsts
