"""The reproducer under MPI, its pure parts: which launcher started this
process, --mpi against the environment, the aggregate's arithmetic, rank 0's
decision to go on or stop; and that nothing imports mpi4py before `connect`."""

import statistics
import subprocess
import sys

import pytest

from writerprof.errors import UsageError
from writerprof.repro.config import ReproConfig
from writerprof.repro.pipeline import _decide, _emit
from writerprof.repro.ranks import Launch, detect_launch, resolve
from writerprof.repro.results import aggregate_block, aggregate_record, ranks_summary_record

GIB = 1 << 30
HYDRA = {"PMI_RANK": "3", "PMI_SIZE": "4", "PMI_FD": "9", "MPI_LOCALRANKID": "3"}
OPENMPI = {"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "8", "PMIX_RANK": "1"}


@pytest.mark.parametrize("environ, expected", [
    (HYDRA, Launch("mpich", "PMI_RANK", 3, 4)),
    (OPENMPI, Launch("openmpi", "OMPI_COMM_WORLD_RANK", 1, 8)),  # before its PMIX_RANK
    ({"PMIX_RANK": "5"}, Launch("pmix", "PMIX_RANK", 5, None)),  # PMIx exports no size
    ({"PMI_RANK": "0"}, Launch("mpich", "PMI_RANK", 0, None)),
    ({}, None),
    ({"PMI_RANK": "x", "PMI_SIZE": "2"}, None),
    ({"RANK": "1", "WORLD_SIZE": "2", "SLURM_PROCID": "1"}, None),  # not an MPI launcher
])
def test_detect_launch(environ, expected):
    assert detect_launch(environ) == expected


def _importable():
    return True


def _missing():
    return False


def test_resolve_auto():
    assert resolve("auto", {}, _importable) == (None, None)
    assert resolve("auto", HYDRA, _importable) == (Launch("mpich", "PMI_RANK", 3, 4), None)
    launch, warning = resolve("auto", HYDRA, _missing)
    assert launch is None
    assert warning.startswith("writerprof repro: warning: started by an MPI launcher (PMI_RANK=3)"
                              " but mpi4py is not installed: this rank runs alone")


def test_resolve_off_never_joins():
    assert resolve("off", HYDRA, _importable) == (None, None)


def test_resolve_on():
    assert resolve("on", OPENMPI, _importable)[0].launcher == "openmpi"
    with pytest.raises(UsageError, match=r"--mpi on: not started by an MPI launcher"):
        resolve("on", {}, _importable)
    with pytest.raises(UsageError, match=r"--mpi on: mpi4py is not installed"):
        resolve("on", HYDRA, _missing)


def _record(rank, save, nbytes, total_s, startup_s=0.1):
    return {"record": "save", "rank": rank, "host": f"h{rank // 2}", "save": save,
            "start_method": "forkserver", "bytes": nbytes, "total_s": total_s,
            "throughput_gib_s": nbytes / total_s / GIB, "writer_startup_s": startup_s,
            "bottleneck": "I/O"}


def test_aggregate_is_size_over_ranks_over_rank0s_save():
    records = [_record(0, 1, GIB, 2.0), _record(1, 1, GIB, 4.0), _record(2, 1, 2 * GIB, 1.0)]
    aggregate = aggregate_record(records)
    assert aggregate == {
        "record": "aggregate", "save": 1, "ranks": 3, "start_method": "forkserver",
        "bytes": 4 * GIB, "rank0_total_s": 2.0, "throughput_gib_s": 2.0,
        "min_total_s": 1.0, "max_total_s": 4.0, "slowest_rank": 1,
    }


def test_aggregate_needs_rank_0_first_and_one_save():
    with pytest.raises(AssertionError):
        aggregate_record([_record(1, 1, GIB, 1.0), _record(0, 1, GIB, 1.0)])
    with pytest.raises(AssertionError):
        aggregate_record([_record(0, 1, GIB, 1.0), _record(1, 2, GIB, 1.0)])


CONFIG = ReproConfig(
    saves=2, size=GIB, chunk_size=1 << 25, buffers=4, start_method="forkserver",
    generator="fast", gen_threads=1, seed=0, fsync=True, fadvise="none", verify=False,
    directory=None, keep=False, json=True, main_imports=("numpy",), pin_parent=None,
    pin_when="start", writer_cpus=None, touch_cpus=None,
)


def test_summary_is_the_mean_of_the_aggregate_rates():
    records = [_record(0, 1, GIB, 1.0, 0.2), _record(1, 1, GIB, 2.0, 0.4),
               _record(0, 2, GIB, 4.0, 0.6), _record(1, 2, GIB, 1.0, 0.8)]
    aggregates = [aggregate_record(records[:2]), aggregate_record(records[2:])]
    assert [a["throughput_gib_s"] for a in aggregates] == [2.0, 0.5]
    mpi = {"launcher": "mpich", "library": "MPICH Version: 5.0.2", "mpi4py": "4.1.2"}
    summary = ranks_summary_record(aggregates, records, CONFIG, mpi)
    assert summary["saves"] == 2 and summary["ranks"] == 2
    assert summary["bytes"] == 4 * GIB
    assert summary["mean_throughput_gib_s"] == 1.25  # the benchmark's mean of per-save rates
    assert summary["mean_total_s"] == 2.5  # rank 0's saves, the rates' denominators
    assert summary["mean_writer_startup_s"] == pytest.approx(0.5)  # every rank's writers
    assert summary["mpi"] == mpi and summary["main_imports"] == ["numpy"]
    assert summary["per_rank"] == [
        {"rank": 0, "host": "h0", "saves": 2, "mean_throughput_gib_s": statistics.fmean([1, 0.25]),
         "mean_total_s": 2.5, "mean_writer_startup_s": pytest.approx(0.4)},
        {"rank": 1, "host": "h0", "saves": 2, "mean_throughput_gib_s": statistics.fmean([0.5, 1]),
         "mean_total_s": 1.5, "mean_writer_startup_s": pytest.approx(0.6)},
    ]


def test_aggregate_block_has_a_line_per_rank():
    records = [_record(0, 1, GIB, 2.0), _record(1, 1, GIB, 4.0)]
    block = aggregate_block(aggregate_record(records), records, CONFIG)
    assert "AGGREGATE  save 1/2  2 ranks  start method forkserver" in block
    assert "2.0 GiB (1.0 GiB on each of 2 ranks)" in block
    assert "throughput          1.00 GiB/s  (size over rank 0's save)" in block
    assert "     0     2.000     0.50       0.100  I/O         h0" in block
    assert "     1     4.000     0.25       0.100  I/O         h0" in block


@pytest.mark.parametrize("statuses, verdict, said", [
    ([("ok", {}), ("ok", {})], None, ""),
    ([("ok", None), ("failed", "save 1 failed: why")], 1,
     "writerprof repro: rank 1: save 1 failed: why\n"),
    ([("stopped", None), ("failed", "a"), ("failed", "b")], 1,
     "writerprof repro: rank 1: a\nwriterprof repro: rank 2: b\n"),
    ([("interrupted", 2), ("interrupted", 2)], 130, "writerprof repro: interrupted\n"),
    ([("stopped", None), ("interrupted", 15)], 143,
     "writerprof repro: interrupted (a signal on rank 1)\n"),
    ([("stopped", None), ("ok", {})], 1, ""),
])
def test_rank_0_decides_for_every_rank(statuses, verdict, said, capsys):
    assert _decide(statuses) == verdict
    assert capsys.readouterr().err == said


def test_nothing_imports_mpi4py_before_connect():
    # What `writerprof repro` and a writer child import, and the main module
    # that spawn/forkserver children re-run: none of it may initialise MPI.
    code = (
        "import sys, runpy, importlib.util\n"
        "import writerprof.cli, writerprof.commands.repro, writerprof.repro.pipeline\n"
        "import writerprof.repro.writer, writerprof.repro.ranks\n"
        "runpy.run_path(importlib.util.find_spec('writerprof.repro.main').origin,"
        " run_name='__mp_main__')\n"
        "print(sorted(m for m in sys.modules if m.startswith('mpi4py')))\n"
    )
    # From /: with -c the working directory comes first on sys.path, and a source
    # checkout's writerprof (without its installed probes) would shadow the installed one.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                          check=True, env={"PMI_RANK": "0", "PMI_SIZE": "2", "PATH": "/usr/bin"})
    assert done.stdout.strip() == "[]"


def test_a_json_record_is_one_write(monkeypatch):
    # Ranks that share stdout (--mpi off) interleave whole writes: print() would
    # write the newline apart where stdout is unbuffered (PYTHONUNBUFFERED).
    writes = []

    class Stdout:
        def write(self, text):
            writes.append(text)

        def flush(self):
            pass

    monkeypatch.setattr(sys, "stdout", Stdout())
    _emit({"record": "save", "save": 1})
    assert writes == ['{"record": "save", "save": 1}\n']
