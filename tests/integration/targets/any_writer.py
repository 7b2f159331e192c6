"""Checkpoint writers of the shapes real code has, none of them the
reproducer's: each writes --files files of --size bytes with fsync, times
its own write and fsync calls, and prints them as one JSON line per file.

  buffered  a writer child per file: open(p, "wb").write(chunk) ...
  tofile    a writer child per file: numpy's ndarray.tofile (C stdio)
  pwritev   a writer child per file: os.pwritev of two chunks at a time
  pool      a ProcessPoolExecutor (--method) of two workers, a task per file
  thread    a thread of this process writes the files it is handed
  self      this process writes its own files (as a rank's torch.save does)
"""

import argparse
import concurrent.futures
import json
import multiprocessing
import os
import queue
import threading
import time

import numpy as np

CHUNK = 4 << 20


def _chunks(size):
    data = np.random.default_rng(1).integers(0, 255, size=CHUNK, dtype=np.uint8)
    left = size
    while left > 0:
        yield data[:min(CHUNK, left)]
        left -= CHUNK


def _timed(calls):
    """Seconds spent in each call of the iterable (made when it is consumed)."""
    spent = 0.0
    for call in calls:
        t = time.perf_counter()
        call()
        spent += time.perf_counter() - t
    return spent


def _fsync_s(fd, flush=None):
    t = time.perf_counter()
    if flush is not None:
        flush()  # (a large write goes straight through: nothing is left to flush)
    os.fsync(fd)
    return time.perf_counter() - t


def write_file(mode, path, size):
    """Write one file the way `mode` does; the seconds of its own write and fsync calls."""
    if mode == "pwritev":
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            parts = list(_chunks(size))
            pairs = [(parts[i:i + 2], i * CHUNK) for i in range(0, len(parts), 2)]
            write_s = _timed(lambda pair=pair, at=at: os.pwritev(fd, pair, at) for pair, at in pairs)
            fsync_s = _fsync_s(fd)
        finally:
            os.close(fd)
    else:  # a Python file object: numpy's tofile (C stdio on a dup of its fd), or its own write
        with open(path, "wb") as f:
            write = (lambda chunk: chunk.tofile(f)) if mode == "tofile" else f.write
            write_s = _timed(lambda chunk=chunk: write(chunk) for chunk in _chunks(size))
            fsync_s = _fsync_s(f.fileno(), f.flush)
    return {"path": os.path.abspath(path), "bytes": size, "write_s": write_s, "fsync_s": fsync_s, "pid": os.getpid()}


def _child(mode, path, size, results):
    results.put(write_file(mode, path, size))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("buffered", "tofile", "pwritev", "pool", "thread", "self"))
    parser.add_argument("out")
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--size", type=int, default=16 << 20)
    parser.add_argument("--method", default="forkserver")
    args = parser.parse_args()
    paths = [os.path.join(args.out, f"ckpt-{i}.bin") for i in range(args.files)]
    done = []
    if args.mode in ("buffered", "tofile", "pwritev"):
        ctx = multiprocessing.get_context(args.method)
        results = ctx.Queue()
        for path in paths:
            p = ctx.Process(target=_child, args=(args.mode, path, args.size, results))
            p.start()
            done.append(results.get())
            p.join()
    elif args.mode == "pool":
        ctx = multiprocessing.get_context(args.method)
        with concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx) as pool:
            done = list(pool.map(write_file, ["buffered"] * len(paths), paths, [args.size] * len(paths)))
    elif args.mode == "thread":
        todo, results = queue.Queue(), []

        def writer():
            while (path := todo.get()) is not None:
                results.append(write_file("buffered", path, args.size))

        thread = threading.Thread(target=writer, name="async-writer")
        thread.start()
        for path in paths:
            todo.put(path)
        todo.put(None)
        thread.join()
        done = results
    else:
        done = [write_file("buffered", path, args.size) for path in paths]
    for line in done:
        print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main()
