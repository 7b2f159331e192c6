"""Two writer children under forkserver, as the reproducer does with
--pin-parent CPU --pin-when after-first-writer: after the first one the parent
pins itself to its first allowed CPU, while the forkserver daemon keeps the
mask it started with. Each writer sends back its affinity at its target's
first line; the parent prints one line per writer.

The target does not live in __main__: this script imports itself by name, as
a benchmark's entry script imports its writer module. Standard library only."""

import multiprocessing
import os
import sys


def report_affinity(conn):
    conn.send(sorted(os.sched_getaffinity(0)))
    conn.close()


if __name__ == "__main__":
    import mitigated_writer  # found beside this script: sys.path[0]

    ctx = multiprocessing.get_context("forkserver")
    first_cpu = min(os.sched_getaffinity(0))
    status = 0
    for n in (1, 2):
        receive, send = ctx.Pipe(duplex=False)
        writer = ctx.Process(target=mitigated_writer.report_affinity, args=(send,))
        writer.start()
        send.close()
        cpus = receive.recv()
        writer.join()
        print("writer %d cpus %s exit %d" % (n, ",".join(map(str, cpus)), writer.exitcode))
        status = status or writer.exitcode
        if n == 1:
            os.sched_setaffinity(0, {first_cpu})
    sys.exit(status)
