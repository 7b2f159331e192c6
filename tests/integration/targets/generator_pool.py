"""A rank's checkpoint saves whose data generator is a thread pool sized from
a rank count in the environment, as the benchmark's was (mlcommons/storage
#689: from the global rank count, where the fix, #702, takes the local one):

    python generator_pool.py SIZE_VAR DIR [--storage-bound]

The pool has len(os.sched_getaffinity(0)) // $SIZE_VAR threads (at least
one), each filling 1 MiB pieces of a chunk with numpy's normal draws
(float32, as weights are initialised: CPU-bound; numpy releases the GIL
while it draws). Per save the producer fills a ring of shared-memory
buffers and queues them; one forked writer attaches them by name and
writes each chunk into DIR/checkpoint.bin, overwritten in place: its pages
are laid down once first, through a mapping of another name that is then
renamed (no write, no open of the checkpoint: not part of a save), and stay
cached, so that every save's writes cost a copy, steadily faster than the
pool (a fresh page cache page costs a VM's host a fault: a first save would
write at a tenth of the speed). With
--storage-bound the pool draws PCG64's raw output instead (a fraction of
the cost) and every write is synchronous (O_DSYNC): the disk sets the pace,
not the pool. Run as a script it imports itself, so that
`--probe generator_pool:fill=gen` times the fill as the producer's
generation."""

import mmap
import multiprocessing
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import shared_memory

import numpy as np

CHUNK = 8 << 20
CHUNKS = 16  # a save: 128 MiB
SAVES = 4
BUFFERS = 4
PIECE = 1 << 20


def _normal(buffer, chunk: int, start: int) -> None:
    out = np.frombuffer(buffer.buf, dtype=np.float32, count=PIECE // 4, offset=start)
    np.random.default_rng([chunk, start]).standard_normal(out=out, dtype=np.float32)


def _raw(buffer, chunk: int, start: int) -> None:
    out = np.frombuffer(buffer.buf, dtype=np.uint64, count=PIECE // 8, offset=start)
    out[:] = np.random.PCG64([chunk, start]).random_raw(PIECE // 8)


def fill(pool, draw, buffer, chunk: int) -> None:
    """The pool fills the buffer; this thread only waits for it."""
    for done in [pool.submit(draw, buffer, chunk, start) for start in range(0, CHUNK, PIECE)]:
        done.result()


def write(names, chunks, path, flags) -> None:
    buffers = [shared_memory.SharedMemory(name=name) for name in names]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | flags, 0o644)
    try:
        while (index := chunks.get()) is not None:
            os.write(fd, buffers[index].buf[:CHUNK])
    finally:
        os.close(fd)
        for buffer in buffers:
            buffer.close()


def lay_down(path: str) -> None:
    """The checkpoint file, its pages in the page cache, written through a mapping."""
    fd = os.open(path + ".new", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.ftruncate(fd, CHUNK * CHUNKS)
        with mmap.mmap(fd, CHUNK * CHUNKS) as mapped:
            for start in range(0, CHUNK * CHUNKS, mmap.PAGESIZE):
                mapped[start] = 1
    finally:
        os.close(fd)
    os.rename(path + ".new", path)


def main(argv) -> int:
    size_var, directory = argv[0], argv[1]
    storage_bound = "--storage-bound" in argv[2:]
    draw, flags = (_raw, os.O_DSYNC) if storage_bound else (_normal, 0)
    threads = max(1, len(os.sched_getaffinity(0)) // int(os.environ[size_var]))
    print(f"generator pool: {threads} threads ({len(os.sched_getaffinity(0))} CPUs // ${size_var})")
    context = multiprocessing.get_context("fork")
    path = os.path.join(directory, "checkpoint.bin")
    lay_down(path)
    buffers = [shared_memory.SharedMemory(create=True, size=CHUNK) for _ in range(BUFFERS)]
    try:
        with ThreadPoolExecutor(threads, "generator") as pool:
            for save in range(SAVES):
                chunks = context.Queue(BUFFERS)
                writer = context.Process(target=write, args=([b.name for b in buffers], chunks, path, flags))
                writer.start()
                for chunk in range(CHUNKS):
                    fill(pool, draw, buffers[chunk % BUFFERS], save * CHUNKS + chunk)
                    chunks.put(chunk % BUFFERS)
                chunks.put(None)
                writer.join()
                if writer.exitcode:
                    return 1
    finally:
        for buffer in buffers:
            buffer.close()
            buffer.unlink()
        os.unlink(path)
    return 0


if __name__ == "__main__":
    import generator_pool  # this file as a module: its fill is what a --probe spec names

    sys.exit(generator_pool.main(sys.argv[1:]))
