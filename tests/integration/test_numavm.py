"""Placement facts on a real kernel with two NUMA nodes (cpu 0 on node 0, cpu 1
on node 1), through ../shared/numavm: `writerprof record` of the reproducer
with its buffers first touched from one node or the other, and its writer
pinned to cpu 1. Facts only: the guest is emulated, its timings mean nothing."""

from __future__ import annotations

import json
import shlex

import pytest

from writerprof.analysis.summary import summarize
from writerprof.run import load, topology

from helpers import attached_placements
from numavm_guest import guest_python, guest_run, run_steps

pytestmark = pytest.mark.numavm

# (name, --touch-cpus): the node that touches the pages first gets them.
RECORDINGS = (("touch0", "0"), ("touch1", "1"))
# A 32 MiB buffer whose pages alternate between the nodes, measured as the probe does.
INTERLEAVED = """
import ctypes, json
from multiprocessing import shared_memory
from writerprof.probes.writerprof_probe import numa
buffer = shared_memory.SharedMemory(create=True, size=32 << 20)
try:
    buffer.buf[:] = b"x" * buffer.size
    start = ctypes.addressof(ctypes.c_char.from_buffer(buffer.buf))
    print(json.dumps(numa.placement_from_move_pages(start, start + buffer.size)))
finally:
    buffer.unlink()
"""



@pytest.fixture(scope="module")
def guest_runs(tmp_path_factory):
    python = guest_python()
    steps = []
    for name, touch in RECORDINGS:
        record = [python, "-m", "writerprof", "record", "-o", guest_run(name), "--no-stacks", "--interval", "20ms",
                  "--", python, "-m", "writerprof", "repro", "--saves", "1", "--size", "128MiB",
                  "--touch-cpus", touch, "--writer-cpus", "1"]
        steps.append(shlex.join(record))
    steps.append(shlex.join(["numactl", "--interleave=0,1", python, "-c", INTERLEAVED]) + " > /xfer/interleaved.json")
    # No automatic NUMA balancing: the pages stay where first touch put them.
    xfer = run_steps(tmp_path_factory, "numavm", steps, balancing=False)
    runs = {name: load(xfer / name) for name, _ in RECORDINGS}
    runs["interleaved"] = json.loads((xfer / "interleaved.json").read_text())
    return runs


def _writer_pid(run):
    (start,) = [e["data"] for e in run.events_of("process_start")]
    return start["child_pid"]


@pytest.mark.parametrize("name, node", [("touch0", "0"), ("touch1", "1")])
def test_buffer_pages_are_on_the_node_that_touched_them(guest_runs, name, node):
    run = guest_runs[name]
    assert run.complete and run.meta["exit_status"] == 0, run.losses
    (host,) = run.topology.values()
    assert sorted(host["nodes"]) == ["0", "1"]  # it really ran on the two-node kernel
    writer = _writer_pid(run)
    attached, ends = attached_placements(run, writer, "end")
    assert len(attached) == len(ends) == 4  # every buffer, measured at the end of the writer's loop
    for placement in ends:
        assert placement["source"] == "move_pages"
        assert placement["nodes"] == {node: placement["sampled"]}, placement
    # The producer created and filled them: its last reading agrees.
    producer_ends = [e["data"] for e in run.buffer_events("placement")
                     if e["pid"] != writer and e["data"]["when"] == "end"]
    assert producer_ends and all(p["nodes"] == {node: p["sampled"]} for p in producer_ends)


def test_sampler_shows_the_pinned_writer_on_node_1(guest_runs):
    run = guest_runs["touch0"]
    (host,) = run.topology.values()
    nodes = topology.cpu_nodes(host)
    writer = _writer_pid(run)
    affinity = [s for s in run.sampled if s["pid"] == writer and s["kind"] == "affinity"]
    assert affinity[-1]["cpus"] == "1"
    # After the tick that saw it pinned itself, every sample has it on node 1 (in
    # that tick its stat, the CPU it last ran on, was read before its status).
    samples = run.samples[(run.samples["pid"] == writer) & (run.samples["t_ns"] > affinity[-1]["t_ns"])]
    assert len(samples) > 0 and {nodes[int(cpu)] for cpu in samples["cpu"]} == {1}
    # The probe's own records say the same: every write ran on cpu 1, node 1.
    writes = run.chunks[(run.chunks["pid"] == writer)
                        & (run.chunks["phase"] == {n: c for c, n in run.phase_names.items()}["write"])]
    assert len(writes) == 4 and {nodes[int(c)] for c in writes["cpu"]} == {1}


def test_a_sample_of_interleaved_pages_sees_both_nodes(guest_runs):
    """The probe asks move_pages about every 17th page of a large buffer; pages
    interleaved over two nodes must still show as half on each."""
    placement = guest_runs["interleaved"]
    assert placement["stride"] == 17 and placement["sampled"] == 482 and placement["unfaulted"] == 0
    assert set(placement["nodes"]) == {"0", "1"}
    assert abs(placement["nodes"]["0"] - placement["nodes"]["1"]) <= 1


def _numa_mismatches(run, role):
    summary = summarize(run)
    roles = {p["pid"]: p["role"] for p in summary["processes"]}
    return [d for d in summary["diagnoses"] if d["code"] == "numa-mismatch" and roles[d["pid"]] == role]


def test_report_names_the_numa_mismatch_of_a_writer_away_from_its_buffers(guest_runs):
    """Buffers first touched from node 0, the writer pinned to cpu 1 (node 1)."""
    (mismatch,) = _numa_mismatches(guest_runs["touch0"], "writer")
    assert mismatch["pid"] == _writer_pid(guest_runs["touch0"])
    assert mismatch["evidence"]["buffer_node"] == 0 and mismatch["evidence"]["buffer_nodes"] == {"0": 1.0}
    assert mismatch["evidence"]["run_node"] == 1 and mismatch["evidence"]["run_nodes"] == {"1": 1.0}
    assert "node 1" in mismatch["message"] and "node 0" in mismatch["message"]


def test_report_finds_no_numa_mismatch_when_writer_and_buffers_share_a_node(guest_runs):
    """Buffers first touched from node 1, the writer pinned to cpu 1: nothing
    to say about the writer (the unpinned producer may still generate from node 0)."""
    assert _numa_mismatches(guest_runs["touch1"], "writer") == []
