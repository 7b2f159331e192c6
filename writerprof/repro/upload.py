"""The writer's upload of a save to an S3-compatible store as one object,
with boto3: the object-store counterpart of writer.py's file.

Imported by a writer that uploads, when it opens its upload: a fork child
has boto3 from its producer already, a forkserver or spawn child imports it
then (its `open_s`). Like the benchmark's object-store writers, the writer
makes its own client: a client's threads and sockets do not survive a fork.

  multipart  create_multipart_upload when opened, one upload_part per chunk
             (a copy of it: botocore sends bytes), complete_multipart_upload
             at the end, one request after another: the benchmark's minio
             writer's requests with a part per chunk (it keeps up to 8 in
             flight)
  transfer   boto3's transfer manager (upload_fileobj) reads the chunks as
             one stream and uploads a part per chunk from TRANSFER_THREADS
             threads; it creates and completes the upload itself

Figures (the writer's totals): write_ns, the parts' upload (transfer: the
upload's wall time less its waits for chunks and its completion, never the
threads' summed time); close_ns, complete_multipart_upload; parts, the
UploadPart requests made.
"""

import threading
import time

from boto3.s3.transfer import TransferConfig

from writerprof.repro.objectstore import TRANSFER_THREADS, client


class _Upload:
    def __init__(self, store, totals):
        self.client = client(store["endpoint"])
        self.bucket, self.key = store["bucket"], store["key"]
        self.totals = totals
        self.parts = 0
        self._lock = threading.Lock()  # the transfer manager's threads count parts
        self.client.meta.events.register("after-call.s3.UploadPart", self._counted)

    def _counted(self, **_):
        with self._lock:
            self.parts += 1

    def close(self):
        self.client.close()


class MultipartUpload(_Upload):
    def __init__(self, store, totals):
        super().__init__(store, totals)
        self.upload_id = self.client.create_multipart_upload(Bucket=self.bucket, Key=self.key)["UploadId"]
        self.completed = False

    def save(self, chunks):
        clock = time.monotonic_ns
        parts = []
        for number, view in enumerate(chunks, start=1):
            t0 = clock()
            done = self.client.upload_part(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                                           PartNumber=number, Body=bytes(view))
            self.totals["write_ns"] += clock() - t0
            parts.append({"PartNumber": number, "ETag": done["ETag"]})
        t0 = clock()
        self.client.complete_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                                              MultipartUpload={"Parts": parts})
        self.totals["close_ns"] += clock() - t0
        self.completed = True

    def close(self):
        try:
            if not self.completed:  # a failed save leaves no parts stored (and billed) behind
                self.client.abort_multipart_upload(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id)
        except Exception:  # the failure that brought us here is the one to report
            pass
        finally:
            super().close()


class TransferUpload(_Upload):
    def __init__(self, store, totals):
        super().__init__(store, totals)
        chunk = store["chunk_size"]
        # classic: s3transfer's threads, not the CRT client boto3 may prefer
        self.config = TransferConfig(multipart_threshold=chunk, multipart_chunksize=chunk,
                                     max_concurrency=TRANSFER_THREADS, use_threads=True,
                                     preferred_transfer_client="classic")
        self._completing = None
        self.client.meta.events.register("before-call.s3.CompleteMultipartUpload", self._complete_starts)
        self.client.meta.events.register("after-call.s3.CompleteMultipartUpload", self._complete_ends)

    def _complete_starts(self, **_):
        self._completing = time.monotonic_ns()

    def _complete_ends(self, **_):
        self.totals["close_ns"] += time.monotonic_ns() - self._completing

    def save(self, chunks):
        waited = self.totals["get_wait_ns"]
        t0 = time.monotonic_ns()
        self.client.upload_fileobj(ChunkStream(chunks), self.bucket, self.key, Config=self.config)
        elapsed = time.monotonic_ns() - t0
        self.totals["write_ns"] += elapsed - (self.totals["get_wait_ns"] - waited) - self.totals["close_ns"]


class ChunkStream:
    """The chunks as one stream that cannot seek: read(n) returns n bytes,
    fewer only at the end, copied out of the buffers; with n the chunk size,
    one chunk. Taking the next chunk releases the last one's buffer."""

    def __init__(self, chunks):
        self._views = iter(chunks)
        self._view = None
        self._offset = 0

    def read(self, size=-1):
        pieces = []
        wanted = None if size is None or size < 0 else size
        while wanted is None or wanted > 0:
            if self._view is None or self._offset == len(self._view):
                self._view, self._offset = next(self._views, None), 0
                if self._view is None:
                    break
            end = len(self._view) if wanted is None else min(len(self._view), self._offset + wanted)
            with self._view[self._offset:end] as piece:
                pieces.append(bytes(piece))
            if wanted is not None:
                wanted -= end - self._offset
            self._offset = end
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def open_upload(store, totals):
    """store: the spec's bucket, key, endpoint, upload mode and chunk size."""
    return {"multipart": MultipartUpload, "transfer": TransferUpload}[store["upload"]](store, totals)
