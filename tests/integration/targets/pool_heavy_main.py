"""A multiprocessing.Pool map whose entry script is heavy at module level, as
a service's or a notebook-turned-script's is: it imports a stack of costly
standard-library packages (asyncio, an HTTP client and server, XML-RPC, email,
unittest.mock) and slow_import, which stands in for a numpy- or pandas-sized
library (numpy is not on every Python pyenv has here, and its ~0.05 s import
alone would be lost in a shared machine's spread), then builds a table before
its `if __name__` guard. The tasks use none of it.

With fork the two workers inherit all of it. With forkserver (3.9-3.13: the
daemon is given no main path to preload) and spawn, each worker re-runs this
file before its first task, ~0.35 s here on 3.11, the two side by side; the
tasks, pickled to the workers through the pool's pipes with either method,
cost the same. Chooses no start method: `WRITERPROF_FORCE_START_METHOD`
picks it.

    python pool_heavy_main.py

Prints the map's result and `elapsed S s`, the seconds from the pool's
creation to its workers' exit."""

import asyncio  # noqa: F401  (the module-level imports every re-run repeats)
import email.mime.multipart  # noqa: F401
import http.server  # noqa: F401
import multiprocessing
import time
import unittest.mock  # noqa: F401
import urllib.request  # noqa: F401
import xmlrpc.server  # noqa: F401

import slow_import  # noqa: F401

TASKS = 36


def sieve(limit):
    flags = [True] * (limit + 1)
    primes = []
    for n in range(2, limit + 1):
        if flags[n]:
            primes.append(n)
            for m in range(n * n, limit + 1, n):
                flags[m] = False
    return primes


# The table a script builds before its `if __name__` guard (~0.15 s here):
# every re-run builds it again.
PRIMES = sieve(2_000_000)


def square_sum(n):
    return sum(i * i for i in range(n))


if __name__ == "__main__":
    started = time.perf_counter()
    pool = multiprocessing.Pool(2)
    results = pool.map(square_sum, [2000 + i for i in range(TASKS)])
    pool.close()
    pool.join()
    elapsed = time.perf_counter() - started
    print("sum", sum(results))
    print("elapsed %.3f s" % elapsed)
