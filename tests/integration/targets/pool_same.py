"""A multiprocessing.Pool whose start method makes no difference to its wall
time: the program starts its pool of two workers while a thread fetches its
input (a 2 s wait, as a download's; the thread holds no lock a forked
worker could need), so whatever the workers' start-up costs (forkserver's
daemon, the re-run of this light file, each worker's unpickling; spawn's
interpreters) is over before the input is there. Then the workers run a few
CPU-bound tasks (~1 s of CPU in all) whose small arguments and results cost
nothing to pickle. Started in sequence, forkserver's start-up alone (some
tens of milliseconds here) would show against a calm machine's spread;
overlapped, no start method costs anything that can be measured. Chooses no
start method: `WRITERPROF_FORCE_START_METHOD` picks it.

    python pool_same.py

Prints the map's result and `elapsed S s`, the seconds from the fetch's and
the pool's start to the workers' exit."""

import time

TASKS = 8
ROUNDS = 2_500_000
# (Not 0.4 s, nor 1 s: on 2 CPUs shared with other work, a slow VM's forkserver daemon and workers
# took longer to start, and forkserver was then slower in both of a test's contrasts.)
FETCH_SECONDS = 2.0


def fetch_input(into):
    time.sleep(FETCH_SECONDS)
    into.extend(ROUNDS + i for i in range(TASKS))


def square_sum(n):
    return sum(i * i for i in range(n))


if __name__ == "__main__":
    import multiprocessing
    import threading

    started = time.perf_counter()
    inputs = []
    fetch = threading.Thread(target=fetch_input, args=(inputs,))
    fetch.start()
    pool = multiprocessing.Pool(2)
    fetch.join()
    results = pool.map(square_sum, inputs, chunksize=1)
    pool.close()
    pool.join()
    elapsed = time.perf_counter() - started
    print("sum", sum(results))
    print("elapsed %.3f s" % elapsed)
