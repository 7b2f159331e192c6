"""A host's agent.lock (the probe's agent.py): held while the process it
names runs; taken over, by one process, once that process is gone, its pid
another's, or it ran in another boot."""

from __future__ import annotations

import os
import subprocess
import sys

from writerprof.probes.writerprof_probe import agent


def _boot_id():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip()


def _ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def _held_by(path, *lines):
    path.write_text("".join(f"{line}\n" for line in lines))


def _holder(path):
    return path.read_text().splitlines()[-1].split()


def _take(path):
    fd = agent.take_lock(str(path))
    if fd is not None:
        os.close(fd)
    return fd is not None


def test_a_new_lock_names_this_process(tmp_path):
    lock = tmp_path / "agent.lock"
    assert _take(lock)
    assert _holder(lock) == [_boot_id(), str(os.getpid()), _ticks(os.getpid())]
    assert not _take(lock)  # this process runs: held


def test_a_running_holder_keeps_it_and_one_gone_loses_it(tmp_path):
    lock = tmp_path / "agent.lock"
    with subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE) as other:
        # The starter's line, then the agent's: the last line is the holder.
        _held_by(lock, f"{_boot_id()} {os.getpid()} {_ticks(os.getpid())}",
                 f"{_boot_id()} {other.pid} {_ticks(other.pid)}")
        assert not _take(lock)
        gone = other.pid, _ticks(other.pid)
        other.stdin.close()
    assert _take(lock) and _holder(lock)[1] == str(os.getpid())
    assert (tmp_path / f"agent.lock.stale-{_boot_id()}-{gone[0]}-{gone[1]}").exists()  # the lock it took over


def test_another_boot_or_a_reused_pid_is_not_the_holder(tmp_path):
    own = os.getpid(), _ticks(os.getpid())
    for name, line in (("boot", f"00000000-0000-0000-0000-000000000000 {own[0]} {own[1]}"),
                       ("reused", f"{_boot_id()} {own[0]} {int(own[1]) - 1}")):
        lock = tmp_path / name / "agent.lock"
        lock.parent.mkdir()
        _held_by(lock, line)
        assert _take(lock), name


def test_a_lock_being_written_is_left_alone(tmp_path):
    lock = tmp_path / "agent.lock"
    lock.write_text(f"{_boot_id()} 1")  # no whole line yet
    assert not _take(lock)


_TAKE = """
import os, sys
from writerprof.probes.writerprof_probe import agent
sys.stdin.readline()  # all started: at once
print(agent.take_lock(sys.argv[1]) is not None, flush=True)
sys.stdin.readline()  # running until all have tried: a holder gone would be taken over again
"""


def test_of_processes_finding_it_stale_at_once_one_takes_it(tmp_path):
    lock = tmp_path / "agent.lock"
    _held_by(lock, "00000000-0000-0000-0000-000000000000 1 1")
    procs = [subprocess.Popen([sys.executable, "-c", _TAKE, str(lock)], stdin=subprocess.PIPE, cwd=tmp_path,
                              stdout=subprocess.PIPE, text=True) for _ in range(6)]
    for proc in procs:
        proc.stdin.write("\n")
        proc.stdin.flush()
    taken = [proc.stdout.readline().strip() for proc in procs]
    for proc in procs:
        proc.stdin.close()
    assert [proc.wait(timeout=60) for proc in procs] == [0] * 6
    assert taken.count("True") == 1, taken
    assert _holder(lock)[1] in {str(p.pid) for p in procs}
