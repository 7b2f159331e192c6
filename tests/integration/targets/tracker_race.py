"""A producer's shared-memory segments, attached by name by a writer, then
unlinked by the producer: the resource tracker's part in it
(test_resource_tracker.py).

    tracker_race.py producer HOW METHOD SEGMENTS

HOW is who attaches and how:
  child             a multiprocessing child (METHOD: fork, spawn, forkserver)
                    attaches each segment and exits: it shares the producer's
                    tracker, where its registration changes nothing
  child-unregister  the same child unregisters each segment after attaching
                    (mlcommons/storage#770's workaround): it removes the
                    producer's entry from their one tracker
  child-untracked   the same child attaches with track=False (3.13+)
  program           a separate Python program attaches each segment and exits:
                    its registration starts a tracker of its own, which
                    unlinks the segments when the program ends (bpo-39959)
  program-unregister  that program unregisters each segment after attaching
  program-untracked   that program attaches with track=False (3.13+)

The producer then closes and unlinks every segment, printing
"unlink NAME: ERROR" for each that fails; its exit status is the count of
those. A separate program waits for its own tracker's clean-up before it
exits (the tracker's pipe closed, the tracker reaped), so that the producer's
unlink comes after it: deterministic, where the race otherwise decides."""

import multiprocessing
import subprocess
import sys
from multiprocessing import resource_tracker, shared_memory

SIZE = 1 << 16


def attach(names, how, lock=None):
    for name in names:
        if how.endswith("untracked"):
            shm = shared_memory.SharedMemory(name=name, track=False)
        else:
            shm = shared_memory.SharedMemory(name=name)
            if how.endswith("unregister"):
                resource_tracker.unregister(shm._name, "shared_memory")
        shm.buf[0] = 1
        shm.close()


def program(how, *names):
    attach(names, how)
    resource_tracker._resource_tracker._stop()  # its clean-up done before this program ends


def producer(how, method, count):
    segments = [shared_memory.SharedMemory(create=True, size=SIZE) for _ in range(int(count))]
    names = [shm.name for shm in segments]
    if how.startswith("child"):
        context = multiprocessing.get_context(method)
        # A lock passed along, as a queue's are: spawn and forkserver name its
        # semaphore and register it. Held here until the child is done: start()
        # drops its arguments, and a lock collected then is unlinked before the
        # child can open it.
        lock = context.Lock()
        writer = context.Process(target=attach, args=(names, how, lock))
        writer.start()
        writer.join()
        assert writer.exitcode == 0, writer.exitcode
    else:
        subprocess.run([sys.executable, __file__, "program", how, *names], check=True)
    failed = 0
    for shm in segments:
        shm.close()
        try:
            shm.unlink()
        except OSError as exc:
            print("unlink %s: %s" % (shm.name, type(exc).__name__), flush=True)
            failed += 1
    return failed


if __name__ == "__main__":
    if sys.argv[1] == "program":
        program(*sys.argv[2:])
    else:
        sys.exit(producer(*sys.argv[2:]))
