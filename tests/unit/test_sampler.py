import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from test_procfs import CountingSystem, stat_line, write_process
from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe.numa import PAGE_SIZE
from writerprof.record import procfs
from writerprof.record.sampler import Sampler
from writerprof.record.system import System
from writerprof.run import directory, layout, load
from writerprof.run.loader import SAMPLE_DTYPE
from writerprof.units import parse_cpu_list

INTERVAL_S = 0.02


def new_run(tmp_path):
    run_dir = directory.create(tmp_path / "run", [sys.executable], interval_ns=int(INTERVAL_S * 1e9),
                               sampler=True, probes=[], env={})
    return run_dir, layout.host_dir(run_dir, journal.host_name())


def sampled(host_dir, kind=None, pid=None):
    lines = (host_dir / layout.SAMPLED_FILE).read_text().splitlines()
    records = [json.loads(line) for line in lines]
    return [r for r in records if kind in (None, r["kind"]) and pid in (None, r["pid"])]


def samples(host_dir):
    return np.fromfile(host_dir / layout.SAMPLES_FILE, dtype=SAMPLE_DTYPE)


def python(code, **kwargs):
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, **kwargs)


def finish(*processes):
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdout:
            process.stdout.close()


# --- real processes ---

FORKS_A_GRANDCHILD = """
import os, time
pid = os.fork()
if pid == 0:
    time.sleep(0.3)
    os._exit(0)
print(pid, flush=True)
os.waitpid(pid, 0)
"""


def _sampled_tree(host_dir, code):
    """A Python running code (which prints the pid of the child it forks) and
    its tree, sampled until it ends: (its Popen, the child's pid, the Sampler)."""
    child = python(code)
    sampler = Sampler(child.pid, host_dir, INTERVAL_S)
    try:
        sampler.start()
        grandchild = int(child.stdout.readline())
        child.wait(timeout=60)
    finally:
        sampler.stop()
        finish(child)
    return child, grandchild, sampler


def test_short_lived_child_tree_is_sampled_and_loads(tmp_path):
    run_dir, host_dir = new_run(tmp_path)
    child, grandchild, sampler = _sampled_tree(host_dir, FORKS_A_GRANDCHILD)
    directory.finish(run_dir, exit_status=0, ended_by="exit", signal=None)

    run = load(run_dir)
    assert run.losses == []
    assert {child.pid, grandchild} <= set(run.samples["pid"])
    for pid, ppid in ((child.pid, os.getpid()), (grandchild, child.pid)):
        kinds = [r["kind"] for r in run.sampled if r["pid"] == pid]
        assert kinds[:2] == ["seen", "affinity"] and kinds[-1] == "gone" and kinds.count("gone") == 1
        seen = next(r for r in run.sampled if r["pid"] == pid)
        assert seen["ppid"] == ppid
        assert seen["cmdline"] == [sys.executable, "-c", FORKS_A_GRANDCHILD]  # the grandchild's is inherited
        assert seen["exe"] == os.path.realpath(sys.executable)
        affinity = next(r for r in run.sampled if r["pid"] == pid and r["kind"] == "affinity")
        assert parse_cpu_list(affinity["cpus"]) == os.sched_getaffinity(0)
        mine = run.samples[run.samples["pid"] == pid]
        assert (np.diff(mine["t_ns"]) > 0).all() and (mine["threads"] >= 1).all()
    status = sampler.status()
    assert status.processes_seen >= 2 and status.alive == frozenset() and status.errors == 0


# A Python's fork, seen before its exec, that execs the same Python (its comm stays "python").
FORK_EXECS_PYTHON = """
import os, sys, time
pid = os.fork()
if pid == 0:
    time.sleep(0.3)
    os.execv(sys.executable, [sys.executable, "-I", "-c", "import time; time.sleep(0.3)"])
print(pid, flush=True)
os.waitpid(pid, 0)
"""


def test_a_fork_that_execs_the_same_python_is_seen_to_exec(tmp_path):
    _, host_dir = new_run(tmp_path)
    _, grandchild, _ = _sampled_tree(host_dir, FORK_EXECS_PYTHON)
    seen, execs = sampled(host_dir, "seen", grandchild), sampled(host_dir, "exec", grandchild)
    assert seen[0]["cmdline"] == [sys.executable, "-c", FORK_EXECS_PYTHON]  # before its exec: the parent's
    assert [e["cmdline"] for e in execs] == [[sys.executable, "-I", "-c", "import time; time.sleep(0.3)"]]


HOLDS_SHARED_MEMORY = """
import os, time
from multiprocessing import shared_memory
os.sched_setaffinity(0, [{CPU}])  # first touch from a known node
shm = shared_memory.SharedMemory(create=True, size={SIZE})
try:
    print(shm.name, flush=True)
    shm.buf[:] = b"x" * {SIZE}
    time.sleep(1.0)  # past a second numa_maps reading
finally:
    shm.close()
    shm.unlink()
"""


def node_of(cpu):
    found = glob.glob(f"/sys/devices/system/cpu/cpu{cpu}/node[0-9]*")
    return found[0].rsplit("node", 1)[1] if found else "0"


def test_shared_memory_placement(tmp_path, monkeypatch):
    monkeypatch.setattr("writerprof.record.sampler.NUMA_MAPS_EVERY_NS", 200_000_000)
    _, host_dir = new_run(tmp_path)
    cpu, size = min(os.sched_getaffinity(0)), 1 << 20
    child = python(HOLDS_SHARED_MEMORY.format(CPU=cpu, SIZE=size))
    sampler = Sampler(child.pid, host_dir, INTERVAL_S)
    name = None
    try:
        sampler.start()
        name = child.stdout.readline().strip()
        child.wait(timeout=60)
    finally:
        sampler.stop()
        finish(child)
        if name:  # the child unlinks it, unless it was killed
            try:
                os.unlink("/dev/shm/" + name)
            except FileNotFoundError:
                pass
    assert child.returncode == 0
    placed = [r for r in sampled(host_dir, "numa_maps", child.pid) if r["file"] == "/dev/shm/" + name]
    assert placed and placed[-1]["pages"] == {node_of(cpu): size // PAGE_SIZE}
    assert placed[-1]["huge"] is False and placed[-1]["address"] > 0


def test_process_named_only_by_its_journal(tmp_path):
    _, host_dir = new_run(tmp_path)
    sleep = "import time; print(flush=True); time.sleep(60)"
    root, daemon, stranger = python(sleep), python(sleep), python(sleep)
    try:
        # Popen returns when the exec closes its pipe, before the kernel gives the
        # process its command line: until then a tick rightly waits to see it.
        for process in (root, daemon, stranger):
            process.stdout.readline()
        procs = host_dir / layout.PROCS_DIR
        # daemon is no descendant of root: only its journal names it (a spawn child, a writer).
        identity = {"kind": "process", "pid": daemon.pid, "role": "spawn_child"}
        (procs / f"{daemon.pid}-{time.monotonic_ns()}{journal.EVENTS_SUFFIX}").write_text(
            json.dumps(identity) + "\n")
        # A journal of an earlier process with stranger's pid: not stranger's.
        (procs / f"{stranger.pid}-1{journal.EVENTS_SUFFIX}").write_text("")
        sampler = Sampler(root.pid, host_dir, INTERVAL_S)
        sampler.tick()
        status = sampler.status()
        assert status.alive == {root.pid, daemon.pid} and status.writers_alive == 1
        daemon.kill()
        daemon.wait()
        sampler.tick()
        assert sampler.status().alive == {root.pid} and sampler.status().writers_alive == 0
        sampler.stop()
    finally:
        finish(root, daemon, stranger)
    assert set(samples(host_dir)["pid"]) == {root.pid, daemon.pid}
    assert [r["kind"] for r in sampled(host_dir, pid=daemon.pid)] == ["seen", "affinity", "gone"]


def test_cost_of_a_tick_for_ten_processes(tmp_path):
    _, host_dir = new_run(tmp_path)
    # A python parent with nine sleeping children: ten processes, in a session of their own.
    root = python("import subprocess, time\n"
                  "children = [subprocess.Popen(['sleep', '60']) for _ in range(9)]\n"
                  "print(flush=True)\ntime.sleep(60)", start_new_session=True)
    try:
        root.stdout.readline()
        sampler = Sampler(root.pid, host_dir, INTERVAL_S)
        sampler.tick()  # first sight: cmdline, exe, numa_maps (and, without children files, all of /proc)
        costs = []
        for _ in range(50):
            started = time.perf_counter()
            sampler.tick()
            costs.append(time.perf_counter() - started)
        assert len(sampler.status().alive) == 10
        print(f"\nsampler tick, 10 processes: median {np.median(costs) * 1e3:.2f} ms, "
              f"max {max(costs) * 1e3:.2f} ms")
        sampler.stop()
    finally:
        os.killpg(root.pid, signal.SIGKILL)
        finish(root)
    assert np.bincount(samples(host_dir)["pid"]).max() == 52  # every tick sampled each


# --- a fake /proc: every change seen, deterministically ---

def test_records_follow_the_process(tmp_path):
    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    write_process(root, 100, children={100: [101]}, io=False)
    write_process(root, 101, ppid=100, children={101: []}, cpus="0-1", write_bytes=4096, start=5000)
    sampler = Sampler(100, host_dir, INTERVAL_S, System(root))
    sampler.tick()
    assert [(r["kind"], r["pid"]) for r in sampled(host_dir)] == [
        ("seen", 100), ("affinity", 100), ("seen", 101), ("affinity", 101)]
    seen = sampled(host_dir, "seen", 101)[0]
    # Clock-tick precision: the boot-time offset is read anew each time.
    assert abs(seen.pop("created_ns") - procfs.start_ns(5000)) < 1_000_000
    assert seen == {"kind": "seen", "t_ns": seen["t_ns"], "pid": 101, "ppid": 100,
                    "cmdline": ["python3", "-c", "pass"], "exe": None}

    # It ran (its CPU time grew) and wrote; its affinity was changed.
    write_process(root, 101, ppid=100, children={101: []}, cpus="1", write_bytes=8192, start=5000, utime=6)
    sampler.tick()
    assert sampled(host_dir, "affinity", 101)[-1]["cpus"] == "1"
    assert sampler.status().written_bytes == 2 * 8192  # wchar; 100's io is unreadable: not counted

    # It exits: sampled once more as a zombie (final counters), then gone. Its
    # parent, which we follow, takes its counters in when it reaps it.
    write_process(root, 101, ppid=100, children={101: []}, state="Z", cpus="1", write_bytes=9000,
                  start=5000)
    sampler.tick()
    sampler.tick()  # still a zombie: nothing new
    assert [r["kind"] for r in sampled(host_dir, pid=101)] == ["seen", "affinity", "affinity", "gone"]
    status = sampler.status()
    assert status.alive == {100} and status.written_bytes == 0 and status.processes_seen == 2

    # Its pid is reused by another child: a new process.
    write_process(root, 101, ppid=100, children={101: []}, write_bytes=10, start=7000)
    sampler.tick()
    assert [r["kind"] for r in sampled(host_dir, pid=101)][-2:] == ["seen", "affinity"]
    assert sampler.status().processes_seen == 3 and sampler.status().written_bytes == 2 * 10
    sampler.stop()
    rows = samples(host_dir)
    assert list(rows["pid"]) == [100, 101, 100, 101, 100, 101, 100, 100, 101, 100, 101]
    last = rows[-1]
    assert (last["write_bytes"], last["wchar"], last["cpu"], last["rss_bytes"]) == (10, 20, 0, 100 * PAGE_SIZE)
    assert (rows[rows["pid"] == 100]["write_bytes"] == -1).all()


def test_an_exec_under_way_is_seen_once_it_is_done(tmp_path):
    """Between an exec's point of no return and its new arguments (a moment,
    longer on a loaded machine) a process has no command line: it is looked
    at again next tick, not seen as a program without one."""
    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    write_process(root, 100, children={100: [101]}, io=False)
    write_process(root, 101, ppid=100, children={101: []}, cmdline="", start=5000)  # exec'ing
    sampler = Sampler(100, host_dir, INTERVAL_S, System(root))
    sampler.tick()
    assert sampled(host_dir, "seen", 101) == []
    write_process(root, 101, ppid=100, children={101: []}, cmdline="true\0", comm="true", start=5000)
    sampler.tick()
    assert [r["cmdline"] for r in sampled(host_dir, "seen", 101)] == [["true"]]
    write_process(root, 101, ppid=100, children={101: []}, cmdline="", comm="sh", start=5000, utime=6)
    sampler.tick()  # its next exec, under way: not yet
    write_process(root, 101, ppid=100, children={101: []}, cmdline="sh\0-c\0:\0", comm="sh", start=5000, utime=7)
    sampler.tick()
    assert [(r["kind"], r.get("cmdline")) for r in sampled(host_dir, pid=101) if r["kind"] in ("seen", "exec")] == [
        ("seen", ["true"]), ("exec", ["sh", "-c", ":"])]


class StatOnce(System):
    """A fixture tree whose pid 100 stat reads as each of `pending` once (as
    it was a moment before the tree's files), then as its file."""

    def __init__(self, root):
        super().__init__(root)
        self.pending = []

    def read(self, path):
        if path == "/proc/100/stat" and self.pending:
            return self.pending.pop()
        return super().read(path)


def test_a_stat_read_inside_an_exec_makes_no_second_exec(tmp_path):
    """A tick reads the stat inside an exec (its arguments' end not yet
    laid out) and, the exec done meanwhile, its whole command line: one
    exec, not another at the next tick when the stat's arguments are whole."""
    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    write_process(root, 100, children={100: []}, cmdline="sh\0-c\0:\0", comm="sh", args=(10, 20))
    inside = stat_line(100, comm="python3", utime=6, args=(30, 0))

    system = StatOnce(root)
    sampler = Sampler(100, host_dir, INTERVAL_S, system)
    sampler.tick()
    write_process(root, 100, children={100: []}, comm="python3", utime=6, args=(30, 40))
    system.pending.append(inside)
    sampler.tick()
    write_process(root, 100, children={100: []}, comm="python3", utime=7, args=(30, 40))
    sampler.tick()
    assert [(r["kind"], r["cmdline"][0]) for r in sampled(host_dir, pid=100) if r["kind"] in ("seen", "exec")] == [
        ("seen", "sh"), ("exec", "python3")]


def test_an_exec_between_a_first_stat_and_the_command_line_is_seen_next_tick(tmp_path):
    """A python that execs a python at once: the first tick's stat is of the
    first image, its command line already of the second; the next tick's
    stat, on other arguments, is the exec (os.execv of the same program)."""
    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    write_process(root, 100, children={100: []}, cmdline="python3\0-c\0print(1)\0", args=(30, 40))
    system = StatOnce(root)
    system.pending.append(stat_line(100, args=(10, 20)))
    sampler = Sampler(100, host_dir, INTERVAL_S, system)
    sampler.tick()
    write_process(root, 100, children={100: []}, cmdline="python3\0-c\0print(1)\0", utime=6, args=(30, 40))
    sampler.tick()
    assert [r["kind"] for r in sampled(host_dir, pid=100) if r["kind"] in ("seen", "exec")] == ["seen", "exec"]


def test_numa_maps_at_first_sight_then_only_on_change(tmp_path, monkeypatch):
    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    maps = "7f0000000000-7f0000100000 rw-s 00000000 00:1e 2    /dev/shm/buf\n"
    numa = "7f0000000000 default file=/dev/shm/buf dirty=4 N0=4 kernelpagesize_kB=4\n"
    write_process(root, 100, maps=maps, numa_maps=numa)
    monkeypatch.setattr("writerprof.record.sampler.NUMA_MAPS_EVERY_NS", 0)
    sampler = Sampler(100, host_dir, INTERVAL_S, System(root))
    sampler.tick()
    sampler.tick()  # unchanged: no record
    write_process(root, 100, maps=maps, numa_maps=numa.replace("N0=4", "N0=4 N1=60"))
    sampler.tick()
    sampler.stop()
    placed = [(r["address"], r["file"], r["pages"], r["huge"]) for r in sampled(host_dir, "numa_maps")]
    assert placed == [(0x7f0000000000, "/dev/shm/buf", {"0": 4}, False),
                      (0x7f0000000000, "/dev/shm/buf", {"0": 4, "1": 60}, False)]


def test_no_numa_maps_of_a_process_the_probe_runs_in(tmp_path, monkeypatch):
    """Its journal found, the probe places its buffers itself: the sampler's
    walk of its mappings would be cost for nothing."""
    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    maps = "7f0000000000-7f0000100000 rw-s 00000000 00:1e 2    /dev/shm/buf\n"
    numa = "7f0000000000 default file=/dev/shm/buf dirty=4 N0=4 kernelpagesize_kB=4\n"
    write_process(root, 100, maps=maps, numa_maps=numa)
    identity = {"kind": "process", "pid": 100, "role": "forkserver_child"}
    (host_dir / layout.PROCS_DIR / f"100-{time.monotonic_ns()}{journal.EVENTS_SUFFIX}").write_text(
        json.dumps(identity) + "\n")
    monkeypatch.setattr("writerprof.record.sampler.NUMA_MAPS_EVERY_NS", 0)
    sampler = Sampler(100, host_dir, INTERVAL_S, System(root))
    sampler.tick()
    write_process(root, 100, maps=maps, numa_maps=numa.replace("N0=4", "N0=4 N1=60"))
    sampler.tick()
    sampler.stop()
    assert sampled(host_dir, "numa_maps") == []
    assert [r["kind"] for r in sampled(host_dir, pid=100)][:1] == ["seen"]


def test_a_process_that_has_not_run_keeps_its_io_and_status_until_they_are_due(tmp_path, monkeypatch):
    """Its stat as it was (an idle daemon), its io and status are not read
    again until STATUS_EVERY_NS has passed; once it ran, at once."""
    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    write_process(root, 100, write_bytes=1)
    system = CountingSystem(root)
    sampler = Sampler(100, host_dir, INTERVAL_S, system)
    monkeypatch.setattr("writerprof.record.sampler.STATUS_EVERY_NS", 3600 * 10**9)
    sampler.tick()
    extra = ("/proc/100/io", "/proc/100/status")
    assert all(path in system.reads for path in extra)

    write_process(root, 100, write_bytes=2, cpus="1")  # (its io and status changed; its stat did not)
    system.reads.clear()
    sampler.tick()
    assert "/proc/100/stat" in system.reads and not any(path in system.reads for path in extra)
    assert sampler.status().written_bytes == 2 * 1 and [r["cpus"] for r in sampled(host_dir, "affinity")] == ["0-1"]

    monkeypatch.setattr("writerprof.record.sampler.STATUS_EVERY_NS", 0)  # due
    sampler.tick()
    assert sampler.status().written_bytes == 2 * 2 and [r["cpus"] for r in sampled(host_dir, "affinity")] == [
        "0-1", "1"]

    monkeypatch.setattr("writerprof.record.sampler.STATUS_EVERY_NS", 3600 * 10**9)
    write_process(root, 100, write_bytes=3, cpus="0", utime=6)  # it ran
    sampler.tick()
    sampler.stop()
    assert sampler.status().written_bytes == 2 * 3 and [r["cpus"] for r in sampled(host_dir, "affinity")] == [
        "0-1", "1", "0"]


def test_failing_ticks_are_counted_and_recorded_once(tmp_path):
    class Failing(System):
        def read(self, path):
            if path.endswith("/status"):
                raise RuntimeError("status broke")
            return super().read(path)

    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    write_process(root, 100)
    sampler = Sampler(100, host_dir, 0.005, Failing(root))
    sampler.start()
    deadline = time.monotonic() + 30
    while sampler.status().errors < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    assert sampler.status().errors >= 3  # the thread went on ticking
    errors = sampled(host_dir, "error")
    assert len(errors) == 1 and errors[0]["error"] == "RuntimeError: status broke"
    assert errors[0]["pid"] == 100 and '"status"' in errors[0]["traceback"]  # the read that failed


def test_stop_is_final(tmp_path):
    _, host_dir = new_run(tmp_path)
    sampler = Sampler(os.getpid(), host_dir, INTERVAL_S)
    sampler.stop()
    sampler.stop()
    with pytest.raises(OSError):
        sampler.tick()


def test_written_bytes_count_each_process_once(tmp_path):
    """The kernel adds a reaped child's I/O counters to its parent's; a child
    whose parent we do not follow (the root's, an orphan's) counts on its own."""
    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    write_process(root, 100, children={100: [101]}, write_bytes=1)
    write_process(root, 101, ppid=100, children={101: []}, write_bytes=50)
    sampler = Sampler(100, host_dir, INTERVAL_S, System(root))
    sampler.tick()
    assert sampler.status().written_bytes == 2 * 51
    # 100 reaps 101: 101 is gone and its bytes are in 100's counters now (and
    # its CPU time in 100's stat; here 100's own, which grew by its wait).
    write_process(root, 100, children={100: []}, write_bytes=51, utime=6)
    (root / "proc" / "101" / "stat").unlink()
    sampler.tick()
    assert sampler.status().written_bytes == 2 * 51
    # The root ends (reaped by the launcher, which is not followed): its last reading stays.
    (root / "proc" / "100" / "stat").unlink()
    sampler.tick()
    assert sampler.status().written_bytes == 2 * 51 and sampler.status().alive == frozenset()
    sampler.stop()


def test_the_sampler_thread_yields_to_the_recorded_processes(tmp_path):
    _, host_dir = new_run(tmp_path)
    sampler = Sampler(os.getpid(), host_dir, INTERVAL_S)
    sampler.start()
    try:
        deadline = time.monotonic() + 10
        while not samples(host_dir).size and time.monotonic() < deadline:
            time.sleep(0.01)
        (thread,) = [t for t in threading.enumerate() if t.name == "writerprof-sampler"]
        with open(f"/proc/self/task/{thread.native_id}/stat") as f:
            nice = int(f.read().rsplit(")", 1)[1].split()[16])
    finally:
        sampler.stop()
    assert nice == min(19, os.getpriority(os.PRIO_PROCESS, 0) + 10)


def test_a_write_that_fails_stops_the_sampler_once_and_keeps_whole_records(tmp_path, monkeypatch):
    """A full disk: the tick's records are taken back whole, the thread ends,
    and write_error says why; nothing is raised into the recording."""
    import errno

    from writerprof.record import sampler as module

    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    write_process(root, 100)
    sampler = Sampler(100, host_dir, INTERVAL_S, System(root))
    sampler.tick()
    kept = (host_dir / layout.SAMPLES_FILE).read_bytes()
    real_write, calls = os.write, []

    def half_then_full(fd, data):  # writes half of what it is given, then the disk is full
        calls.append(fd)
        if len(calls) == 1:
            return real_write(fd, bytes(data[:len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(module.os, "write", half_then_full)
    sampler.start()
    sampler._thread.join(timeout=30)  # it ends by itself
    assert not sampler._thread.is_alive()
    monkeypatch.setattr(module.os, "write", real_write)
    sampler.stop()
    assert sampler.write_error.endswith("No space left on device") and str(host_dir) in sampler.write_error
    assert (host_dir / layout.SAMPLES_FILE).read_bytes() == kept  # the half record taken back
    assert len(calls) == 2 and sampler.status().errors == 0


def test_ticks_that_overrun_the_interval_are_counted(tmp_path):
    class Slow(System):
        def read(self, path):
            if path.endswith("/stat"):
                time.sleep(0.004)
            return super().read(path)

    root = tmp_path / "root"
    _, host_dir = new_run(tmp_path)
    write_process(root, 100)
    sampler = Sampler(100, host_dir, 0.001, Slow(root))
    sampler.start()
    deadline = time.monotonic() + 30
    while sampler.timing()["ticks"] < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    sampler.stop()
    timing = sampler.timing()
    assert timing["interval_ns"] == 1_000_000 and timing["ticks"] >= 5
    assert timing["late"] == timing["ticks"] and timing["longest_ns"] > 4_000_000
