"""A producer that hands a writer child per save its chunks in a pool of
shared-memory buffers, as the benchmark's streaming checkpoint does: a
bounded Queue of (buffer, size) to the writer, a Queue of the buffers the
writer freed back (the producer refills a buffer only once it is free).
Each side's pace and the writer's start-up are set on the command line, for
tests/integration/test_measured_warnings.py.

    python handoff.py OUT [NAME=VALUE ...]

    method     fork, forkserver or spawn (fork)
    saves, chunks, chunk_mib, buffers   (2, 8, 8, 2)
    first_s    CPU seconds the producer spends before it fills its first chunk (0)
    gen_s      CPU seconds the producer spends on each chunk after filling it (0)
    work_s     CPU seconds the writer spends on each chunk before its write (0)
    rerun_s    seconds the children's re-run of __main__ takes, before their target (0)
    setup_s    seconds the writer's target takes before it waits for its first chunk (making a client) (0)
    fsync      1: the writer fsyncs its file at its end (1)
    mode       how the writer stores each chunk:
      write    os.write of the chunk from its buffer
      fresh    a copy into fresh memory of its own (4 KiB pages: a fault each), then os.write of the copy
      refault  its buffer's pages dropped from the writer (MADV_DONTNEED), then os.write from it: the
               write faults them in again
      hold     a copy kept; all written after the last chunk (no file write until then)
      send     a copy into fresh memory of its own, sent to a TCP peer on loopback (the producer's), as
               an upload's client copies each part; no file is ever written
      s3       a part of a boto3 multipart upload of the save's object (its bytes a copy), to the store
               at endpoint=URL, bucket=NAME (the credentials from the environment); no file is written
"""

import mmap
import multiprocessing
import os
import socket
import sys
import threading
import time
from multiprocessing import shared_memory

CONFIG = dict(method="fork", saves="2", chunks="8", chunk_mib="8", buffers="2", first_s="0", gen_s="0",
              work_s="0", rerun_s="0", setup_s="0", fsync="1", mode="write", endpoint="", bucket="")
CONFIG.update(arg.split("=", 1) for arg in sys.argv[2:])
MIB = 1 << 20

if __name__ == "__mp_main__":  # the children's re-run of this script (forkserver, spawn)
    time.sleep(float(CONFIG["rerun_s"]))


def spin(seconds):
    """CPU work of this thread for `seconds` of its CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def writer(names, chunks, freed, path, peer):
    time.sleep(float(CONFIG["setup_s"]))
    buffers = [shared_memory.SharedMemory(name=name) for name in names]
    mode, work_s = CONFIG["mode"], float(CONFIG["work_s"])
    out = socket.create_connection(peer) if mode == "send" else None
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) if mode not in ("send", "s3") else None
    store = Upload(path.lstrip("/")) if mode == "s3" else None
    held = []
    while True:
        item = chunks.get()
        if item is None:
            break
        index, size = item
        spin(work_s)
        with buffers[index].buf[:size] as view:
            if mode == "write":
                os.write(fd, view)
            elif mode == "fresh":
                with fresh_copy(view) as own:
                    os.write(fd, own)
            elif mode == "refault":
                buffers[index]._mmap.madvise(mmap.MADV_DONTNEED)
                os.write(fd, view)
            elif mode == "hold":
                held.append(bytes(view))
            elif mode == "s3":
                store.part(bytes(view))
            else:
                with fresh_copy(view) as own:
                    out.sendall(own)
        freed.put(index)
    for data in held:
        os.write(fd, data)
    if fd is not None:
        if CONFIG["fsync"] == "1":
            os.fsync(fd)
        os.close(fd)
    if out is not None:
        out.close()
    if store is not None:
        store.complete()
    for buffer in buffers:
        buffer.close()


class Upload:
    """A multipart upload of one object with boto3, a part a chunk, as the benchmark's object store does."""

    def __init__(self, key):
        import boto3  # here: only an uploading writer pays for it, after its start-up's re-run

        self.client = boto3.client("s3", endpoint_url=CONFIG["endpoint"])
        self.key, self.parts = key, []
        self.id = self.client.create_multipart_upload(Bucket=CONFIG["bucket"], Key=key)["UploadId"]

    def part(self, data):
        number = len(self.parts) + 1
        answer = self.client.upload_part(Bucket=CONFIG["bucket"], Key=self.key, UploadId=self.id,
                                         PartNumber=number, Body=data)
        self.parts.append({"PartNumber": number, "ETag": answer["ETag"]})

    def complete(self):
        self.client.complete_multipart_upload(Bucket=CONFIG["bucket"], Key=self.key, UploadId=self.id,
                                              MultipartUpload={"Parts": self.parts})


def fresh_copy(view):
    """view copied into fresh anonymous memory of 4 KiB pages: a page fault a page."""
    own = mmap.mmap(-1, len(view))
    own.madvise(mmap.MADV_NOHUGEPAGE)
    own[:] = view
    return own


def sink():
    """A TCP peer on loopback that reads and drops whatever it is sent: (its address, its thread)."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            connection, _ = server.accept()
            with connection:
                while connection.recv(MIB):
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server.getsockname()


def save(context, number, out, peer):
    size, count = int(CONFIG["chunk_mib"]) * MIB, int(CONFIG["buffers"])
    buffers = [shared_memory.SharedMemory(create=True, size=size) for _ in range(count)]
    chunks, freed = context.Queue(count), context.Queue()
    child = context.Process(target=writer, args=([b.name for b in buffers], chunks, freed,
                                                 os.path.join(out, f"checkpoint-{number}.bin"), peer))
    child.start()
    spin(float(CONFIG["first_s"]))
    for chunk in range(int(CONFIG["chunks"])):
        index = chunk % count
        if chunk >= count:
            index = freed.get()
        buffers[index].buf[:size] = bytes([chunk % 251]) * size
        spin(float(CONFIG["gen_s"]))
        chunks.put((index, size))
    chunks.put(None)
    child.join()
    # The chunk queue's feeder thread ends once the queue is closed, in its own
    # time: joined here, so the next save's fork never finds it still live.
    chunks.close()
    chunks.join_thread()
    for buffer in buffers:
        buffer.close()
        buffer.unlink()
    if child.exitcode != 0:
        sys.exit(f"writer {number} exited {child.exitcode}")


if __name__ == "__main__":
    context = multiprocessing.get_context(CONFIG["method"])
    peer = sink() if CONFIG["mode"] == "send" else None
    for number in range(int(CONFIG["saves"])):
        save(context, number, sys.argv[1], peer)
