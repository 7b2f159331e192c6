"""A rank that saves SAVES checkpoint files of CHUNKS chunks of 1 MiB into
DIR, each written, fsynced and closed by WHO ("own": this process, as a
rank's torch.save; "child": a fork writer child per file, as the benchmark),
then prints "saved N", its own count. In save HOLD (from 1; 0: none) it
prints "holding" and waits to be killed where WHERE says: "mid" with half
the file written, "closed" with the file closed (and its writer child
exited) before the save is counted. Standard library only.

    python held_save.py DIR SAVES CHUNKS WHO HOLD WHERE
"""

import multiprocessing
import os
import sys
import time

CHUNK = b"c" * (1 << 20)


def hold():
    print("holding", flush=True)
    while True:
        time.sleep(3600)


def write(path, chunks, hold_mid):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for i in range(chunks):
        if hold_mid and i == chunks // 2:
            hold()
        os.write(fd, CHUNK)
    os.fsync(fd)
    os.close(fd)


def main():
    directory, saves, chunks, who, held, where = sys.argv[1:7]
    for n in range(1, int(saves) + 1):
        path = os.path.join(directory, "ckpt-%d" % n)
        hold_mid = n == int(held) and where == "mid"
        if who == "own":
            write(path, int(chunks), hold_mid)
        else:
            writer = multiprocessing.get_context("fork").Process(target=write, args=(path, int(chunks), hold_mid))
            writer.start()
            writer.join()
        if n == int(held) and where == "closed":
            hold()
        print("saved %d" % n, flush=True)


if __name__ == "__main__":
    main()
