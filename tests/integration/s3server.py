"""An S3-compatible store for the tests: moto's server (the test extra's
moto[server]) on loopback, started by the suite itself, one per test
process (session scope; under xdist one per worker), with a bucket made.

The `s3_server` fixture yields an S3Server: its endpoint, its bucket, the
environment a `writerprof` run needs to reach it (moto's dummy credentials,
a region, no AWS config files of the machine's), and a boto3 client of it.
The server is stopped, and waited for, when the session ends."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

import pytest

BUCKET = "writerprof-tests"
ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",  # no credentials: say so, without asking a cloud's metadata service
    # Not the machine's own: a profile or endpoint there must not reach the tests.
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
}
START_S = 60  # moto imports Flask and its whole model of AWS before it listens: seconds, on a loaded machine
TRIES = 3  # a port found free may be taken before the server binds it


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    bucket: str
    env: dict  # os.environ with ENV, for a subprocess

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, region_name=ENV["AWS_DEFAULT_REGION"],
                            aws_access_key_id=ENV["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=ENV["AWS_SECRET_ACCESS_KEY"])

    def objects(self, prefix: str) -> dict[str, int]:
        """Key -> size of every object under prefix (list_objects_v2, all pages)."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents", [])}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(endpoint: str) -> bool:
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy of the machine's
    try:
        with direct.open(endpoint + "/", timeout=5):
            return True
    except urllib.error.HTTPError:  # it answered, if not with 200
        return True
    except OSError:
        return False


def _start(log) -> tuple[subprocess.Popen, str]:
    """moto's server on a free loopback port, answering; its output to log."""
    for _ in range(TRIES):
        port = _free_port()
        endpoint = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                  stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_S
        while server.poll() is None and time.monotonic() < deadline:
            if _answers(endpoint):
                return server, endpoint
            time.sleep(0.1)
        _stop(server)
    log.seek(0)
    raise RuntimeError(f"moto's server (python -m moto.server) did not answer on loopback in {TRIES} tries; "
                       f"it said: {log.read()[-2000:]!r} (is the test extra installed: pip install '.[test]'?)")


def _stop(server: subprocess.Popen) -> None:
    if server.poll() is None:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@contextlib.contextmanager
def serving():
    """A started server with its bucket, stopped on leaving (the fixture's,
    and benchmarks/record_overhead.py's s3 workload's)."""
    with tempfile.TemporaryFile() as log:  # a file, not a pipe: its log never blocks it
        server, endpoint = _start(log)
        try:
            direct = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1"]))  # as _answers
            store = S3Server(endpoint=endpoint, bucket=BUCKET, env=dict(os.environ, **ENV, NO_PROXY=direct))
            store.client().create_bucket(Bucket=BUCKET)
            yield store
        finally:
            _stop(server)


@pytest.fixture(scope="session")
def s3_server():
    with serving() as store:
        yield store
