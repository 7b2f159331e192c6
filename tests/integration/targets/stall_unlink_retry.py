"""A livelock as after the benchmark's checkpoint 1 at scale (mlcommons/storage
#777): WORKERS processes retry an unlink of a semaphore that is gone, each
polling between tries on a CPU, until STOP exists; the parent waits for them.
No file is written meanwhile. Standard library only.

    python stall_unlink_retry.py STOP WORKERS
"""

import multiprocessing
import os
import sys
import time
from multiprocessing import synchronize


def retry(stop, n):
    name = "/writerprof-test-gone-%d-%d" % (os.getppid(), n)
    while not os.path.exists(stop):
        try:
            synchronize.sem_unlink(name)
        except FileNotFoundError:
            pass
        until = time.monotonic() + 0.001
        while time.monotonic() < until:  # poll again at once: on a CPU, never parked
            pass


if __name__ == "__main__":
    stop, workers = sys.argv[1], int(sys.argv[2])
    ctx = multiprocessing.get_context("fork")
    started = [ctx.Process(target=retry, args=(stop, n)) for n in range(workers)]
    for p in started:
        p.start()
    for p in started:
        p.join()
