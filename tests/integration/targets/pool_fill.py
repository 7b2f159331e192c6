"""A producer whose buffer is filled by a pool of threads, not by the thread
that calls the fill: the main thread pins itself to CPU 0 and blocks on a
queue while POOL threads, each pinned (sched_setaffinity on its native id)
to FILL_CPU and named fill-N (prctl, as a native pool names its threads),
copy into the buffer PASSES times. Then one forked writer, pinned to
WRITER_CPU, attaches the buffer and writes it to OUT with an fsync.

    python pool_fill.py FILL_CPU WRITER_CPU SIZE_MIB OUT [--pretouch]

--pretouch: the main thread touches every page first (from CPU 0), so the
buffer's pages are on CPU 0's node whatever the pool's. Standard library
only. Run as a script it imports itself, so that `--probe pool_fill:fill=gen`
can time the fill as the producer's generation."""

import ctypes
import multiprocessing
import os
import queue
import sys
import threading
from multiprocessing import shared_memory

POOL = 4
PASSES = 6
PR_SET_NAME = 15


def _name_thread(name: str) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, name.encode(), 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the kernel keeps the process's name


def _fill_slice(buffer, start, end, cpu, number, done):
    os.sched_setaffinity(threading.get_native_id(), {cpu})
    _name_thread(f"fill-{number}")
    block = bytes([number + 1]) * (end - start)
    for _ in range(PASSES):
        buffer.buf[start:end] = block
    done.put(number)


def fill(buffer, cpu):
    """The pool fills the buffer; this thread only waits for it."""
    done = queue.Queue()
    step = buffer.size // POOL
    for number in range(POOL):
        threading.Thread(target=_fill_slice, name=f"fill-{number}", daemon=True,
                         args=(buffer, number * step, (number + 1) * step, cpu, number, done)).start()
    for _ in range(POOL):
        done.get()


def write(name, cpu, path):
    os.sched_setaffinity(0, {cpu})
    buffer = shared_memory.SharedMemory(name=name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = buffer.buf
        for start in range(0, buffer.size, 8 << 20):
            os.write(fd, view[start:start + (8 << 20)])
        os.fsync(fd)
    finally:
        os.close(fd)
        view.release()
        buffer.close()


def main(argv):
    fill_cpu, writer_cpu, size_mib, out = int(argv[0]), int(argv[1]), int(argv[2]), argv[3]
    os.sched_setaffinity(0, {0})  # the main thread: CPU 0, whatever the pool's
    buffer = shared_memory.SharedMemory(create=True, size=size_mib << 20)
    try:
        if "--pretouch" in argv:
            buffer.buf[:] = bytes(buffer.size)
        fill(buffer, fill_cpu)
        writer = multiprocessing.get_context("fork").Process(target=write, args=(buffer.name, writer_cpu, out))
        writer.start()
        writer.join()
    finally:
        buffer.close()
        buffer.unlink()
    os.unlink(out)
    print("writer exit", writer.exitcode)
    return writer.exitcode


if __name__ == "__main__":
    import pool_fill  # this file as a module: its fill is what a --probe spec names

    sys.exit(pool_fill.main(sys.argv[1:]))
