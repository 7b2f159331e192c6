"""One boto3 multipart upload: create, PARTS parts of PART_MIB MiB, complete;
to the S3-compatible store at ENDPOINT (credentials from the environment).
Prints the upload's id and the object's ETag and size as JSON."""

import argparse
import json

import boto3

parser = argparse.ArgumentParser()
parser.add_argument("endpoint")
parser.add_argument("bucket")
parser.add_argument("key")
parser.add_argument("--parts", type=int, default=2)
parser.add_argument("--part-mib", type=int, default=5)
args = parser.parse_args()

s3 = boto3.client("s3", endpoint_url=args.endpoint)
upload = s3.create_multipart_upload(Bucket=args.bucket, Key=args.key)["UploadId"]
parts = []
for number in range(1, args.parts + 1):
    body = bytes([number]) * (args.part_mib << 20)
    etag = s3.upload_part(Bucket=args.bucket, Key=args.key, UploadId=upload, PartNumber=number, Body=body)["ETag"]
    parts.append({"PartNumber": number, "ETag": etag})
done = s3.complete_multipart_upload(Bucket=args.bucket, Key=args.key, UploadId=upload,
                                    MultipartUpload={"Parts": parts})
head = s3.head_object(Bucket=args.bucket, Key=args.key)
print(json.dumps({"upload_id": upload, "etag": done["ETag"], "size": head["ContentLength"]}))
