"""The benchmark's native generator, dgen-py, fills each chunk in a thread
pool of its own (Rust threads the probe never sees): recorded with the
reproducer's `--generator dgen`, the producer's CPU time in its generation
is found on those threads, not on the main thread that made the call."""

from __future__ import annotations

import pytest

from writerprof.analysis.processes import WORKED_FROM_THREADS
from writerprof.analysis.summary import summarize
from writerprof.run import load

from helpers import run_writerprof, writerprof_command

pytest.importorskip("dgen_py", reason="dgen-py is not installed (pip install 'writerprof[dgen]')")


def test_dgen_fill_is_seen_on_its_own_threads(tmp_path):
    run_writerprof("record", "-o", tmp_path / "run", "--interval", "10ms", "--no-stacks", "--",
                   *writerprof_command(), "repro", "--generator", "dgen", "--gen-threads", "4",
                   "--saves", "1", "--size", "256MiB", "--dir", tmp_path / "out", timeout=600)
    summary = summarize(load(tmp_path / "run"))
    (producer,) = [p for p in summary["processes"] if p["role"] == "producer"]
    assert producer["worked_nodes_from"] == WORKED_FROM_THREADS
    pool = [t for t in producer["threads"] if not t["main"]]
    assert pool, producer["threads"]  # the generator's threads used CPU inside the producer's gen calls
    assert all(t["tid"] != producer["pid"] and t["cpu_s"] > 0 and t["nodes"] for t in pool)
    # The main thread only waits for them: most of the generation's CPU time is theirs.
    assert sum(t["cpu_s"] for t in pool) > 0.5 * producer["thread_cpu_s"]
