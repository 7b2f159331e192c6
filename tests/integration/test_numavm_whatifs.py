"""The placement what-ifs on a real two-node kernel (cpu 0 on node 0, cpu 1 on
node 1), through ../shared/numavm, with automatic NUMA balancing on (the
guest's default). The reproducer's producer pins itself to cpu 1 (node 1) and
its buffers are first touched from cpu 0 (node 0), under forkserver: a
writer on node 1 copying from node 0. `+local` must put the writer on node 0,
with its buffers; `+first-touch` must put the buffers' pages on node 1, with
the writer. Facts from the probe's move_pages readings and the sampler, not
timings (the guest is emulated)."""

from __future__ import annotations

import shlex

import pytest

from writerprof.analysis.summary import summarize
from writerprof.run import load, topology

from helpers import attached_placements
from numavm_guest import guest_python, guest_run, run_steps

pytestmark = pytest.mark.numavm

WHAT_IFS = ("local", "first-touch")



@pytest.fixture(scope="module")
def guest_runs(tmp_path_factory):
    python = guest_python()
    steps = ["cat /proc/sys/kernel/numa_balancing > /xfer/numa_balancing"]
    for what_if in WHAT_IFS:
        record = ["env", "WRITERPROF_FORCE_START_METHOD=forkserver", f"WRITERPROF_MITIGATE={what_if}",
                  python, "-m", "writerprof", "record", "-o", guest_run(what_if), "--no-stacks",
                  "--interval", "20ms", "--", python, "-m", "writerprof", "repro", "--saves", "1",
                  "--size", "64MiB", "--pin-parent", "1", "--touch-cpus", "0"]
        steps.append(shlex.join(record))
    xfer = run_steps(tmp_path_factory, "numavm_whatifs", steps, balancing=True)  # as the guest boots
    runs = {name: load(xfer / name) for name in WHAT_IFS}
    runs["numa_balancing"] = (xfer / "numa_balancing").read_text().strip()
    return runs


def _writer_pid(run):
    (start,) = [e["data"] for e in run.events_of("process_start")]
    return start["child_pid"]


def _written(run, writer):
    """The writer's end-of-loop readings of the buffers it copied from (64 MiB: 2 of the 4,
    32 MiB = 8192 pages each, every 17th asked about): their nodes."""
    _, ends = attached_placements(run, writer, "end")
    assert len(ends) == 4
    return [p["nodes"] for p in ends if p["unfaulted"] == 0]


def _mitigations(run, pid=None):
    return [e["data"] for e in run.events_of("mitigation") if pid is None or e["pid"] == pid]


def test_local_puts_the_writer_on_its_buffers_node(guest_runs):
    run = guest_runs["local"]
    assert run.complete and run.meta["exit_status"] == 0, run.losses
    (host,) = run.topology.values()
    nodes = topology.cpu_nodes(host)
    writer = _writer_pid(run)
    # The producer found its buffers on node 0 (touched from cpu 0 before the writer started).
    (parent,) = [m for m in _mitigations(run) if m.get("where") == "parent"]
    assert parent["applied"] and parent["node"] == 0 and parent["by"] == "buffers", parent
    (child,) = _mitigations(run, writer)
    assert child["applied"] and child["node"] == 0 and child["cpus"] == [0] and child["inherited"] == [1], child
    # The buffers stayed on node 0, and the writer wrote every chunk from node 0.
    assert _written(run, writer) == [{"0": 482}] * 2
    unlinked = [e["data"] for e in run.buffer_events("placement") if e["data"]["when"] == "unlink"]
    assert len(unlinked) == 4 and all(p["nodes"] == {"0": p["sampled"]} for p in unlinked)
    writes = run.chunks[(run.chunks["pid"] == writer)
                        & (run.chunks["phase"] == {n: c for c, n in run.phase_names.items()}["write"])]
    assert len(writes) == 2 and {nodes[int(c)] for c in writes["cpu"]} == {0}
    summary = summarize(run)
    roles = {p["pid"]: p["role"] for p in summary["processes"]}
    assert not [d for d in summary["diagnoses"] if d["code"] == "numa-mismatch" and roles[d["pid"]] == "writer"]


def test_first_touch_puts_the_buffers_on_the_writers_node(guest_runs):
    run = guest_runs["first-touch"]
    assert run.complete and run.meta["exit_status"] == 0, run.losses
    (host,) = run.topology.values()
    nodes = topology.cpu_nodes(host)
    writer = _writer_pid(run)
    touched = [m for m in _mitigations(run) if m["name"] == "first-touch"]
    assert len(touched) == 4 and all(m["applied"] and m["node"] == 1 for m in touched), touched  # its 4 buffers
    # Right after creation every page is on node 1, before the reproducer's own touch from cpu 0.
    created = [e["data"] for e in run.buffer_events("placement") if e["data"]["when"] == "create"]
    assert len(created) == 4 and all(p["nodes"] == {"1": p["sampled"]} and p["unfaulted"] == 0 for p in created)
    assert _written(run, writer) == [{"1": 482}] * 2
    writes = run.chunks[(run.chunks["pid"] == writer)
                        & (run.chunks["phase"] == {n: c for c, n in run.phase_names.items()}["write"])]
    assert len(writes) == 2 and {nodes[int(c)] for c in writes["cpu"]} == {1}
    # The producer's reading at unlink, the end of the save, sees them there too.
    unlinked = [e["data"] for e in run.buffer_events("placement") if e["data"]["when"] == "unlink"]
    assert len(unlinked) == 4 and all(p["nodes"] == {"1": p["sampled"]} for p in unlinked)


@pytest.mark.parametrize("name", WHAT_IFS)
def test_numa_counters_are_recorded_per_save_with_balancing_on(guest_runs, name):
    assert guest_runs["numa_balancing"] == "1"
    run = guest_runs[name]
    (host,) = run.topology.values()
    assert host["numa_balancing"] == 1
    readings = [r for r in run.sampled if r["kind"] == "vmstat"]
    assert readings and all("numa_pages_migrated" in r["counters"] for r in readings)
    assert any(r["kind"] == "numa_sched" for r in run.sampled)  # per process, balancing on
    activity = summarize(run)["numa_activity"]
    (save,) = activity["saves"]
    assert save["host_counters"] is not None and "numa_hint_faults" in save["host_counters"]
    assert all(v >= 0 for v in save["host_counters"].values() if v is not None)
    assert save["writer_counters"] is not None and "numa_pages_migrated" in save["writer_counters"]
    (during,) = activity["during_saves"].values()
    assert during is not None and during.keys() == save["host_counters"].keys()
