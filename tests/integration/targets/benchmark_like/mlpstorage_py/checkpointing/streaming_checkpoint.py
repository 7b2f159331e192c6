"""A stand-in for the benchmark's streaming checkpoint, shaped as its save
is (the real names, written for these tests): a pool of shared-memory
buffers, a bounded multiprocessing Queue of (buffer index, size), a writer
process, a producer loop that fills each buffer with dgen-py and puts it,
then the end marker, the join and the writer's figures. Both sides time
their own queue waits, which the real benchmark does not: the tests compare
writerprof's with them."""

import multiprocessing as mp
import os
import time
from multiprocessing import shared_memory

import dgen_py

from .storage_writers import FileStorageWriter


class StreamingCheckpointing:
    def __init__(self, chunk_size, num_buffers, method):
        self.chunk_size, self.num_buffers, self.ctx = chunk_size, num_buffers, mp.get_context(method)

    def save(self, filepath, total_size_bytes):
        began = time.monotonic()
        buffers = [shared_memory.SharedMemory(create=True, size=self.chunk_size) for _ in range(self.num_buffers)]
        generator = dgen_py.Generator(size=total_size_bytes, chunk_size=self.chunk_size, max_threads=4)
        buffer_queue = self.ctx.Queue(maxsize=self.num_buffers)
        stats_queue = self.ctx.Queue()
        writer = self.ctx.Process(target=self._writer_process,
                                  args=([b.name for b in buffers], filepath, buffer_queue, stats_queue))
        started = time.monotonic()
        writer.start()
        try:
            own = self._run_producer(buffers, buffer_queue, total_size_bytes, generator)
            t0 = time.monotonic()
            buffer_queue.put(None)
            own["put_wait_s"] += time.monotonic() - t0
            own["loop_s"] = time.monotonic() - started  # from the writer's start to the last hand-off
            stats = stats_queue.get(timeout=60)
            writer.join(60)
        finally:
            for shm in buffers:
                shm.close()
                shm.unlink()
        return dict(stats, **own, exitcode=writer.exitcode, save_s=time.monotonic() - began)

    def _run_producer(self, buffers, buffer_queue, total_size_bytes, generator):
        generated = index = 0
        gen_s = put_wait_s = 0.0
        while generated < total_size_bytes:
            size = min(self.chunk_size, total_size_bytes - generated)
            t0 = time.monotonic()
            generator.fill_chunk(buffers[index].buf)
            t1 = time.monotonic()
            buffer_queue.put((index, size))
            t2 = time.monotonic()
            gen_s += t1 - t0
            put_wait_s += t2 - t1
            generated += size
            index = (index + 1) % self.num_buffers
        return {"gen_s": gen_s, "put_wait_s": put_wait_s}

    @staticmethod
    def _writer_process(buffer_names, filepath, buffer_queue, stats_queue):
        buffers = [shared_memory.SharedMemory(name=name) for name in buffer_names]
        writer = FileStorageWriter(filepath)
        get_wait_s = 0.0
        while True:
            t0 = time.monotonic()
            item = buffer_queue.get()
            get_wait_s += time.monotonic() - t0
            if item is None:
                break
            index, size = item
            writer.write_chunk(buffers[index].buf, size)
        t0 = time.monotonic()
        closed = writer.close()
        close_s = time.monotonic() - t0
        for shm in buffers:
            shm.close()
        stats_queue.put(dict(closed, get_wait_s=get_wait_s, close_s=close_s, pid=os.getpid()))
