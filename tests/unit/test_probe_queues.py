"""The probe's generic queue hooks (writerprof_probe/queues.py): every put and
get of multiprocessing's queues and pipes that the target makes is one
record of its phase, and multiprocessing's own traffic (the Queue feeder
thread, the pipe read inside Queue.get) is none."""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.queues
import threading
import time

import pytest

from writerprof.probes.writerprof_probe import calls, queues
from writerprof.probes.writerprof_probe.format import PHASES
from probe_journal import MemoryJournal


class Journal(MemoryJournal):
    def phases(self):
        return [r[0] for r in self.records]

    def durations(self, phase):
        return [(r[7] - r[6]) / 1e9 for r in self.records if r[0] == PHASES[phase]]


@pytest.fixture
def journal(monkeypatch):
    """The hooks applied to the real classes, undone after the test."""
    journal = Journal()
    monkeypatch.setattr(calls, "journal", journal)
    status = {}
    for module_name, hooked in queues._HOOKED.items():
        module = __import__(module_name, fromlist=["_"])
        for cls_name, method, _, _ in hooked:
            cls = getattr(module, cls_name)
            monkeypatch.setattr(cls, method, cls.__dict__[method])  # restored at the end
        queues._applier(module_name, hooked, lambda name, s, reason: status.update({name: s}))(module)
    assert set(status.values()) == {"applied"}, status
    return journal


def test_a_queue_put_and_get_are_one_record_each_not_the_feeder_threads_send(journal):
    q = multiprocessing.Queue()
    for i in range(3):
        q.put(i)
    assert [q.get(timeout=5) for _ in range(3)] == [0, 1, 2]
    q.close()
    q.join_thread()  # the feeder has sent everything: its send_bytes calls are behind us
    assert sorted(journal.phases()) == [PHASES["put"]] * 3 + [PHASES["get"]] * 3


def test_a_put_on_a_full_queue_is_timed_as_the_producers_wait(journal):
    q = multiprocessing.Queue(maxsize=1)
    q.put("first")

    def consume():
        time.sleep(0.3)
        q.get(timeout=5)

    consumer = threading.Thread(target=consume)
    consumer.start()
    q.put("second")  # blocks until the consumer takes the first
    consumer.join()
    waits = journal.durations("put")
    assert len(waits) == 2 and max(waits) >= 0.25 > min(waits)
    assert len(journal.durations("get")) == 1


def test_simple_and_joinable_queues_and_pipes_are_hooked_once_per_call(journal):
    simple = multiprocessing.SimpleQueue()
    simple.put(b"x")  # its send_bytes inside is multiprocessing's own: not a second put
    assert simple.get() == b"x"
    joinable = multiprocessing.JoinableQueue()
    joinable.put(1)
    assert joinable.get(timeout=5) == 1
    joinable.task_done()
    reader, writer = multiprocessing.Pipe(duplex=False)
    writer.send_bytes(b"12345")
    assert reader.recv_bytes() == b"12345"
    writer.send({"a": 1})
    assert reader.recv() == {"a": 1}
    joinable.close()
    joinable.join_thread()
    assert sorted(journal.phases()) == [PHASES["put"]] * 4 + [PHASES["get"]] * 4
    sizes = sorted(r[8] for r in journal.records)
    assert sizes.count(5) == 2  # send_bytes and recv_bytes know their size; the others do not


def test_a_spec_hook_around_the_put_times_it_once(journal):
    q = multiprocessing.Queue()

    def _put(item):
        q.put(item)

    spec_put = calls.timed(_put, calls.Hook("t:_put=put", PHASES["put"], calls.describe_args))
    spec_put("x")
    assert q.get(timeout=5) == "x"
    q.close()
    q.join_thread()
    assert journal.phases().count(PHASES["put"]) == 1


def test_calls_from_multiprocessing_code_are_not_the_targets():
    here = {"__name__": "multiprocessing.pool"}
    assert eval("queues.from_target(())", {"queues": queues, **here}) is False
    assert eval("queues.from_target(())", {"queues": queues, "__name__": "my_writer"}) is True
    assert eval("queues.from_target(())", {"queues": queues, "__name__": "multiprocessing_helpers"}) is True
    assert eval("queues.from_target(())", {"queues": queues, "__name__": "concurrent.futures.process"}) is False


def test_a_class_without_the_method_is_reported_unavailable():
    class Module:
        class Queue:
            pass

    status, reason = queues.apply_one(Module, "Queue", "put", "put", queues._describe_none, "m:Queue.put=put")
    assert status == "unavailable" and "Queue.put" in reason
