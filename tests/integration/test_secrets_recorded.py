"""Credentials planted in the environment and on the command line of every
process kind never reach the run directory (gzipped files included) nor any
output made from it."""

from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import pytest

from helpers import run_writerprof

TARGET = Path(__file__).parent / "targets" / "shm_writer.py"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyYW5rMCJ9.c2lnbmF0dXJlLW5vdC1yZWFs"
ENV_SECRETS = {
    "SLURM_JWT": "slurm-jwt-value-0001",
    "SLURM_DB_PW": "db-pw-value-0002",
    "OMPI_MCA_btl_tcp_psk": "psk-value-0003",
    "AWS_SECRET_ACCESS_KEY": "aws-value-0004",
    "SLURM_JOB_COMMENT": JWT,  # an allowed name, a credential's value
    "PMIX_SERVER_URI": "https://alice:url-password-0005@store.example/x",
}
ARGV_SECRETS = ["--password", "argv-password-0006", "--token=argv-token-0007", "secret_key=argv-key-0008"]
PLANTED = [v for v in ENV_SECRETS.values() if "://" not in v] + ["url-password-0005",
                                                                  "argv-password-0006", "argv-token-0007",
                                                                  "argv-key-0008"]


def _everything(directory: Path) -> bytes:
    blobs = []
    for path in directory.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            blobs.append(gzip.decompress(data) if path.suffix == ".gz" else data)
    return b"\n".join(blobs)


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_planted_credentials_are_nowhere(tmp_path, monkeypatch, method):
    for name, value in ENV_SECRETS.items():
        monkeypatch.setenv(name, value)
    run = tmp_path / "run"
    run_writerprof("record", "-o", run, "--", sys.executable, TARGET, method, tmp_path / "out.bin", *ARGV_SECRETS)
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    report = run_writerprof("report", run, "--json").stdout
    run_writerprof("report", run, "--html", outputs / "report.html", "--plots", outputs / "plots")
    run_writerprof("export", run, "--perfetto", outputs / "trace.json")
    recorded = _everything(run)
    assert b"process_start" in recorded and b"stacks" in recorded  # a real recording, stacks included
    assert b"<redacted>" in recorded
    made = _everything(outputs) + report.encode()
    for value in PLANTED:
        assert value.encode() not in recorded, value
        assert value.encode() not in made, value
    for name in ("SLURM_JWT", "SLURM_DB_PW", "OMPI_MCA_btl_tcp_psk", "AWS_SECRET_ACCESS_KEY"):
        assert name.encode() not in recorded, name
    assert os.path.exists(tmp_path / "out.bin")
