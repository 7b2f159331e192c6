"""pool_heavy_main's map through concurrent.futures.ProcessPoolExecutor
instead of multiprocessing.Pool: the entry script imports pool_heavy_main
(its costly imports and module-level table) at module level, so with
forkserver or spawn each of the two workers re-runs this file, and that
import with it, before its first task; with fork they inherit it. The
executor is given no mp_context: it takes multiprocessing's default context,
which `WRITERPROF_FORCE_START_METHOD` sets.

    python executor_heavy_main.py

Prints the map's result and `elapsed S s`, the seconds from the executor's
creation to its workers' exit."""

import concurrent.futures
import time

from pool_heavy_main import TASKS, square_sum

if __name__ == "__main__":
    started = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as executor:
        results = list(executor.map(square_sum, [2000 + i for i in range(TASKS)]))
    elapsed = time.perf_counter() - started
    print("sum", sum(results))
    print("elapsed %.3f s" % elapsed)
