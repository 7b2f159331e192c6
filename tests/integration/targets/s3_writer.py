"""A producer that saves checkpoints to an S3-compatible store as the
benchmark's object-store backend does: it fills a shared-memory buffer per
save and starts one writer child (--method) that attaches it and uploads it
with boto3 (its credentials and region from the environment), then prints a
JSON line per save (key, bytes, the writer's pid).

  multipart  create_multipart_upload, upload_part of each half, complete
  transfer   upload_fileobj through boto3's transfer manager, 4 threads
"""

import argparse
import io
import json
import multiprocessing
import os
from multiprocessing import shared_memory

import boto3  # imported, no client made: a client's threads and sockets do not survive a fork
from boto3.s3.transfer import TransferConfig

PART = 8 << 20  # S3's parts are 5 MiB at least, the last excepted


def upload(endpoint, bucket, key, name, size, mode, results):
    buffer = shared_memory.SharedMemory(name=name)
    try:
        data = buffer.buf[:size]
        client = boto3.client("s3", endpoint_url=endpoint)
        if mode == "multipart":
            upload_id = client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
            half = size // 2
            parts = [{"PartNumber": n, "ETag": client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id,
                                                                  PartNumber=n, Body=bytes(data[a:b]))["ETag"]}
                     for n, (a, b) in enumerate(((0, half), (half, size)), start=1)]
            client.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id,
                                             MultipartUpload={"Parts": parts})
        else:
            client.upload_fileobj(io.BytesIO(bytes(data)), bucket, key,
                                  Config=TransferConfig(multipart_threshold=PART, multipart_chunksize=PART,
                                                        max_concurrency=4))
        del data
        results.put({"key": key, "bytes": size, "pid": os.getpid()})
    finally:
        buffer.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("endpoint")
    parser.add_argument("bucket")
    parser.add_argument("mode", choices=("multipart", "transfer"))
    parser.add_argument("--method", default="forkserver", choices=("fork", "forkserver", "spawn"))
    parser.add_argument("--saves", type=int, default=2)
    parser.add_argument("--size", type=int, default=32 << 20)
    parser.add_argument("--prefix", default="ckpt")
    args = parser.parse_args()
    context = multiprocessing.get_context(args.method)
    if args.method == "forkserver":  # as the benchmark's writers: boto3 imported once, not per writer
        context.set_forkserver_preload(["boto3"])
    results = context.Queue()
    for save in range(1, args.saves + 1):
        buffer = shared_memory.SharedMemory(create=True, size=args.size)
        try:
            buffer.buf[:args.size] = bytes([save]) * args.size
            writer = context.Process(target=upload, args=(args.endpoint, args.bucket, f"{args.prefix}/save-{save}",
                                                          buffer.name, args.size, args.mode, results))
            writer.start()
            writer.join()  # (a child puts its one small result in the pipe before it exits)
            if writer.exitcode:
                raise SystemExit(f"writer of save {save} exited {writer.exitcode}")
            done = results.get(timeout=10)
        finally:
            buffer.close()
            buffer.unlink()
        print(json.dumps(done), flush=True)


if __name__ == "__main__":
    main()
