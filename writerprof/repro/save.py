"""One streaming checkpoint save: the producer side.

Creates the pool of shared-memory buffers, starts one writer subprocess, fills
buffers round-robin and queues (index, nbytes) on a queue of maxsize=buffers,
as the benchmark does; then collects the writer's figures. Whatever happens,
the buffers are unlinked and the writer is gone when this returns or raises.
"""

from __future__ import annotations

import mmap
import os
import queue
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing import shared_memory

import numpy as np

from writerprof import interrupts
from writerprof.errors import WriterprofError
from writerprof.repro.config import ReproConfig
from writerprof.repro.writer import run_writer

_POLL_S = 0.2  # how often a blocked producer checks that its writer still lives


@dataclass
class SaveResult:
    save: int
    start_method: str
    path: str
    bytes: int
    chunks: int
    total_s: float
    gen_s: float
    put_wait_s: float
    get_wait_s: float
    write_s: float
    fadvise_s: float
    fsync_s: float
    close_s: float
    writer_startup_s: float
    writer_attach_s: float
    open_s: float  # the file's open; the S3 client, and with multipart the upload's creation
    parts: int | None  # UploadPart requests (--backend s3); None for a file
    writer_pid: int
    producer_cpus: list[int]
    writer_inherited_cpus: list[int]
    writer_cpus: list[int]
    touch_cpus: list[int] | None

    @property
    def io_s(self) -> float:
        return self.write_s + self.fadvise_s + self.fsync_s + self.close_s

    @property
    def throughput_gib_s(self) -> float:
        return self.bytes / self.total_s / (1 << 30)


class WriterFailed(WriterprofError):
    pass


class SaveStopped(WriterprofError):
    """Under MPI: another rank failed, so this rank's save stops early."""


def seconds(ns: int) -> float:
    return ns / 1e9


def _describe_exit(pid: int, exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"writer (pid {pid}) was killed by {name}"
    return f"writer (pid {pid}) exited with status {exitcode}"


def first_touch(buffers, cpus) -> list[int]:
    """Touch every page from a thread pinned to `cpus`: under the kernel's
    first-touch policy that thread's node gets the pages. Returns the CPUs
    the toucher was allowed, as the kernel reports them."""

    def touch():
        os.sched_setaffinity(0, cpus)  # this thread only
        for buffer in buffers:
            pages = np.frombuffer(buffer.buf, dtype=np.uint8)
            pages[:: mmap.PAGESIZE] = 0
            del pages
        return sorted(os.sched_getaffinity(0))

    with ThreadPoolExecutor(1, "writerprof-touch") as toucher:
        return toucher.submit(touch).result()


class _Save:
    """State of one save in flight, so that every exit path cleans it up."""

    def __init__(self, config: ReproConfig, ctx, index: int, path: str, should_stop=None,
                 die_with_parent=False):
        self.config, self.ctx, self.index, self.path = config, ctx, index, path
        self.should_stop, self.die_with_parent = should_stop, die_with_parent
        self.buffers: list[shared_memory.SharedMemory] = []
        self.writer = None
        self.report = self.report_end = None  # the writer's report pipe: ours, its
        self.queues = []

    def _failed(self, report=None) -> WriterFailed:
        """The writer is gone or going: say how, with its own last words if it
        sent any (read before joining, so that a long report cannot block it)."""
        if report is None and self.report.poll():
            report = self._recv()
        self.writer.join()
        said = ""
        if report is not None and report[0] == "error":  # a traceback: its last line says what
            said = ": " + report[1].strip().splitlines()[-1]
        return WriterFailed(
            f"save {self.index} failed: {_describe_exit(self.writer.pid, self.writer.exitcode)}"
            f"{said}"
        )

    def _check(self) -> None:
        """Between chunks and while waiting: a signal, or (under MPI) another
        rank's failure, ends the save."""
        interrupts.check()
        if self.should_stop is not None and self.should_stop():
            raise SaveStopped(f"save {self.index} stopped: another rank failed")

    def _recv(self):
        """The writer's ("ok", figures) or ("error", traceback); None if it died first."""
        try:
            return self.report.recv()
        except (EOFError, OSError):
            return None

    def _alive_or_raise(self):
        """While chunks are still being queued: a dead writer, or any report
        (only an error can come this early), ends the save."""
        self._check()
        if not self.writer.is_alive() or self.report.poll():
            raise self._failed()

    def _put(self, chunks, item) -> int:
        t0 = time.monotonic_ns()
        while True:
            try:
                chunks.put(item, timeout=_POLL_S)
                return time.monotonic_ns() - t0
            except queue.Full:
                self._alive_or_raise()

    def _get(self, freed) -> int:
        while True:
            try:
                return freed.get(timeout=_POLL_S)
            except queue.Empty:
                self._alive_or_raise()

    def _receive(self) -> dict:
        """After the last chunk: wait for the writer's figures."""
        while not self.report.poll(_POLL_S):
            self._check()
            if not self.writer.is_alive() and not self.report.poll():
                raise self._failed()
        report = self._recv()
        if report is None or report[0] != "ok":
            raise self._failed(report)
        self.writer.join()
        if self.writer.exitcode != 0:
            raise self._failed(report)
        return report[1]

    def run(self, generator, on_writer_started) -> SaveResult:
        # One function: the benchmark's save in its order (buffers, queue, writer, the fill
        # loop, the writer's result), as a reader compares it with the benchmark's own.
        config = self.config
        t_begin = time.monotonic_ns()
        for _ in range(config.buffers):
            with interrupts.deferred():  # a segment made, then ours to unlink: not cut between
                self.buffers.append(shared_memory.SharedMemory(create=True, size=config.chunk_size))
        touch_cpus = first_touch(self.buffers, config.touch_cpus) if config.touch_cpus else None
        chunks = self.ctx.Queue(maxsize=config.buffers)
        freed = self.ctx.Queue() if config.verify else None
        self.queues = [q for q in (chunks, freed) if q is not None]
        self.report, self.report_end = self.ctx.Pipe(duplex=False)
        store = config.store
        spec = dict(
            path=self.path,
            store=None if store is None else dict(
                endpoint=store.endpoint, bucket=store.bucket, key=self.path, upload=store.upload,
                chunk_size=config.chunk_size,
            ),
            buffer_names=[buffer.name for buffer in self.buffers],
            fadvise=config.fadvise,
            fsync=config.fsync,
            writer_cpus=sorted(config.writer_cpus) if config.writer_cpus else None,
            die_with_parent=self.die_with_parent,
            producer_pid=os.getpid(),
        )
        self.writer = self.ctx.Process(
            target=run_writer, args=(spec, chunks, freed, self.report_end),
            name=f"writer-{self.index}",
        )
        t_start = time.monotonic_ns()
        self.writer.start()
        self.report_end.close()  # the writer holds the only send end: its death reads as EOF
        on_writer_started()
        gen_ns = put_ns = 0
        remaining = config.size
        for chunk in range(config.chunks_per_save):
            self._check()
            index = chunk % config.buffers
            if freed is not None and chunk >= config.buffers:
                returned = self._get(freed)
                assert returned == index, (returned, index)
            length = min(config.chunk_size, remaining)
            t0 = time.monotonic_ns()
            with self.buffers[index].buf[:length] as view:
                generator.fill(view, self.index, chunk)
            gen_ns += time.monotonic_ns() - t0
            put_ns += self._put(chunks, (index, length))
            remaining -= length
        put_ns += self._put(chunks, None)
        figures = self._receive()
        t_end = time.monotonic_ns()
        if figures["bytes"] != config.size or figures["chunks"] != config.chunks_per_save:
            raise WriterFailed(
                f"save {self.index} failed: the writer wrote {figures['bytes']} bytes in "
                f"{figures['chunks']} chunks, not {config.size} in {config.chunks_per_save}"
            )
        return SaveResult(
            save=self.index,
            start_method=self.ctx.get_start_method(),
            path=self.path if store is None else store.url(self.path),
            bytes=figures["bytes"],
            chunks=figures["chunks"],
            total_s=seconds(t_end - t_begin),
            gen_s=seconds(gen_ns),
            put_wait_s=seconds(put_ns),
            get_wait_s=seconds(figures["get_wait_ns"]),
            write_s=seconds(figures["write_ns"]),
            fadvise_s=seconds(figures["fadvise_ns"]),
            fsync_s=seconds(figures["fsync_ns"]),
            close_s=seconds(figures["close_ns"]),
            writer_startup_s=seconds(figures["first_line_ns"] - t_start),
            writer_attach_s=seconds(figures["attach_ns"]),
            open_s=seconds(figures["open_ns"]),
            parts=figures["parts"],
            writer_pid=figures["pid"],
            producer_cpus=sorted(os.sched_getaffinity(0)),
            writer_inherited_cpus=figures["inherited_cpus"],
            writer_cpus=figures["cpus"],
            touch_cpus=touch_cpus,
        )

    def cleanup(self) -> None:
        failed = self.writer is None or self.writer.exitcode != 0
        if self.writer is not None and self.writer.is_alive():
            self.writer.kill()
            self.writer.join()
        for end in (self.report, self.report_end):
            if end is not None:
                end.close()
        for channel in self.queues:
            channel.close()
            if failed:  # nobody will read what is left: do not wait to flush it
                channel.cancel_join_thread()
            else:  # its feeder thread gone before the next save forks a writer (no live thread at that fork)
                channel.join_thread()
        for buffer in self.buffers:
            try:
                buffer.unlink()  # first: it cannot fail on a view still held
            except FileNotFoundError:  # unlinked already (a writer that saw this process go)
                pass
            except BrokenPipeError:  # unlinked; only telling the resource tracker failed (it is gone)
                pass
            try:
                buffer.close()
            except BufferError:  # a view held by an interrupted fill; the mapping
                pass  # goes with the process, the segment is already unlinked


def run_save(config: ReproConfig, ctx, generator, index: int, path: str, on_writer_started,
             should_stop=None, die_with_parent=False):
    """path: the file's, or with --backend s3 the object's key. Under MPI:
    should_stop is called between chunks and while waiting, and True ends the
    save with SaveStopped (another rank failed); die_with_parent has the
    writer killed if its parent dies."""
    save = _Save(config, ctx, index, path, should_stop, die_with_parent)
    try:
        return save.run(generator, on_writer_started)
    finally:
        save.cleanup()
