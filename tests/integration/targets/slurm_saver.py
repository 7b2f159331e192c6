"""A checkpointing rank for the Slurm tests: SAVES saves into DIR, each by a
fork writer child that writes CHUNKS chunks of 1 MiB from a shared-memory
buffer (PAUSE s between chunks, so that a cut lands mid-save), fsyncs and
closes; after each, the rank prints "saved RANK N" (the target's own count of its
saves). Standard library only.

    python slurm_saver.py DIR SAVES [CHUNKS] [PAUSE] [--ignore-term] [--on-usr1]

--ignore-term: every process ignores SIGTERM (a job that must be SIGKILLed
after Slurm's KillWait). --on-usr1: the rank prints "usr1" on SIGUSR1 and
goes on (the usual checkpoint-before-the-limit signal)."""

import multiprocessing
import os
import signal
import sys
import time
from multiprocessing import shared_memory

CHUNK = 1 << 20
SEGMENT_PREFIX = "wp-slurm-"


def write(name, path, chunks, pause):
    buffer = shared_memory.SharedMemory(name=name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for _ in range(chunks):
        os.write(fd, buffer.buf[:CHUNK])
        time.sleep(pause)
    os.fsync(fd)
    os.close(fd)
    buffer.close()


def main():
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    directory, saves = args[0], int(args[1])
    chunks = int(args[2]) if len(args) > 2 else 8
    pause = float(args[3]) if len(args) > 3 else 0.05
    if "--ignore-term" in flags:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--on-usr1" in flags:
        signal.signal(signal.SIGUSR1, lambda *_: print("usr1", flush=True))
    rank = os.environ.get("SLURM_PROCID", "0")
    # Named, so that a test can remove what a SIGKILLed job leaves in /dev/shm.
    buffer = shared_memory.SharedMemory(name="%s%s-%s-%d" % (SEGMENT_PREFIX, os.environ.get("SLURM_JOB_ID", "-"),
                                                             rank, os.getpid()), create=True, size=CHUNK)
    try:
        buffer.buf[:] = b"c" * CHUNK
        for n in range(saves):
            path = os.path.join(directory, "ckpt-r%s-%d" % (rank, n))
            writer = multiprocessing.get_context("fork").Process(
                target=write, args=(buffer.name, path, chunks, pause))
            writer.start()
            writer.join()
            if writer.exitcode != 0:
                sys.exit(1)
            print("saved", rank, n + 1, flush=True)
    finally:
        buffer.close()
        buffer.unlink()


if __name__ == "__main__":
    main()
