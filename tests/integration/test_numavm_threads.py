"""Placement by the threads that did the work, on a real kernel with two NUMA
nodes (cpu 0 on node 0, cpu 1 on node 1, through ../shared/numavm): a
producer whose main thread waits on cpu 0 while a pool of threads pinned to
cpu 1 fills its buffer (targets/pool_fill.py). The fill is hooked as the
producer's generation, so its hooked calls' CPU is the waiting main thread's.
Facts only: the guest is emulated, its timings mean nothing."""

from __future__ import annotations

import os
import shlex

import pytest

from writerprof.analysis.processes import WORKED_FROM_THREADS
from writerprof.analysis.summary import summarize
from writerprof.run import load

from helpers import TARGETS
from numavm_guest import guest_python, guest_run, run_steps

pytestmark = pytest.mark.numavm

TARGET = os.path.join(TARGETS, "pool_fill.py")
# (name, pool_fill.py arguments): the pool always on cpu 1.
RECORDINGS = (
    # The pool touches the pages first: they are on node 1, with it.
    ("local", ["1", "1", "96", "/tmp/out.bin"]),
    # The main thread touched them first from cpu 0: node 0, away from the pool.
    ("remote", ["1", "0", "96", "/tmp/out.bin", "--pretouch"]),
)


@pytest.fixture(scope="module")
def summaries(tmp_path_factory):
    python = guest_python()
    steps = [shlex.join([python, "-m", "writerprof", "record", "-o", guest_run(name), "--interval", "20ms",
                         "--no-stacks", "--probe", "pool_fill:fill=gen", "--", python, TARGET, *args])
             for name, args in RECORDINGS]
    # No balancing: the pages stay where first touch put them.
    xfer = run_steps(tmp_path_factory, "numavm_threads", steps, balancing=False)
    out = {}
    for name, _ in RECORDINGS:
        run = load(xfer / name)
        assert run.complete and run.meta["exit_status"] == 0, run.losses
        (host,) = run.topology.values()
        assert sorted(host["nodes"]) == ["0", "1"]  # it really ran on the two-node kernel
        out[name] = summarize(run)
    return out


def _producer(summary) -> dict:
    (producer,) = [p for p in summary["processes"] if p["role"] == "producer"]
    return producer


def _mismatches(summary, role) -> list[dict]:
    roles = {p["pid"]: p["role"] for p in summary["processes"]}
    return [d for d in summary["diagnoses"] if d["code"] == "numa-mismatch" and roles[d["pid"]] == role]


def _pool(threads) -> list[dict]:
    return [t for t in threads if (t["name"] or "").startswith("fill-")]


def test_a_pool_filling_on_the_buffers_node_is_no_mismatch(summaries):
    summary = summaries["local"]
    producer = _producer(summary)
    assert producer["buffer_nodes"] == {"1": 1.0}
    # Its hooked fill ran on the waiting main thread's node; the work was the pool's, on node 1.
    assert next(iter(producer["work_nodes"])) == "0"
    assert producer["worked_nodes_from"] == WORKED_FROM_THREADS
    assert next(iter(producer["worked_nodes"])) == "1" and producer["worked_nodes"]["1"] >= 0.6
    pool = _pool(producer["threads"])
    assert pool and all(next(iter(t["nodes"])) == "1" for t in pool)
    assert _mismatches(summary, "producer") == []


def test_a_pool_filling_away_from_the_buffers_node_is_a_mismatch_naming_its_threads(summaries):
    summary = summaries["remote"]
    producer = _producer(summary)
    assert producer["buffer_nodes"] == {"0": 1.0}
    (mismatch,) = _mismatches(summary, "producer")
    evidence = mismatch["evidence"]
    assert evidence["run_node"] == 1 and evidence["buffer_node"] == 0
    assert evidence["from"] == WORKED_FROM_THREADS
    assert next(iter(evidence["calls_nodes"])) == "0"  # the second source: the main thread's calls
    pool = _pool(evidence["threads"])
    assert pool and all(t["cpu_s"] > 0 and next(iter(t["nodes"])) == "1" for t in pool)
    assert sum(t["cpu_s"] for t in pool) >= 0.6 * sum(t["cpu_s"] for t in evidence["threads"])
    assert "fill-" in mismatch["message"]
