"""The storage class of foreign_writer.py, in a module of its own so that a
test can name it in a --probe spec (MODULE:QUALNAME) the way a user names
their own writer's close. Its close flushes with os.fsync, as the
benchmark's file writer does, and then takes a while of its own."""

import os
import time

CLOSE_TAIL_S = 0.05  # close's own time after the flush
HEADER = b"LEDGER01" * 512


class Ledger:
    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.fsync_s = None
        # The file's header, before any chunk. Being this process's first timed call, it also
        # takes the probe's one-time set-up (its first record), which the waits timed below
        # would otherwise include and the probe's own timing of them rightly would not.
        os.write(self.fd, HEADER)

    def append(self, view, hold_s):
        written = os.write(self.fd, view)
        time.sleep(hold_s)  # a slow device: the producer fills the queue meanwhile
        return written

    def close(self):
        t0 = time.monotonic()
        os.fsync(self.fd)
        self.fsync_s = time.monotonic() - t0
        time.sleep(CLOSE_TAIL_S)
        os.close(self.fd)
