"""`writerprof record -- mpiexec -n N writerprof repro ...`: every rank, its
forkserver and its writers recorded and tagged with rank, local rank and
host; report and contrast by rank and in aggregate."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from helpers import run_writerprof, writerprof_command
from writerprof.analysis.summary import summarize
from writerprof.run import load

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install 'writerprof[mpi]')")
REPRO = ["repro", "--saves", "2", "--size", "64MiB", "--chunk-size", "16MiB"]


def _record_mpi(tmp_path, ranks: int, method: str) -> Path:
    out = tmp_path / f"run-{ranks}-{method}"
    run_writerprof("record", "-o", out, "--", MPIEXEC, "-n", ranks, *writerprof_command(), *REPRO,
                   "--start-method", method)
    return out


@pytest.mark.parametrize("ranks, method", [(2, "fork"), (2, "forkserver"), (4, "fork"), (4, "forkserver")])
def test_every_rank_and_its_writers_are_recorded_and_tagged(tmp_path, ranks, method):
    run = load(_record_mpi(tmp_path, ranks, method))
    assert run.complete and run.meta["exit_status"] == 0 and not run.losses, run.losses
    summary = summarize(run)
    by_rank: dict[int, list] = {}
    for save in summary["saves"]:
        by_rank.setdefault(save["rank"], []).append(save)
    assert sorted(by_rank) == list(range(ranks)) and all(len(s) == 2 for s in by_rank.values())
    procs = {p["id"]: p for p in summary["processes"]}
    for save in summary["saves"]:
        writer = procs[save["writer"]]
        assert writer["role"] == "writer" and writer["rank"] == save["rank"]
        assert writer["start_method"] == method and save["bytes"] == 64 << 20
        if method == "forkserver":  # the rank's own forkserver started it, tagged with the rank too
            parent = procs[writer["parent"]]
            assert parent["role"] == "forkserver" and parent["rank"] == save["rank"]
    identities = [e["data"] for e in run.events_of("process")]
    ranked = [i for i in identities if i.get("rank") is not None]
    assert {i["world_size"] for i in ranked} == {ranks}
    assert {i["local_rank"] for i in ranked} == set(range(ranks))  # one host: local rank = rank
    assert len(summary["ranks"]) == ranks
    (one,) = [a for a in summary["aggregate"]["saves"] if a["save"] == 1]
    assert one["ranks"] == ranks and one["bytes"] == ranks * (64 << 20)


def test_contrast_under_mpi_explains_per_rank_and_in_aggregate(tmp_path):
    out = tmp_path / "contrast"
    done = run_writerprof("contrast", "--repeat", "1", "-o", out, "--", MPIEXEC, "-n", "2",
                          *writerprof_command(), *REPRO, "--main-imports", "numpy", timeout=400)
    result = json.loads((out / "contrast.json").read_text())
    comparison = result["comparisons"]["forkserver"]
    assert [r["rank"] for r in comparison["per_rank"]] == [0, 1]
    assert comparison["a"]["saves"] == comparison["b"]["saves"] == 4  # 2 ranks x 2 saves
    assert comparison["a"]["aggregate_gib_s"] and comparison["b"]["aggregate_gib_s"]
    assert "Per rank (mean save" in done.stdout and "Aggregate as the benchmark reports it" in done.stdout
    assert done.stdout.startswith("World: 2 of 2 ranks, all recorded; hosts: ")  # every recording whole
    assert not any(r["world"]["partial"] for r in result["runs"]) and "PARTIAL" not in done.stderr
    total = sum(c["diff_s"] for c in comparison["components"]) + comparison["unexplained_s"]
    assert total == pytest.approx(comparison["difference_s"])
