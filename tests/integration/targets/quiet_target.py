"""What a target may expect of its own signals and fds, recorded or not:

  sigwait   block SIGUSR1, send it to itself (as Slurm's --signal=USR1@N
            does), collect it with sigwait: delivered to no other thread
  closed    close every low fd, fork (the probe journals it), then write to
            fd 0 and fd 1: both EBADF, nothing of theirs reused by the probe

Writes what happened to OUT (opened last) and exits 0."""

import errno
import os
import signal
import sys
import time

mode, out = sys.argv[1], sys.argv[2]
if mode == "sigwait":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    time.sleep(0.3)  # the probe's threads are up
    os.kill(os.getpid(), signal.SIGUSR1)
    got = signal.sigwait({signal.SIGUSR1})
    result = "sigwait %d" % got
else:
    os.closerange(0, 1024)
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    outcomes = []
    for fd in (0, 1):
        try:
            os.write(fd, b"x")
            outcomes.append("wrote")
        except OSError as exc:
            outcomes.append(errno.errorcode[exc.errno])
    result = " ".join(outcomes)
with open(out, "w") as f:
    f.write(result)
