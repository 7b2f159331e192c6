"""One multiprocessing.Process per task, each given a large argument, as a
program hands each worker its shard of data: TASKS children, started and
joined one after another, each passed 48 MiB of bytes that it checksums and
checks. The entry script is light (nothing is imported at module level), so
forkserver's own start-up (its daemon, the re-run of this short file) adds
some tens of milliseconds in all; the difference is the argument: with fork
the child inherits it, with forkserver or spawn the parent pickles the
Process object, argument and all, down a pipe and the child unpickles it,
~0.15 s a task here. Chooses no start method:
`WRITERPROF_FORCE_START_METHOD` picks it.

    python process_big_args.py

Exits non-zero if a child found its shard changed. Prints `elapsed S s`, the
seconds from the first child's start to the last one's exit."""

TASKS = 6
SHARD_BYTES = 48 << 20


def check_shard(shard, expected):
    import sys
    import zlib

    sys.exit(0 if zlib.crc32(shard) == expected else 1)


if __name__ == "__main__":
    import multiprocessing
    import sys
    import time
    import zlib

    started = time.perf_counter()
    failed = 0
    for task in range(TASKS):
        shard = bytes([task]) * SHARD_BYTES
        child = multiprocessing.Process(target=check_shard, args=(shard, zlib.crc32(shard)))
        child.start()
        child.join()
        failed += child.exitcode != 0
    elapsed = time.perf_counter() - started
    print("failed", failed)
    print("elapsed %.3f s" % elapsed)
    sys.exit(1 if failed else 0)
