"""An entry script whose writers' start-up is its own cost: its module level
imports slow_import (a heavy library's import), and the writers' target is
defined here, in __main__, as many scripts define it. Under forkserver and
spawn every writer re-runs this file, slow_import and all, before its
target; the target itself never uses slow_import.

  python heavy_main.py DIR SAVES

writes SAVES files of 8 MiB into DIR, a writer child each (forkserver unless
the probe forces another method), each file written in 1 MiB chunks and
fsynced; prints one line per file."""

import multiprocessing
import os
import sys

import slow_import  # noqa: F401  (the module-level import the writers re-run)

CHUNK = b"\xa5" * (1 << 20)


def write_file(path, chunks):
    with open(path, "wb") as f:
        for _ in range(chunks):
            f.write(CHUNK)
        f.flush()
        os.fsync(f.fileno())


if __name__ == "__main__":
    directory, saves = sys.argv[1], int(sys.argv[2])
    context = multiprocessing.get_context("forkserver")
    for i in range(saves):
        path = os.path.join(directory, "ckpt%d.bin" % i)
        writer = context.Process(target=write_file, args=(path, 8))
        writer.start()
        writer.join()
        print("saved", path, writer.exitcode, flush=True)
