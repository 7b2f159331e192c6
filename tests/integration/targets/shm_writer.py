"""A standard-library-only writer target: one shared-memory buffer, one
writer child under the start method given as argv[1] that os.writes it
CHUNKS times to argv[2] and fsyncs. Needs no writerprof in its interpreter."""

import multiprocessing
import os
import sys
from multiprocessing import shared_memory

CHUNKS = 4
CHUNK = 1 << 20


def write(name, path):
    buffer = shared_memory.SharedMemory(name=name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(CHUNKS):
        os.write(fd, buffer.buf[:CHUNK])
    os.fsync(fd)
    os.close(fd)
    buffer.close()


if __name__ == "__main__":
    method, path = sys.argv[1], sys.argv[2]
    buffer = shared_memory.SharedMemory(create=True, size=CHUNK)
    try:
        buffer.buf[:] = b"w" * CHUNK
        writer = multiprocessing.get_context(method).Process(target=write, args=(buffer.name, path))
        writer.start()
        writer.join()
    finally:
        buffer.close()
        buffer.unlink()
    print("writer exit", writer.exitcode)
    sys.exit(writer.exitcode)
