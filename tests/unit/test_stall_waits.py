"""What the report reads from a stall snapshot (writerprof.analysis.stalls,
writerprof.run.stalls): the wait each thread's frames or system call name,
who is on the other side as the journals say, spinning, deadlocks, and a
damaged stalls.jsonl read as far as it goes. On a synthetic run with a
snapshot written as record writes one."""

from __future__ import annotations

import json

import pytest

from writerprof.analysis import stalls
from writerprof.analysis.summary import summarize
from writerprof.run import layout, load
from writerprof.synthetic import Scenario, write_run

T_NS = 90_000_500_000_000  # 0.5 s into the synthetic run: its first save under way
WINDOW_NS = 500_000_000
PRODUCER, WRITER, TRACKER = 1201, 1205, 1203


def _frames(*names: str) -> list[dict]:
    """py-spy's frames, innermost first, from "function (file:line)"."""
    out = []
    for name in names:
        function, _, rest = name.partition(" (")
        file, _, line = rest.rstrip(")").rpartition(":")
        out.append({"function": function, "file": file, "line": int(line)})
    return out


def _thread(tid: int, *frames: str, syscall="futex", wchan="futex_wait_queue", cpu_ns=0, delay_ns=0,
            state="S") -> dict:
    return {"tid": tid, "name": "python", "state": state, "cpu": 0, "window_cpu_ns": cpu_ns,
            "window_delay_ns": delay_ns, "syscall": 0, "syscall_name": syscall, "syscall_args": [0] * 6,
            "wchan": wchan, "python_name": "MainThread", "frames": _frames(*frames)}


def _process(pid: int, ppid: int, role: str, *threads: dict) -> dict:
    return {"pid": pid, "ppid": ppid, "created_ns": None, "comm": "python", "state": "S", "role": role,
            "cmdline": ["python"], "exe": "/usr/bin/python3", "stack_error": None, "threads": list(threads)}


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    root = tmp_path_factory.mktemp("stalled") / "run"
    write_run(root, Scenario(ranks_per_host=2))
    snapshot = {
        "t_ns": T_NS, "wall_ns": 1, "last_progress_ns": T_NS - 30 * 10**9, "stall_ns": 30 * 10**9,
        "window_ns": WINDOW_NS, "machine": "x86_64", "py_spy": "0.4.3", "stacks_error": None, "processes": [
            # The writer in Queue.get, the recv inside it and the probe's wrappers around both.
            _process(WRITER, PRODUCER, "fork_child", _thread(
                WRITER, "Connection._recv (multiprocessing/connection.py:395)",
                "Connection.recv_bytes (multiprocessing/connection.py:216)",
                "make.<locals>.wrapper (<writerprof_probe timed-call-call>:10)",
                "Queue.get (multiprocessing/queues.py:103)",
                "make.<locals>.wrapper (<writerprof_probe timed-call-call>:10)",
                "write (saver.py:21)", "BaseProcess.run (multiprocessing/process.py:108)",
                syscall="read", wchan="pipe_read")),
            # The producer on a full queue; its probe's thread (left out) parked.
            _process(PRODUCER, 1000, "main", _thread(
                PRODUCER, "Queue.put (multiprocessing/queues.py:88)", "save (saver.py:40)", "<module> (saver.py:50)"),
                {**_thread(99, "_Sampler._run (writerprof_probe/stacks.py:157)"), "name": "writerprof-stk"}),
            # The tracker waits by design: in the section, not named.
            _process(TRACKER, PRODUCER, "resource_tracker", _thread(TRACKER, "main (resource_tracker.py:200)",
                                                                    syscall="read", wchan="pipe_read")),
            # Another rank spins; one not probed sleeps in the kernel.
            _process(1202, 1000, "main", _thread(1202, "exists (<frozen genericpath>:19)",
                                                 "BaseProcess.run (multiprocessing/process.py:108)",
                                                 "<module> (saver.py:60)", syscall=None, wchan=None,
                                                 cpu_ns=WINDOW_NS // 10, delay_ns=WINDOW_NS // 2, state="R")),
            _process(77, 1, None, _thread(77, syscall="fsync", wchan="jbd2_log_wait_commit", state="D")),
            {"ppid": 1},  # no pid: dropped
        ]}
    host_dir = layout.host_dir(root, "host0")
    with open(host_dir / layout.STALLS_FILE, "w") as f:
        f.write(json.dumps(snapshot) + "\n")
        f.write('{"t_ns": 1, "processes": [')  # a line cut short
    return summarize(load(root))


@pytest.fixture(scope="module")
def section(summary):
    return summary["stalls"]


def _by_pid(section) -> dict:
    (snapshot,) = section["snapshots"]
    return {p["pid"]: p for p in snapshot["processes"]}


def test_a_wait_is_the_outermost_library_frame_through_the_probes_wrappers(section):
    writer = _by_pid(section)[WRITER]
    assert writer["wait_kind"] == stalls.QUEUE_GET and writer["where"] == "write (saver.py:21)"
    producer = _by_pid(section)[PRODUCER]
    assert producer["wait_kind"] == stalls.QUEUE_PUT and [t["tid"] for t in producer["threads"]] == [PRODUCER]


def test_the_journals_say_who_feeds_and_drains_a_queue_and_the_cycle_is_a_deadlock(section):
    procs = _by_pid(section)
    assert procs[WRITER]["on"] == [{"pid": PRODUCER, "how": "fed by"}]
    assert procs[PRODUCER]["on"] == [{"pid": WRITER, "how": "drained by"}]
    assert procs[PRODUCER]["last_op"]["puts"] >= 1 and procs[WRITER]["last_op"]["kind"] == "queue"
    (snapshot,) = section["snapshots"]
    assert snapshot["deadlocks"] == [[PRODUCER, WRITER]] and snapshot["says"][0].startswith("deadlock: ")


def test_a_thread_runnable_most_of_the_window_spins_on_a_busy_host(section):
    rank = _by_pid(section)[1202]
    assert rank["spins"] and rank["cpu_share"] == 0.1 and rank["runnable_share"] == 0.6 and not rank["waits_on"]
    assert rank["where"] == "<module> (saver.py:60)"  # its loop, not the standard library's os.path.exists
    (snapshot,) = section["snapshots"]
    assert snapshot["spinning"] == [1202]


def test_where_is_the_programs_own_frame_and_a_script_named_as_a_standard_module_still_counts():
    assert stalls._where(_frames("exists (<frozen genericpath>:19)", "retry (test.py:12)",
                                 "<module> (test.py:30)")) == "retry (test.py:12)"
    assert stalls._where(_frames("exists (<frozen genericpath>:19)")) == "exists (<frozen genericpath>:19)"
    assert stalls._where([]) is None


def test_without_a_frame_the_kernel_says_and_only_named_processes_are_said(section):
    procs = _by_pid(section)
    assert procs[77]["wait_kind"] == stalls.KERNEL and procs[77]["id"] is None and not procs[77]["named"]
    assert procs[TRACKER]["waits_on"] and not procs[TRACKER]["named"]
    (snapshot,) = section["snapshots"]
    assert len(snapshot["says"]) == 1 + 3  # the deadlock, the writer, the producer, the spinning rank


def test_a_damaged_stalls_file_is_read_as_far_as_it_goes(section):
    assert len(section["snapshots"]) == 1 and 77 in _by_pid(section) and len(_by_pid(section)) == 5
    (loss,) = section["losses"]
    assert "1 line(s) that are no stall snapshot" in loss and "1 field(s), process(es)" in loss


def test_the_stall_warning_names_the_deadlock_first(summary):
    (stall,) = [d for d in summary["diagnoses"] if d["code"] == "stall"]
    assert stall["severity"] == "warning" and stall["pid"] == WRITER  # the writer it names
    assert stall["message"].startswith("no save made progress for 30.0 s on host0 (snapshot at 0.5 s): deadlock: ")
    assert stall["evidence"]["spinning"] == [1202] and stall["evidence"]["waiting"] == [WRITER, PRODUCER]


def test_a_snapshot_of_processes_computing_between_saves_is_info_not_a_warning():
    from writerprof.analysis.diagnoses.stall import _stuck

    def entry(spins, failed=0, named=True):
        return {"spins": spins, "named": named, "last_op": {"failed_unlinks": failed} if failed else None}

    computing = [entry(True), entry(False)]  # a model's step on a CPU, its loader waiting
    assert not _stuck({"deadlocks": [], "processes": computing}, [e for e in computing if e["named"]])
    livelock = [entry(True, failed=700)]
    assert _stuck({"deadlocks": [], "processes": livelock}, livelock)
    parked = [entry(False), entry(False)]
    assert _stuck({"deadlocks": [], "processes": parked}, parked)
    assert _stuck({"deadlocks": [[1, 2]], "processes": computing}, computing)
    assert not _stuck({"deadlocks": [], "processes": [entry(False, named=False)]}, [])
