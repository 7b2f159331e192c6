"""The writer subprocess: attaches the buffers by name, writes each queued
chunk with one os.write, fsyncs and closes (or, with --backend s3, uploads
them as one object: upload.py), reports its own figures.

This is the target's module that a spawn/forkserver child imports before the
target runs, so it imports only the standard library.
"""

import os
import queue
import select
import signal
import time
import traceback
from multiprocessing import shared_memory

# While its queue is empty, how often the writer checks that its producer
# lives: a producer killed outright (SIGKILL, the OOM killer) sends no end
# mark, and the writer would wait forever, holding the buffers, the resource
# tracker and (under forkserver) nothing that would ever wake it.
PRODUCER_CHECK_S = 0.2


class ProducerGone(Exception):
    """The producer died before the save's end mark: nobody will read this save."""


class Producer:
    """The process that queues this writer's chunks, watched by its pid: under
    forkserver the writer's parent is the daemon, so neither getppid() nor
    PR_SET_PDEATHSIG says when the producer dies. A pidfd turns readable when
    the process ends (a zombie included); where there is none, kill(pid, 0)."""

    def __init__(self, pid):
        self.pid = pid
        self.fd = None
        self.gone = False
        try:
            self.fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self.gone = True
        except (AttributeError, OSError):  # an old kernel or Python: fall back to kill(pid, 0)
            pass

    def alive(self):
        if self.gone:
            return False
        if self.fd is not None:
            self.gone = bool(select.select([self.fd], [], [], 0)[0])
        else:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.gone = True
            except PermissionError:  # there, under another user
                pass
        return not self.gone

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def run_writer(spec, chunks, freed, report):
    """Target of the writer Process.

    spec:   dict with path, buffer_names, fadvise, fsync, writer_cpus, die_with_parent,
            producer_pid, store (None, or the object's bucket, key ...: upload.py)
    chunks: queue of (buffer index, nbytes), None at the end
    freed:  queue the writer returns each written buffer index to (--verify), or None
    report: the send end of a pipe; gets ("ok", figures) or ("error", traceback)
    """
    first_line_ns = time.monotonic_ns()
    status = 1
    try:
        if spec.get("die_with_parent"):
            _die_with_parent()
        inherited_cpus = sorted(os.sched_getaffinity(0))
        if spec["writer_cpus"]:
            os.sched_setaffinity(0, spec["writer_cpus"])
        figures = _write_chunks(spec, chunks, freed)
        figures.update(
            pid=os.getpid(),
            first_line_ns=first_line_ns,
            inherited_cpus=inherited_cpus,
            cpus=sorted(os.sched_getaffinity(0)),
        )
        report.send(("ok", figures))
        status = 0
    except ProducerGone:  # nobody to tell: the buffers are unlinked, leave
        pass
    except BaseException:  # the parent must hear about any failure, then we exit
        report.send(("error", traceback.format_exc()))
    finally:
        report.close()
        # As the benchmark's writer does: no interpreter teardown in the child.
        os._exit(status)


def _die_with_parent():
    """Under MPI: be killed when the process that started this writer dies.
    A writer whose rank was killed (SIGKILL, the OOM killer) would otherwise
    wait on its queue forever (it holds both ends of the pipe), and keep the
    launcher's output pipes open, so that mpiexec never returns. The parent is
    the rank, or under forkserver the daemon, which exits with its rank."""
    import ctypes  # here, not at module level: only MPI runs pay for it

    parent = os.getppid()
    pr_set_pdeathsig = 1
    if ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL) != 0:
        return  # not Linux, or refused: the writer lives on as before
    if os.getppid() != parent:  # the parent died before we asked
        os._exit(1)


def _write_all(fd, view):
    """One os.write per chunk; loops only if the kernel takes less. Each rest
    is released even when its write fails (a full disk), so that no view of
    the buffer outlives the error and the buffer still closes."""
    written = os.write(fd, view)
    while written < len(view):
        with view[written:] as rest:
            written += os.write(fd, rest)


def next_chunk(chunks, producer):
    """The writer's wait for its next chunk: a function of its own so that
    the probe's built-in spec can time it as the `get` phase. Raises
    ProducerGone if the producer dies while the queue is empty."""
    while True:
        try:
            return chunks.get(timeout=PRODUCER_CHECK_S)
        except queue.Empty:
            if not producer.alive():
                raise ProducerGone("producer (pid %d) is gone" % producer.pid) from None


class Chunks:
    """The save's chunks in the order queued, each a view of its buffer,
    ended by the producer's end mark. Asking for the next chunk releases the
    last one's view and (--verify) hands its buffer back; the waits for a
    chunk are timed as get_wait_ns."""

    def __init__(self, buffers, chunks, freed, producer, totals):
        self.buffers, self.chunks, self.freed = buffers, chunks, freed
        self.producer, self.totals = producer, totals
        self.nbytes = self.nchunks = 0
        self.first_chunk_ns = None
        self._views = self._taken()

    def __iter__(self):
        return self._views

    def _taken(self):
        clock = time.monotonic_ns
        while True:
            t0 = clock()
            item = next_chunk(self.chunks, self.producer)
            t1 = clock()
            self.totals["get_wait_ns"] += t1 - t0
            if item is None:
                return
            index, length = item
            if self.first_chunk_ns is None:
                self.first_chunk_ns = t1
            with self.buffers[index].buf[:length] as view:
                yield view
            if self.freed is not None:
                self.freed.put(index)
            self.nbytes += length
            self.nchunks += 1

    def close(self):
        """Release a view still held (a save that failed mid-chunk)."""
        self._views.close()


class File:
    """One os.write per chunk, posix_fadvise DONTNEED of each range
    (fadvise dontneed), one fsync at the end (fsync), close."""

    parts = None

    def __init__(self, spec, totals):
        self.spec, self.totals = spec, totals
        self.fd = os.open(spec["path"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

    def save(self, chunks):
        clock = time.monotonic_ns
        offset = 0
        for view in chunks:
            t1 = clock()
            _write_all(self.fd, view)
            t2 = clock()
            self.totals["write_ns"] += t2 - t1
            if self.spec["fadvise"] == "dontneed":
                os.posix_fadvise(self.fd, offset, len(view), os.POSIX_FADV_DONTNEED)
                self.totals["fadvise_ns"] += clock() - t2
            offset += len(view)
        if self.spec["fsync"]:
            t0 = clock()
            os.fsync(self.fd)
            self.totals["fsync_ns"] += clock() - t0

    def close(self):
        t0 = time.monotonic_ns()
        os.close(self.fd)
        self.totals["close_ns"] += time.monotonic_ns() - t0


def _open(spec, totals):
    """The save's destination, opened: its file, or its upload."""
    if spec["store"] is None:
        return File(spec, totals)
    from writerprof.repro.upload import open_upload  # boto3: only in a writer that uploads

    return open_upload(spec["store"], totals)


def _write_chunks(spec, chunks, freed):
    clock = time.monotonic_ns
    t_attach = clock()
    buffers = [shared_memory.SharedMemory(name=name) for name in spec["buffer_names"]]
    t_attached = clock()
    totals = dict(get_wait_ns=0, write_ns=0, fadvise_ns=0, fsync_ns=0, close_ns=0)
    producer = Producer(spec["producer_pid"])
    taken = Chunks(buffers, chunks, freed, producer, totals)
    destination = None
    try:
        destination = _open(spec, totals)
        t_opened = clock()
        destination.save(taken)
    except ProducerGone:
        # The producer cannot unlink them now: do it here, rather than leave
        # them to the resource tracker, which may not outlive us.
        for buffer in buffers:
            try:
                buffer.unlink()
            except FileNotFoundError:
                pass
        raise
    finally:
        taken.close()
        if destination is not None:
            destination.close()
        producer.close()
        for buffer in buffers:
            buffer.close()
    return dict(
        totals,
        bytes=taken.nbytes,
        chunks=taken.nchunks,
        parts=destination.parts,
        attach_ns=t_attached - t_attach,
        open_ns=t_opened - t_attached,
        first_chunk_ns=taken.first_chunk_ns,
    )
