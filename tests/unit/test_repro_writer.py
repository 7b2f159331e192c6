"""The writer's watch on its producer: how it knows the producer is gone."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from writerprof.repro import writer


def _exited_child() -> int:
    """A child that has exited and is not reaped yet: a zombie, as a killed
    producer is until its parent waits for it."""
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
    return pid


def test_a_live_producer_is_alive():
    producer = writer.Producer(os.getpid())
    try:
        assert producer.alive() and producer.alive()
    finally:
        producer.close()


def test_an_exited_producer_is_gone_even_unreaped():
    pid = _exited_child()
    producer = writer.Producer(pid)
    try:
        assert producer.fd is not None  # the pidfd sees a zombie as ended; kill(pid, 0) would not
        assert not producer.alive()
    finally:
        producer.close()
        os.waitpid(pid, 0)


def test_a_reaped_producer_is_gone_without_a_pidfd(monkeypatch):
    pid = _exited_child()
    os.waitpid(pid, 0)
    monkeypatch.delattr(os, "pidfd_open")
    producer = writer.Producer(pid)
    assert producer.fd is None and not producer.alive()


def test_next_chunk_waits_while_the_producer_lives_and_stops_when_it_is_gone(monkeypatch):
    monkeypatch.setattr(writer, "PRODUCER_CHECK_S", 0.01)
    chunks = multiprocessing.get_context("fork").Queue()
    chunks.put((0, 4096))
    alive = writer.Producer(os.getpid())
    assert writer.next_chunk(chunks, alive) == (0, 4096)
    pid = _exited_child()
    gone = writer.Producer(pid)
    try:
        with pytest.raises(writer.ProducerGone, match=f"producer \\(pid {pid}\\) is gone"):
            writer.next_chunk(chunks, gone)
    finally:
        for producer in (alive, gone):
            producer.close()
        os.waitpid(pid, 0)
        chunks.close()
