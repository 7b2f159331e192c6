"""--backend s3: the S3 client both sides make, S3's limits on a save's
parts, and the check of the store before the first save.

boto3 is imported only inside these functions: a run with files never
imports it. Credentials and the region are boto3's own (the AWS_*
environment variables, the AWS config files), never the command line's.
"""

from __future__ import annotations

import importlib

from writerprof.errors import UsageError
from writerprof.units import format_size

UPLOADS = ("multipart", "transfer")
TRANSFER_THREADS = 4  # --upload transfer: the transfer manager's upload threads
INSTALL = "pip install 'writerprof[s3]'"
# S3's multipart limits: every part but the last at least MIN_PART, none
# above MAX_PART, at most MAX_PARTS of them. One part is one chunk here.
MIN_PART = 5 << 20
MAX_PART = 5 << 30
MAX_PARTS = 10_000
# The check before the first save: an endpoint that does not answer fails in
# seconds, not after botocore's default minute and retries.
_CHECK = dict(connect_timeout=10, read_timeout=30, retries={"max_attempts": 2})


def client(endpoint: str | None, **config):
    """An S3 client of the endpoint (None: boto3's own); config: botocore's Config."""
    import boto3
    from botocore.config import Config

    return boto3.client("s3", endpoint_url=endpoint, config=Config(**config) if config else None)


def check_parts(size: int, chunk_size: int) -> None:
    """Each chunk is one part: refuse what S3 would refuse mid-save."""
    chunks = -(-size // chunk_size)
    if chunks > 1 and chunk_size < MIN_PART:
        raise UsageError(f"--backend s3: --chunk-size {format_size(chunk_size)} is below S3's smallest part,"
                         f" {format_size(MIN_PART)} (each chunk is one part; only the last may be smaller)")
    if chunk_size > MAX_PART and size > MAX_PART:
        raise UsageError(f"--backend s3: --chunk-size {format_size(chunk_size)} is above S3's largest part,"
                         f" {format_size(MAX_PART)}")
    if chunks > MAX_PARTS:
        raise UsageError(f"--backend s3: --size / --chunk-size makes {chunks} parts; S3 takes at most {MAX_PARTS}")


def check_store(endpoint: str | None, bucket: str) -> None:
    """boto3 is installed, the endpoint answers and the bucket is there
    (and ours to read): else one line saying which."""
    try:
        importlib.import_module("boto3")
    except ImportError as exc:
        raise UsageError(f"--backend s3 needs boto3 ({exc}); install it with: {INSTALL}") from None
    try:
        s3 = client(endpoint, **_CHECK)
    except ValueError as exc:  # boto3's word for an endpoint that is no URL
        raise UsageError(f"--endpoint {endpoint}: {exc}") from None
    try:
        s3.head_bucket(Bucket=bucket)
    except Exception as exc:  # botocore's errors, all of them: each one line below
        raise UsageError(describe(exc, endpoint, bucket)) from None
    finally:
        s3.close()


def describe(exc: Exception, endpoint: str | None, bucket: str) -> str:
    """One line for a failed request to the store."""
    from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, ParamValidationError

    where = endpoint or "AWS"
    if isinstance(exc, NoCredentialsError):
        return ("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE);"
                " they are never taken from the command line")
    if isinstance(exc, ParamValidationError) and "bucket name" in str(exc):
        return f"--bucket {bucket}: not a bucket name (letters, digits, '.', '-' and '_')"
    if isinstance(exc, EndpointConnectionError):
        return f"--endpoint {where}: cannot connect ({exc})"
    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if code in ("404", "NoSuchBucket"):
            return f"--bucket {bucket}: no such bucket at {where}"
        if code in ("403", "AccessDenied"):
            return f"--bucket {bucket}: access denied at {where} (check the credentials)"
    return f"{where}, bucket {bucket}: {' '.join(str(exc).split())}"

