"""A checkpoint uploaded as the benchmark's s3dlio writer does it
(mlpstorage's storage_writers/s3dlio_writer: s3dlio's streaming multipart
writer, Rust, its parts in flight on its own threads): one writer child per
save (spawn), each writing SIZE random bytes in 4 MiB chunks with PART-byte
parts. The store is the AWS_ENDPOINT_URL of its environment. Prints one
JSON line per save: the writer's pid and the object's key.

    python s3dlio_writer.py BUCKET PREFIX SAVES SIZE PART"""

import json
import multiprocessing
import os
import sys

CHUNK = 4 << 20


def upload(bucket: str, key: str, size: int, part: int, out) -> None:
    import s3dlio

    writer = s3dlio.MultipartUploadWriter.from_uri(f"s3://{bucket}/{key}", part_size=part, max_in_flight=4)
    data = os.urandom(size)
    for at in range(0, size, CHUNK):
        writer.write(data[at:at + CHUNK])
    writer.close()
    out.put({"pid": os.getpid(), "key": key})


def main() -> None:
    bucket, prefix, saves, size, part = sys.argv[1:6]
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    for n in range(int(saves)):
        writer = context.Process(target=upload, args=(bucket, f"{prefix}/save-{n}", int(size), int(part), out))
        writer.start()
        print(json.dumps(out.get()), flush=True)
        writer.join()


if __name__ == "__main__":
    main()
