"""A forkserver checkpoint writer done right: run as a package
(`python -m preloaded DIR SAVES [CHUNKS]`, so that no child re-runs the
entry script: CPython skips a `__main__` named PKG.__main__), the writer's
module preloaded into the forkserver (set_forkserver_preload), each save a
writer child that writes CHUNKS chunks of 4 MiB from a shared-memory buffer
the producer filled, then fsyncs. Standard library only."""

import multiprocessing
import os
import sys
from multiprocessing import shared_memory

CHUNK = 4 << 20


def write(name, path, chunks):
    buffer = shared_memory.SharedMemory(name=name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(chunks):
        os.write(fd, buffer.buf[:CHUNK])
    os.fsync(fd)
    os.close(fd)
    buffer.close()


def main(directory, saves, chunks):
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["preloaded"])
    buffer = shared_memory.SharedMemory(create=True, size=CHUNK)
    try:
        buffer.buf[:] = os.urandom(CHUNK)
        for n in range(saves):
            writer = context.Process(target=write, args=(buffer.name, os.path.join(directory, "ckpt-%d" % n),
                                                         chunks))
            writer.start()
            writer.join()
            if writer.exitcode:
                sys.exit(writer.exitcode)
    finally:
        buffer.close()
        buffer.unlink()
