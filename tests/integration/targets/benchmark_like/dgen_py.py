"""A stand-in for dgen-py's Generator (a pure-Python class here, where the
real one is an extension type): fill_chunk fills a buffer from a pool of
threads, each its own slice, as the native generator's thread pool does.
FILL_HOLD_S stands for the generation's own time."""

import threading
import time

FILL_HOLD_S = 0.01


class Generator:
    def __init__(self, size, chunk_size, max_threads=4, **options):
        self.size, self.chunk_size, self.threads = size, chunk_size, max(1, max_threads)
        self.filled = 0

    def fill_chunk(self, buffer):
        n = len(buffer)
        step = -(-n // self.threads)
        value = self.filled % 251

        def fill(start):
            buffer[start:start + step] = bytes([value]) * len(buffer[start:start + step])

        pool = [threading.Thread(target=fill, args=(s,), name="dgen-fill") for s in range(0, n, step)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        time.sleep(FILL_HOLD_S)
        self.filled += 1
        return n
