"""A save that deadlocks as fork with live threads does (mlcommons/storage
#642): a thread holds a lock while the main thread forks a writer that needs
it; the child has the lock locked and no thread to release it, and blocks
forever, and the parent waits for it in join. Standard library only.

    python stall_fork_lock.py PATH
"""

import multiprocessing
import sys
import threading
import time

lock = threading.Lock()
held = threading.Event()


def hold():
    with lock:
        held.set()
        time.sleep(1.0)  # across the fork below


def save(path):
    with lock:  # copied locked into this child
        with open(path, "wb") as f:
            f.write(b"x" * (1 << 20))


if __name__ == "__main__":
    threading.Thread(target=hold, name="holder").start()
    held.wait()
    writer = multiprocessing.get_context("fork").Process(target=save, args=(sys.argv[1],))
    writer.start()
    writer.join()
