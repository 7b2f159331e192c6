"""`writerprof repro --backend s3` against moto's S3 server on loopback
(s3server.py): each save is one object, uploaded by the writer with an
explicit multipart upload or boto3's transfer manager, under fork or (the
backend's default) forkserver; what repro reports is what the store holds;
bad input is one line; `record` runs it; `contrast` passes the backend on."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest
from helpers import repro_records, run_writerprof, writerprof_command

from writerprof.repro.generators import make_generator

MIB = 1 << 20
SIZE, CHUNK, SAVES = 12 * MIB, 6 * MIB, 2
SMALL = ["--saves", SAVES, "--size", "12MiB", "--chunk-size", "6MiB"]
SEED = 7


def _s3(server, prefix, *more) -> list:
    return ["--backend", "s3", "--endpoint", server.endpoint, "--bucket", server.bucket, "--prefix", prefix, *more]


def _key(server, record) -> str:
    return record["path"].removeprefix(f"s3://{server.bucket}/")


def _expected(save: int) -> bytes:
    """Save `save`'s bytes as the fast generator makes them (seed SEED)."""
    generator = make_generator("fast", SEED, 1, SIZE, CHUNK)
    out = bytearray(SIZE)
    for chunk in range(SIZE // CHUNK):
        with memoryview(out)[chunk * CHUNK:(chunk + 1) * CHUNK] as view:
            generator.fill(view, save, chunk)
    return bytes(out)


def _one_error_line(done) -> str:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert done.stdout == ""
    return lines[0]


@pytest.mark.parametrize("upload, method", [("multipart", None), ("multipart", "fork"),
                                            ("transfer", None), ("transfer", "fork")])
def test_each_save_is_one_object_of_its_size_in_a_part_per_chunk(s3_server, upload, method):
    prefix = f"repro-{uuid.uuid4().hex}"
    chosen = ["--start-method", method] if method else []
    saves, summary = repro_records(*SMALL, *_s3(s3_server, prefix, "--upload", upload), *chosen, "--keep",
                                   "--verify", "--seed", SEED, env=s3_server.env)
    expected_method = method or "forkserver"  # the object store's default
    assert [s["start_method"] for s in saves] == [expected_method] * SAVES
    assert summary["backend"] == "s3" and summary["upload"] == upload and summary["start_method"] == expected_method
    objects = s3_server.objects(prefix + "/")
    assert sorted(objects) == sorted(_key(s3_server, s) for s in saves) and set(objects.values()) == {SIZE}, objects
    client = s3_server.client()
    for record in saves:
        key = _key(s3_server, record)
        assert key.endswith(f"-save{record['save']:03d}.dat"), key
        assert record["bytes"] == SIZE and record["chunks"] == record["parts"] == SIZE // CHUNK
        assert client.head_object(Bucket=s3_server.bucket, Key=key, PartNumber=1)["PartsCount"] == SIZE // CHUNK
        # The upload's seconds are its own, and with 4 threads not their sum beyond the save's.
        assert record["write_s"] > 0 and record["close_s"] > 0 and record["fsync_s"] == 0
        assert record["open_s"] > 0 and record["io_s"] < record["total_s"]
    first = next(s for s in saves if s["save"] == 1)
    assert client.get_object(Bucket=s3_server.bucket, Key=_key(s3_server, first))["Body"].read() == _expected(1)


def test_without_keep_no_object_is_left(s3_server):
    prefix = f"repro-{uuid.uuid4().hex}"
    saves, _ = repro_records(*SMALL, *_s3(s3_server, prefix), env=s3_server.env)
    assert [s["bytes"] for s in saves] == [SIZE] * SAVES
    assert s3_server.objects(prefix + "/") == {}


@pytest.mark.parametrize("args, expected", [
    (["--backend", "s3", "--endpoint", "http://127.0.0.1:1", "--bucket", "BUCKET"],
     "--endpoint http://127.0.0.1:1: cannot connect"),
    (["--backend", "s3", "--endpoint", "ENDPOINT", "--bucket", "no-such-bucket-here"],
     "--bucket no-such-bucket-here: no such bucket at"),
    (["--backend", "s3", "--endpoint", "ENDPOINT", "--bucket", "BUCKET", "--chunk-size", "4MiB"],
     "--chunk-size 4.0 MiB is below S3's smallest part, 5.0 MiB"),
    (["--backend", "s3", "--endpoint", "not-a-url", "--bucket", "BUCKET"], "--endpoint not-a-url: Invalid endpoint"),
    (["--backend", "s3", "--endpoint", "ENDPOINT"], "--backend s3 needs --bucket"),
    (["--backend", "s3", "--endpoint", "ENDPOINT", "--bucket", "BUCKET", "--dir", "/tmp"],
     "--dir: only with --backend file"),
    (["--bucket", "BUCKET"], "--bucket: only with --backend s3"),
])
def test_bad_store_input_is_one_line(s3_server, args, expected):
    given = [{"ENDPOINT": s3_server.endpoint, "BUCKET": s3_server.bucket}.get(a, a) for a in args]
    done = run_writerprof("repro", "--saves", 1, "--size", "12MiB", *given, check=False, env=s3_server.env)
    line = _one_error_line(done)
    assert line.startswith("writerprof repro: error: ") and expected in line, line


def test_no_credentials_and_no_boto3_are_one_line_each(s3_server, tmp_path):
    uncredentialed = {k: v for k, v in s3_server.env.items()
                      if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")}
    shadow = tmp_path / "shadow" / "boto3"  # what an interpreter without boto3 says on its import
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'boto3'\")\n")
    without_boto3 = dict(s3_server.env, PYTHONPATH=os.pathsep.join(
        filter(None, [str(shadow.parent), os.environ.get("PYTHONPATH")])))
    for env, expected in ((uncredentialed, "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
                          (without_boto3, "--backend s3 needs boto3 (No module named 'boto3'); install it with:"
                                          " pip install 'writerprof[s3]'")):
        done = run_writerprof("repro", *SMALL, *_s3(s3_server, "none"), check=False, env=env)
        assert _one_error_line(done).startswith(f"writerprof repro: error: {expected}"), done.stderr


def test_a_recorded_upload_run_completes_and_loads(s3_server, tmp_path):
    run = tmp_path / "run"
    prefix = f"repro-{uuid.uuid4().hex}"
    done = run_writerprof("record", "-o", run, "--", *writerprof_command(), "repro", "--json", *SMALL,
                          *_s3(s3_server, prefix, "--upload", "transfer"), env=s3_server.env)
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert [r["bytes"] for r in records if r["record"] == "save"] == [SIZE] * SAVES, done.stdout
    assert run_writerprof("report", run).returncode == 0


def test_contrast_passes_the_backend_to_the_reproducer(s3_server, tmp_path):
    out = tmp_path / "contrast"
    done = run_writerprof("contrast", "--repeat", 1, "-o", out, "--backend", "s3", "--endpoint",
                          "http://127.0.0.1:1", "--bucket", s3_server.bucket, check=False, env=s3_server.env)
    assert done.returncode == 1, done.stderr
    assert f"--backend s3 --endpoint http://127.0.0.1:1 --bucket {s3_server.bucket}" in done.stderr
    (log,) = Path(out, "runs").glob("*/output.log")
    assert "--endpoint http://127.0.0.1:1: cannot connect" in log.read_text()


def test_contrast_refuses_the_backend_beside_a_command(tmp_path):
    done = run_writerprof("contrast", "-o", tmp_path / "c", "--backend", "s3", "--bucket", "b", "--", "true",
                          check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "writerprof contrast: error: --backend s3 --bucket b: the built-in reproducer's options; with CMD,"
        " give them to CMD"]
