"""A checkpoint uploaded as the benchmark's minio writer does it
(mlpstorage's storage_writers/minio_writer: the minio client, multipart
parts uploaded by its own threads): one writer child per save (fork), each
putting SIZE random bytes with PART-byte parts. Prints one JSON line per
save: the writer's pid and the object's key.

    python minio_writer.py ENDPOINT BUCKET PREFIX SAVES SIZE PART"""

import io
import json
import multiprocessing
import os
import sys
from urllib.parse import urlsplit


def upload(endpoint: str, bucket: str, key: str, size: int, part: int, out) -> None:
    from minio import Minio

    where = urlsplit(endpoint)
    client = Minio(where.netloc, access_key=os.environ["AWS_ACCESS_KEY_ID"],
                   secret_key=os.environ["AWS_SECRET_ACCESS_KEY"], secure=where.scheme == "https")
    data = os.urandom(size)
    client.put_object(bucket, key, io.BytesIO(data), size, part_size=part, num_parallel_uploads=3)
    out.put({"pid": os.getpid(), "key": key})


def main() -> None:
    endpoint, bucket, prefix, saves, size, part = sys.argv[1:7]  # (the store: ENDPOINT, as minio takes it)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    for n in range(int(saves)):
        writer = context.Process(target=upload, args=(endpoint, bucket, f"{prefix}/save-{n}", int(size), int(part), out))
        writer.start()
        print(json.dumps(out.get()), flush=True)
        writer.join()


if __name__ == "__main__":
    main()
