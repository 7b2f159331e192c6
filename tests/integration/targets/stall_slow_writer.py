"""A save that is slow but makes progress: SETUP seconds of set-up that
writes nothing (imports, a model built), then WRITES writes of 64 KiB to
PATH, PAUSE seconds apart, then fsync. Standard library only.

    python stall_slow_writer.py PATH WRITES PAUSE SETUP
"""

import os
import sys
import time

if __name__ == "__main__":
    path, writes, pause, setup = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
    time.sleep(setup)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(writes):
        os.write(fd, b"s" * (64 << 10))
        time.sleep(pause)
    os.fsync(fd)
    os.close(fd)
