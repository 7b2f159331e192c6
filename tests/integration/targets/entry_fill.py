"""A fill defined in the entry script (no spec can name it before it runs),
called 5 times here and 3 times in a child started with METHOD (where the
script is re-run as __mp_main__ under spawn and forkserver). Prints the
seconds of its own calls in each, as JSON."""

import json
import multiprocessing
import sys
import time


def fill(n):
    t = time.monotonic()
    sum(range(n))
    return time.monotonic() - t


def child(results):
    results.put(sum(fill(300000) for _ in range(3)))


if __name__ == "__main__":
    here = sum(fill(300000) for _ in range(5))
    ctx = multiprocessing.get_context(sys.argv[1])
    results = ctx.Queue()
    worker = ctx.Process(target=child, args=(results,))
    worker.start()
    there = results.get()
    worker.join()
    print(json.dumps({"parent_s": here, "child_s": there, "child_pid": worker.pid}))
