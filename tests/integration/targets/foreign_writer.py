"""A checkpoint writer with names of its own (no built-in spec knows them):
a producer fills 4 shared-memory buffers and hands them to a writer process
over a bounded multiprocessing Queue; the writer writes each, and its
storage's close() calls os.fsync. The first half of each save the writer is
slow (the producer waits on the full queue), the second half the producer
is (the writer waits for chunks). Both sides time their own waits and the
producer writes them as JSON to the path it is given, one object a save.

    python foreign_writer.py METHOD OUT_DIR RESULTS_JSON
"""

import json
import os
import sys
import time
import multiprocessing
from multiprocessing import shared_memory

from foreign_storage import Ledger

CHUNK = 1 << 20
BUFFERS = 4
QUEUE_SIZE = 2
CHUNKS = 12
SLOW_S = 0.1  # a slow write (first half) or a slow fill (second half)
SAVES = 2


def holds(chunk):
    """(fill, write) seconds of chunk `chunk`: writer-bound, then generation-bound."""
    return (0.0, SLOW_S) if chunk < CHUNKS // 2 else (SLOW_S, 0.0)


def drain(names, path, chunks, results):
    """The writer: take each chunk, write it, close (fsync) at the end."""
    buffers = [shared_memory.SharedMemory(name=name) for name in names]
    ledger = Ledger(path)
    get_wait = 0.0
    while True:
        t0 = time.monotonic()
        item = chunks.get()
        get_wait += time.monotonic() - t0
        if item is None:
            break
        index, chunk = item
        with buffers[index].buf[:CHUNK] as view:
            ledger.append(view, holds(chunk)[1])
    t0 = time.monotonic()
    ledger.close()
    close_s = time.monotonic() - t0
    for buffer in buffers:
        buffer.close()
    results.put({"get_wait_s": get_wait, "fsync_s": ledger.fsync_s, "close_s": close_s})


def stream(ctx, out_dir, save):
    """The producer's side of one save."""
    buffers = [shared_memory.SharedMemory(create=True, size=CHUNK) for _ in range(BUFFERS)]
    chunks, results = ctx.Queue(maxsize=QUEUE_SIZE), ctx.Queue()
    writer = ctx.Process(target=drain, name="scribe-%d" % save,
                         args=([b.name for b in buffers], os.path.join(out_dir, "ckpt-%d" % save), chunks, results))
    writer.start()
    put_wait = 0.0
    try:
        for chunk in range(CHUNKS + 1):
            item = None
            if chunk < CHUNKS:
                index = chunk % BUFFERS
                buffers[index].buf[:CHUNK] = bytes([chunk]) * CHUNK
                time.sleep(holds(chunk)[0])
                item = (index, chunk)
            t0 = time.monotonic()
            chunks.put(item)
            put_wait += time.monotonic() - t0
        mine = results.get(timeout=60)
        writer.join(60)
    finally:
        for buffer in buffers:
            buffer.close()
            buffer.unlink()
    return dict(mine, save=save + 1, put_wait_s=put_wait, exitcode=writer.exitcode)


if __name__ == "__main__":
    method, out_dir, results_path = sys.argv[1:4]
    ctx = multiprocessing.get_context(method)
    with open(os.path.join(out_dir, "manifest"), "wb") as f:  # before the saves (see Ledger's header)
        os.write(f.fileno(), json.dumps({"saves": SAVES, "chunks": CHUNKS}).encode())
    saves = [stream(ctx, out_dir, save) for save in range(SAVES)]
    with open(results_path, "w") as f:
        json.dump(saves, f)
    sys.exit(max(s["exitcode"] for s in saves))
