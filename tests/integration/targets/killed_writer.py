"""Writes 600 chunks to argv[1], then dies of SIGKILL: nothing after the last
flushed batch of the probe's journal can survive that."""

import os
import signal
import sys

fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for _ in range(600):
    os.write(fd, b"x" * 4096)
os.kill(os.getpid(), signal.SIGKILL)
