"""Credentials planted in the environment and on the command line of every
process kind (main, fork, forkserver and spawn writers, MPI ranks), and
credentials of every shape (tests/unit/secret_shapes.py) in argv, in shell
strings, in a process that outlives CMD and in allowed variables, never
reach the run directory (gzipped files included) nor any output made from
it: record's own, report text/--json/--html/--plots, plot, flame, both
exports."""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from writerprof.run import load

from helpers import run_writerprof

TARGET = Path(__file__).parent / "targets" / "shm_writer.py"
SHAPES_TARGET = Path(__file__).parent / "targets" / "secret_shapes.py"
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


MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable))


@pytest.mark.parametrize("method,ranks", [("fork", 0), ("forkserver", 0), ("spawn", 0), ("forkserver", 2)])
def test_planted_credentials_are_nowhere(tmp_path, monkeypatch, method, ranks):
    """In a main process and its writer under each start method, and in the MPI ranks of one."""
    if ranks and MPIEXEC is None:
        pytest.skip("no mpiexec (pip install 'writerprof[mpi]')")
    for name, value in ENV_SECRETS.items():
        monkeypatch.setenv(name, value)
    run = tmp_path / "run"
    launcher = [MPIEXEC, "-n", str(ranks)] if ranks else []
    run_writerprof("record", "-o", run, "--", *launcher, sys.executable, TARGET, method, tmp_path / "out.bin",
                   *ARGV_SECRETS)
    if ranks:
        ranked = {e["data"].get("rank") for e in load(run).events_of("process")}
        assert set(range(ranks)) <= ranked  # every rank was probed
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    report = run_writerprof("report", run, "--json").stdout
    run_writerprof("report", run, "--html", outputs / "report.html", "--plots", outputs / "plots")
    run_writerprof("plot", run, "-o", outputs / "plot")
    run_writerprof("export", run, "--perfetto", outputs / "trace.json")
    # py-spy may catch none of a target this short: then these two say so in one line.
    for args in (("flame", run, "--role", "all", "-o", outputs / "flame"),
                 ("export", run, "--speedscope", outputs / "stacks.json")):
        done = run_writerprof(*args, check=False)
        assert done.returncode == 0 or "has no stacks" in done.stderr, done.stderr
    recorded = _everything(run)
    assert b"process_start" in recorded  # a real recording
    assert b"<redacted>" in recorded
    made = _everything(outputs) + report.encode()
    for value in PLANTED:
        assert value.encode() not in recorded, value
        assert value.encode() not in made, value
    for name in ("SLURM_JWT", "SLURM_DB_PW", "OMPI_MCA_btl_tcp_psk", "AWS_SECRET_ACCESS_KEY"):
        assert name.encode() not in recorded, name
    assert os.path.exists(tmp_path / "out.bin")


def _shapes():
    path = Path(__file__).parents[1] / "unit" / "secret_shapes.py"
    spec = importlib.util.spec_from_file_location("secret_shapes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _outputs(run: Path, outputs: Path) -> bytes:
    """Every output made from the run: files and what the commands printed."""
    outputs.mkdir()
    printed = [run_writerprof("report", run).stdout, run_writerprof("report", run, "--json").stdout,
               run_writerprof("report", run, "--html", outputs / "report.html", "--plots", outputs / "plots").stdout,
               run_writerprof("plot", run, "-o", outputs / "plot").stdout,
               run_writerprof("export", run, "--perfetto", outputs / "trace.json").stdout]
    for args in (("flame", run, "--role", "all", "-o", outputs / "flame"),
                 ("export", run, "--speedscope", outputs / "stacks.json")):
        done = run_writerprof(*args, check=False)
        assert done.returncode == 0, done.stderr  # stacks were taken: both must be made
        printed += [done.stdout, done.stderr]
    assert (outputs / "flame.svg").exists() and (outputs / "plot" / "chunk_timeline.svg").exists()
    return _everything(outputs) + "\n".join(printed).encode()


@pytest.mark.parametrize("stacks_by", ["probe", "py-spy"])
def test_no_credential_of_any_shape_is_left_anywhere(tmp_path, monkeypatch, stacks_by):
    """One recording carries every shape at once: in CMD's argv (the rows one
    after another, each after a `-- python3` that ends the one before), in a
    bash -c child's shell string and its Python child's argv, in a child that
    outlives CMD, and in allowed environment variables."""
    shapes = _shapes()
    for name, value, _ in shapes.ENV:
        monkeypatch.setenv(name, value)
    rows = [word for argv, _ in shapes.ARGV for word in ["--", "python3", *argv]]
    secrets = [s for _, row in shapes.ARGV for s in row] + [s for _, _, row in shapes.ENV for s in row]
    run, pid_file = tmp_path / "run", tmp_path / "outliving.pid"
    done = run_writerprof("record", "-o", run, "--stacks-by", stacks_by, "--", sys.executable, SHAPES_TARGET,
                          tmp_path / "out.bin", pid_file, *rows)
    try:
        recorded = _everything(run)
        meta = load(run).meta
        assert [p["pid"] for p in meta["outlived_cmd"]] == [int(pid_file.read_text())]
        assert meta["stacks"]["taken"]
        made = _outputs(run, tmp_path / "outputs") + (done.stdout + done.stderr).encode()
    finally:
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)
        except ProcessLookupError:
            pass
    (shell,) = [seen["cmdline"] for file in run.glob("hosts/*/sampled.jsonl") for seen in map(json.loads, file.open())
                if seen["kind"] == "seen" and seen["exe"].endswith("/bash")]
    assert shell[:2] == ["bash", "-c"] and "sshpass -p <redacted> ssh" in shell[2]  # sampled, redacted in place
    assert [name for name, _, _ in shapes.ENV if name.encode() not in recorded] == []  # recorded, redacted
    assert [s for s in secrets if s.encode() in recorded] == []
    assert [s for s in secrets if s.encode() in made] == []
