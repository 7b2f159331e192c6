"""The file writer, as the benchmark's is shaped: write_chunk writes one
chunk from a shared-memory buffer, close flushes with os.fsync and closes.
WRITE_HOLD_S stands for a slow device, so that the producer fills the queue."""

import os
import time

WRITE_HOLD_S = 0.1


class FileStorageWriter:
    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.fsync_s = None
        # A header first (the real writer has none): this process's first timed call, it takes
        # the probe's one-time set-up out of the waits the tests compare.
        os.write(self.fd, b"\0" * 4096)

    def write_chunk(self, buffer, size):
        written = os.write(self.fd, buffer[:size])
        time.sleep(WRITE_HOLD_S)
        return written

    def close(self):
        t0 = time.monotonic()
        os.fsync(self.fd)
        self.fsync_s = time.monotonic() - t0
        os.close(self.fd)
        return {"fsync_s": self.fsync_s}
