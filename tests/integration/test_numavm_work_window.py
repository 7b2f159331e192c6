"""numa-mismatch judged by the work in its window, on a real kernel with two
NUMA nodes (cpu 0 on node 0, cpu 1 on node 1, through ../shared/numavm):
ten recordings of producers and writers placed right (their fill, their
buffers and their writers on one node, their start-up on the other) raise
none; two placed wrong (the buffers on node 0, the fill and the writer on
node 1) are caught. The producers: targets/placed_fill.py, whose fill no
spec names (started on one node with taskset, then bound to the other), and
the reproducer bound after its start-up (--pin-parent). One guest, the
recordings two at a time (facts only: the guest is emulated, its timings
mean nothing; automatic NUMA balancing off, so pages stay where first touch
put them)."""

from __future__ import annotations

import os
import shlex

import numpy as np
import pytest

from writerprof.analysis import threads
from writerprof.analysis.processes import WORKED_FROM_THREADS, dominant, shares
from writerprof.analysis.summary import summarize
from writerprof.run import load

from helpers import TARGETS
from numavm_guest import guest_python, guest_run, run_steps

pytestmark = pytest.mark.numavm

TARGET = os.path.join(TARGETS, "placed_fill.py")
REPRO = ["-m", "writerprof", "repro", "--saves", "2", "--size", "8MiB", "--chunk-size", "2MiB"]


def _fill(startup_cpu: int, fill_cpu: int, writer_cpu: int, *touch: str):
    return lambda python, out: ["taskset", "-c", str(startup_cpu), python, TARGET, str(fill_cpu), str(writer_cpu),
                                out, *touch]


def _repro(*placement: str):
    return lambda python, out: [python, *REPRO, *placement]


# Placed right: name -> (the node of the work and its buffers, the command); each
# node's next to the other's, so that the pairs recorded at once share no CPU.
PLACED = {
    name: placed for i in range(3) for name, placed in (
        (f"fill-on-1-{i}", (1, _fill(0, 1, 1, "--touch-cpu", "1"))),  # start-up on node 0
        (f"fill-on-0-{i}", (0, _fill(1, 0, 0))),  # start-up on node 1; the fill touches the pages first
    )
} | {
    name: placed for i in range(2) for name, placed in (
        (f"repro-on-1-{i}", (1, _repro("--pin-parent", "1", "--touch-cpus", "1", "--writer-cpus", "1"))),
        (f"repro-on-0-{i}", (0, _repro("--pin-parent", "0", "--writer-cpus", "0"))),
    )
}
# Placed wrong: the buffers first touched from cpu 0, the fill and the writer on cpu 1.
MISMATCHED = {
    "fill-away": _fill(1, 1, 1, "--touch-cpu", "0"),
    "repro-away": _repro("--pin-parent", "1", "--touch-cpus", "0", "--writer-cpus", "1"),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """name -> (the run, its summary)."""
    python = guest_python()
    commands = {name: command for name, (_, command) in PLACED.items()} | MISMATCHED
    names = list(commands)
    steps = []
    for pair in (names[i:i + 2] for i in range(0, len(names), 2)):  # two at a time: the guest has two CPUs
        steps.append(" ".join(
            shlex.join([python, "-m", "writerprof", "record", "-o", guest_run(name), "--no-stacks", "--",
                        *commands[name](python, f"/tmp/{name}.bin")]) + f" > /xfer/{name}.log 2>&1 &"
            for name in pair) + " wait")
    xfer = run_steps(tmp_path_factory, "numavm_work_window", steps, balancing=False)
    out = {}
    for name in names:
        assert (xfer / name / "run.json").exists(), (xfer / f"{name}.log").read_text()
        run = load(xfer / name)
        assert run.complete and run.meta["exit_status"] == 0, (name, run.losses, (xfer / f"{name}.log").read_text())
        (host,) = run.topology.values()
        assert sorted(host["nodes"]) == ["0", "1"]  # it really ran on the two-node kernel
        out[name] = (run, summarize(run))
    return out


def _processes(summary, role: str) -> list[dict]:
    return [p for p in summary["processes"] if p["role"] == role]


def _mismatches(summary) -> list[dict]:
    return [d for d in summary["diagnoses"] if d["code"] == "numa-mismatch"]


def test_no_numa_mismatch_in_ten_recordings_placed_right(recorded):
    assert len(PLACED) >= 10
    flagged = {name: [d["message"] for d in _mismatches(recorded[name][1])] for name in PLACED}
    assert flagged == {name: [] for name in PLACED}


@pytest.mark.parametrize("name", list(PLACED))
def test_placed_right_as_meant_and_judged_by_the_work(recorded, name):
    """Each producer's buffers and its work on the node meant, its writers' too."""
    node, _ = PLACED[name]
    _, summary = recorded[name]
    (producer,) = _processes(summary, "producer")
    writers = _processes(summary, "writer")
    assert producer["buffer_nodes"] == {str(node): 1.0}
    assert producer["worked_nodes_from"] == WORKED_FROM_THREADS and producer["worked_nodes"] == {str(node): 1.0}
    assert len(writers) == 2
    for writer in writers:  # (a writer's few short writes may fall between its threads' readings: its calls' CPUs)
        assert writer["buffer_nodes"] == {str(node): 1.0} and writer["worked_nodes"] == {str(node): 1.0}


@pytest.mark.parametrize("name", [name for name in PLACED if name.startswith("fill-")])
def test_over_its_whole_life_the_producer_ran_mostly_on_its_start_up_node(recorded, name):
    """What the old judgement saw: the entry script's start-up, on the other node, outweighs its fill."""
    node, _ = PLACED[name]
    run, summary = recorded[name]
    (producer,) = _processes(summary, "producer")
    life = threads.worked(run, [])[producer["id"]]
    assert dominant(shares(life["nodes"]))[0] == 1 - node


@pytest.mark.parametrize("name", list(MISMATCHED))
def test_a_writer_and_a_fill_away_from_their_buffers_are_still_caught(recorded, name):
    _, summary = recorded[name]
    roles = {p["pid"]: p["role"] for p in summary["processes"]}
    found = _mismatches(summary)
    writers = {p["pid"] for p in _processes(summary, "writer")}
    assert len(writers) == 2 and {d["pid"] for d in found if roles[d["pid"]] == "writer"} == writers
    assert sorted(roles[d["pid"]] for d in found) == ["producer", "writer", "writer"]
    for d in found:
        assert d["evidence"]["run_node"] == 1 and d["evidence"]["buffer_node"] == 0, d["message"]
        assert d["evidence"]["buffer_nodes"] == {"0": 1.0}
