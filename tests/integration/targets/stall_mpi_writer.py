"""Each MPI rank saves one checkpoint file through a writer child fed by a
queue, then meets the others at a barrier. Rank 1 forgets the end marker:
its writer waits on the queue for ever, and the rank for its writer in join;
rank 0 waits at the barrier. mpi4py and the standard library.

    mpiexec -n 2 python stall_mpi_writer.py DIR
"""

import multiprocessing
import os
import sys

from mpi4py import MPI

CHUNK = b"c" * (1 << 20)


def write(queue, path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    while True:
        chunk = queue.get()
        if chunk is None:
            break
        os.write(fd, chunk)
    os.fsync(fd)
    os.close(fd)


if __name__ == "__main__":
    rank = MPI.COMM_WORLD.Get_rank()
    ctx = multiprocessing.get_context("fork")  # (spawn's children would re-run this and MPI_Init)
    queue = ctx.Queue(2)
    writer = ctx.Process(target=write, args=(queue, os.path.join(sys.argv[1], "ckpt-%d" % rank)))
    writer.start()
    for _ in range(4 if rank == 0 else 2):
        queue.put(CHUNK)
    if rank == 0:
        queue.put(None)
    writer.join()
    MPI.COMM_WORLD.Barrier()
