"""The probe's generic queue hooks under every CPython from 3.9 up: a
process's Queue, SimpleQueue and Pipe traffic is one put or get record a
call, multiprocessing's own (the feeder thread) none, and no hook fails."""

from __future__ import annotations


import pytest
from test_probe_journal import INTERPRETERS, journals, kinds, run_probed

from writerprof.probes.writerprof_probe.format import PHASES

SCRIPT = """
import multiprocessing, threading, time
q = multiprocessing.Queue(maxsize=1)
def consume():
    time.sleep(0.2)
    for _ in range(3):
        q.get(timeout=10)
consumer = threading.Thread(target=consume)
consumer.start()
for i in range(3):
    q.put(i)
consumer.join()
q.close()
q.join_thread()
simple = multiprocessing.SimpleQueue()
simple.put(1)
simple.get()
reader, writer = multiprocessing.Pipe(duplex=False)
writer.send_bytes(b"abc")
reader.recv_bytes()
"""


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_queue_hooks_time_the_targets_calls_only(tmp_path, python):
    script = tmp_path / "queues.py"
    script.write_text(SCRIPT)
    run, done = run_probed(tmp_path, script, python=INTERPRETERS[python])
    assert done.returncode == 0 and "writerprof" not in done.stderr, done.stderr
    ((events, records),) = journals(run).values()
    hooks = {e["spec"]: e["status"] for e in kinds(events, "hook") if e["spec"].startswith("multiprocessing.")}
    assert hooks["multiprocessing.queues:Queue.put=put"] == "applied"
    assert hooks["multiprocessing.connection:_ConnectionBase.recv_bytes=get"] == "applied"
    assert "failed" not in hooks.values() and not kinds(events, "error")
    phases = records["phase"].tolist()
    assert phases.count(PHASES["put"]) == 5 and phases.count(PHASES["get"]) == 5, phases
    puts = records[records["phase"] == PHASES["put"]]
    waits = (puts["end_ns"] - puts["start_ns"]) / 1e9
    assert waits.max() >= 0.15  # a put on the full queue waited for the consumer
