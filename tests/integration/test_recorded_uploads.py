"""Checkpoints uploaded to an S3-compatible store (moto's server on
loopback: s3server.py), recorded for real: a producer starts one writer
child per save (fork, forkserver) that uploads it with boto3, as an explicit
multipart upload of 2 parts or through the transfer manager's 4 threads.
`report --json` has one save per writer child with the object's true size,
its parts, its write time and the network/object store as its bound."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest
from helpers import run_writerprof

from writerprof.analysis.saves import NETWORK, bound_by, group_seconds

TARGETS = Path(__file__).parent / "targets"
MIB = 1 << 20
SIZE = 32 * MIB
SAVES = 2
PARTS = {"multipart": 2, "transfer": SIZE // (8 * MIB)}  # s3_writer.py's halves, its transfer's 8 MiB chunks


@pytest.fixture(scope="module", params=[(m, s) for m in ("multipart", "transfer") for s in ("fork", "forkserver")],
                ids=lambda p: "-".join(p))
def recorded(request, s3_server, tmp_path_factory):
    """(mode, the report's JSON, the target's own lines, the store)."""
    mode, method = request.param
    run = tmp_path_factory.mktemp(f"upload-{mode}-{method}") / "run"
    prefix = f"uploads-{uuid.uuid4().hex[:8]}"
    done = run_writerprof("record", "-o", run, "--", sys.executable, TARGETS / "s3_writer.py", s3_server.endpoint,
                          s3_server.bucket, mode, "--method", method, "--saves", SAVES, "--size", SIZE,
                          "--prefix", prefix, env=s3_server.env)
    own = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(own) == SAVES, done.stdout
    return mode, json.loads(run_writerprof("report", "--json", run).stdout), own, s3_server


def test_each_writer_childs_upload_is_its_save_with_the_objects_size(recorded):
    mode, summary, own, store = recorded
    found = summary["saves"]
    assert sorted(s["writer_pid"] for s in found) == sorted(o["pid"] for o in own)
    sizes = store.objects(own[0]["key"].rsplit("/", 1)[0] + "/")
    for s, o in zip(sorted(found, key=lambda s: s["start_ns"]), own):
        assert s["bytes"] == sizes[o["key"]] == SIZE, (s["bytes"], sizes)
        assert s["path"] == f"/{store.bucket}/{o['key']}" and s["parts"] == PARTS[mode]
        upload = s["upload"]
        assert (upload["kind"], upload["status"], upload["mismatches"]) == ("multipart", "ok", [])
        assert upload["sent_bytes"] >= SIZE
        assert s["write_s"] > 0 and s["write_threads_s"] >= s["write_s"]
        # Its writes are the network's and the store's; whether they or a writer's start-up (boto3's
        # imports and client, under forkserver on a loaded machine) took most of the save is the run's.
        assert s["bottleneck"] != "write" and s["bottleneck"] == bound_by(s["critical_path"], upload=True)[0]
        assert group_seconds(s["critical_path"], NETWORK) > 0
    roles = {p["pid"]: p["role"] for p in summary["processes"]}
    assert {roles[o["pid"]] for o in own} == {"writer"}


@pytest.mark.parametrize("client", ["minio", "s3dlio"])
def test_the_benchmarks_other_writers_uploads_are_saves_with_their_parts_in_parallel(client, s3_server, tmp_path):
    """mlpstorage's other object-store writers: minio's client (Python, its parts on 3 threads of its
    own) and s3dlio's (Rust, 4 parts in flight), each part a 5 MiB third of the object."""
    run, prefix = tmp_path / "run", f"{client}-{uuid.uuid4().hex[:8]}"
    size, part = 3 * 5 * MIB, 5 * MIB
    target = ([TARGETS / "minio_writer.py", s3_server.endpoint, s3_server.bucket] if client == "minio"
              else [TARGETS / "s3dlio_writer.py", s3_server.bucket])
    env = dict(s3_server.env, AWS_ENDPOINT_URL=s3_server.endpoint)
    done = run_writerprof("record", "-o", run, "--", sys.executable, *target, prefix, SAVES, size, part, env=env)
    own = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    sizes = s3_server.objects(prefix + "/")
    # record's own summary counts the uploads as saves, and says how many and how much.
    assert f"  saves            {SAVES}" in done.stderr.splitlines()
    assert f"  uploads          {SAVES}, {SAVES * 15}.0 MiB" in done.stderr.splitlines(), done.stderr
    summary = json.loads(run_writerprof("report", "--json", run).stdout)
    found = sorted(summary["saves"], key=lambda s: s["start_ns"])
    assert [s["writer_pid"] for s in found] == [o["pid"] for o in own] and len(own) == SAVES
    for s, o in zip(found, own):
        assert s["bytes"] == sizes[o["key"]] == size and s["parts"] == 3
        assert s["path"] == f"/{s3_server.bucket}/{o['key']}"
        assert (s["upload"]["kind"], s["upload"]["status"], s["upload"]["mismatches"]) == ("multipart", "ok", [])
        assert 0 < s["write_s"] <= s["write_threads_s"]