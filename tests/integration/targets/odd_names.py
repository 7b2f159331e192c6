"""A producer whose names are not UTF-8: it is run with an argument of
non-UTF-8 bytes (Python gives them as surrogates), names its writer process
and a thread after it, and the writer writes a chunk from a shared-memory
buffer, as the reproducer's writers do."""

import multiprocessing
import os
import sys
import tempfile
import threading
import time
from multiprocessing import shared_memory

LABEL = sys.argv[1]  # e.g. "caf\udce9", from b"caf\xe9"


def write(name, path):
    threading.current_thread().name = f"writer {LABEL}"
    buffer = shared_memory.SharedMemory(name=name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, buffer.buf[: 1 << 20])
    os.fsync(fd)
    os.close(fd)
    buffer.close()
    time.sleep(0.5)  # long enough for py-spy to take the writer's stacks, under its thread's name


if __name__ == "__main__":
    buffer = shared_memory.SharedMemory(create=True, size=1 << 20)
    buffer.buf[:] = b"x" * (1 << 20)
    with tempfile.TemporaryDirectory() as directory:
        worker = threading.Thread(name=f"helper {LABEL}", target=lambda: None)
        worker.start()
        worker.join()
        writer = multiprocessing.get_context("fork").Process(
            target=write, args=(buffer.name, os.path.join(directory, "chunk")), name=f"writer-{LABEL}")
        writer.start()
        writer.join()
    buffer.close()
    buffer.unlink()
    sys.exit(writer.exitcode)
