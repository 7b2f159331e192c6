"""A producer whose fill no spec names, as a benchmark's entry script has it:
its imports run wherever it was started (`taskset -c CPU python
placed_fill.py ...`: on that CPU's node), then it binds every thread of it
to FILL_CPU, as a rank bound after its start-up is. Each of SAVES saves:
BUFFERS shared-memory buffers of CHUNK bytes, first touched by its own fill
or, with --touch-cpu, from a thread pinned there; one forked writer, pinned
to WRITER_CPU, that attaches them, writes each chunk it gets from a
multiprocessing queue to OUT, fsyncs and closes. Standard library only; the
probe times the puts, gets and writes, not the fill (its generation is
inferred between hand-offs).

    python placed_fill.py FILL_CPU WRITER_CPU OUT [--touch-cpu CPU]
"""

import argparse
import multiprocessing
import os
import threading
from multiprocessing import shared_memory

# The entry script's start-up: real imports, as a benchmark's script makes them.
import asyncio  # noqa: F401
import decimal  # noqa: F401
import email.mime.multipart  # noqa: F401
import http.server  # noqa: F401
import logging.handlers  # noqa: F401
import pydoc  # noqa: F401
import sqlite3  # noqa: F401
import tarfile  # noqa: F401
import unittest  # noqa: F401
import xml.dom.minidom  # noqa: F401
import zipfile  # noqa: F401

SAVES = 2
BUFFERS = 4
CHUNK = 2 << 20
PAGE = 4096


def bind(cpu):
    """Every thread of this process to cpu (os.sched_setaffinity(0) moves only the calling one)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), {cpu})
        except ProcessLookupError:  # ended meanwhile
            pass


def touch(buffers, cpu):
    """One byte a page from a thread on cpu: under first touch, its node gets the pages."""
    def run():
        os.sched_setaffinity(0, {cpu})  # this thread only
        for buffer in buffers:
            buffer.buf[::PAGE] = bytes(len(range(0, buffer.size, PAGE)))

    toucher = threading.Thread(target=run, name="toucher")
    toucher.start()
    toucher.join()


def write(names, chunks, cpu, path):
    os.sched_setaffinity(0, {cpu})
    buffers = [shared_memory.SharedMemory(name=name) for name in names]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for index in iter(chunks.get, None):
            os.write(fd, buffers[index].buf)
        os.fsync(fd)
    finally:
        os.close(fd)
        for buffer in buffers:
            buffer.close()


def save(number, writer_cpu, touch_cpu, path):
    buffers = [shared_memory.SharedMemory(create=True, size=CHUNK) for _ in range(BUFFERS)]
    try:
        if touch_cpu is not None:
            touch(buffers, touch_cpu)
        ctx = multiprocessing.get_context("fork")
        chunks = ctx.Queue(BUFFERS)
        writer = ctx.Process(target=write, args=([b.name for b in buffers], chunks, writer_cpu, path))
        writer.start()
        for index, buffer in enumerate(buffers):
            buffer.buf[:] = bytes([number * BUFFERS + index + 1]) * CHUNK  # the fill
            chunks.put(index)
        chunks.put(None)
        writer.join()
        chunks.close()
        return writer.exitcode
    finally:
        for buffer in buffers:
            buffer.close()
            buffer.unlink()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("fill_cpu", type=int)
    parser.add_argument("writer_cpu", type=int)
    parser.add_argument("out")
    parser.add_argument("--touch-cpu", type=int)
    args = parser.parse_args()
    bind(args.fill_cpu)
    status = 0
    for number in range(SAVES):
        status = status or save(number, args.writer_cpu, args.touch_cpu, args.out)
        os.unlink(args.out)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
