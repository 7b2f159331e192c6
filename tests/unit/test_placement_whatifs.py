"""Pages that move and the placement what-ifs, without a second node: the
kernel's NUMA counters read from fixture trees, their deltas over saves, a
buffer's moved pages between readings, contrast's +local and +first-touch
(not applicable on one node; the cost they give numa-mismatch), and the
probe's first touch from a thread on a chosen node."""

from __future__ import annotations

import os
from multiprocessing import shared_memory
from pathlib import Path

import numpy as np
import pytest

from writerprof.analysis import buffers, contrast, numa_activity
from writerprof.analysis.diagnoses.placement import UNMEASURED
from writerprof.analysis.summary import summarize
from writerprof.commands.contrast import methods_from
from writerprof.probes.writerprof_probe import mitigate, numa, shm
from writerprof.record import vmstat
from writerprof.record.system import System
from writerprof.record.topology import snapshot
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run

from test_procfs import NUMA2, SAMPLE_PID, needs_numa2

PLACEMENT = ["forkserver", "forkserver+local", "forkserver+first-touch"]
VMSTAT = "numa_hit 10\nnuma_miss 2\nnr_free_pages 7\nnuma_pages_migrated 5\npgmigrate_success 5\n"


def _root(tmp_path: Path, files: dict[str, str]) -> System:
    for path, text in files.items():
        (tmp_path / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path.lstrip("/")).write_text(text)
    return System(tmp_path)


@needs_numa2
def test_the_numa_counters_of_the_host_and_of_a_process(tmp_path):
    sched = (NUMA2 / "proc" / SAMPLE_PID / "sched").read_text()
    system = _root(tmp_path, {"/proc/vmstat": VMSTAT, "/proc/sys/kernel/numa_balancing": "1\n",
                              "/proc/42/sched": sched})
    assert vmstat.numa_balancing(system) == 1
    assert vmstat.host_counters(system) == {"numa_hit": 10, "numa_miss": 2, "numa_pages_migrated": 5,
                                            "pgmigrate_success": 5}  # nr_free_pages is no NUMA counter
    assert vmstat.process_counters(system, 42) == {"numa_pages_migrated": 0}
    assert vmstat.process_counters(system, 43) is None  # gone
    assert vmstat.numa_balancing(System(tmp_path / "none")) is None


def test_readings_are_recorded_on_a_slow_tick_and_only_when_they_changed(tmp_path):
    system = _root(tmp_path, {"/proc/vmstat": VMSTAT, "/proc/sys/kernel/numa_balancing": "1\n",
                              "/proc/42/sched": "numa_pages_migrated : 3\ntotal_numa_faults : 9\n"})
    readings = vmstat.Readings(system)
    first = readings.tick(0, [42])
    assert [(r["kind"], r["pid"]) for r in first] == [("vmstat", 0), ("numa_sched", 42)]
    assert readings.tick(1, [42]) == []  # not due
    assert readings.tick(vmstat.SLOW_EVERY_NS, [42]) == []  # due, unchanged
    (tmp_path / "proc/vmstat").write_text(VMSTAT.replace("numa_pages_migrated 5", "numa_pages_migrated 8"))
    (changed,) = readings.tick(2 * vmstat.SLOW_EVERY_NS, [42])
    assert changed["counters"]["numa_pages_migrated"] == 8
    # Balancing off: a process's counters stay at 0 and are not read.
    (tmp_path / "proc/sys/kernel/numa_balancing").write_text("0\n")
    assert [r["kind"] for r in vmstat.Readings(system).tick(0, [42])] == ["vmstat"]


@needs_numa2
def test_the_snapshot_records_numa_balancing(tmp_path):
    assert snapshot(System(NUMA2))["numa_balancing"] is None  # the fixture has no /proc/sys
    assert snapshot(_root(tmp_path, {"/proc/sys/kernel/numa_balancing": "1\n"}))["numa_balancing"] == 1


def test_a_save_delta_runs_from_the_reading_before_it_to_the_first_after():
    series = [(10, {"numa_pages_migrated": 1}), (50, {"numa_pages_migrated": 4}), (90, {"numa_pages_migrated": 9})]
    assert numa_activity.delta(series, 20, 60) == {"numa_pages_migrated": 8}  # 10 -> 90
    assert numa_activity.delta(series, 10, 50) == {"numa_pages_migrated": 3}
    assert numa_activity.delta(series, 95, 99) == {"numa_pages_migrated": 0}  # unchanged since
    assert numa_activity.delta(series, 5, 20) is None  # no reading before its start: not measured


def _moved_pages(readings):
    """buffers.moved on one buffer's readings [(t_ns, mapping, {node: pages}, full)]: its pages moved, or None."""
    nodes = np.zeros((len(readings), 2))
    for i, (_, _, pages, _) in enumerate(readings):
        for node, count in pages.items():
            nodes[i, node] = count
    mapping = {m: k for k, m in enumerate(dict.fromkeys(r[1] for r in readings))}
    found = buffers.moved(np.zeros(len(readings), dtype=np.int64), np.array([r[0] for r in readings]),
                          np.array([mapping[r[1]] for r in readings]), np.array([r[3] for r in readings]), nodes)
    return found[0][1] if found else None


def test_moved_pages_compare_readings_of_one_mapping_or_of_every_page():
    a, b = (1, 0), (2, 0)
    # One mapping: node 0 fell from 100 to 60 while node 1 rose: 40 pages moved.
    assert _moved_pages([(1, a, {0: 100.0}, True), (2, a, {0: 60.0, 1: 40.0}, True)]) == 40
    # Two processes, the second not seeing every page: no comparison, no claim.
    assert _moved_pages([(1, a, {0: 100.0}, True), (2, b, {1: 10.0}, False)]) is None
    # Two processes each seeing every page compare.
    assert _moved_pages([(1, a, {0: 100.0}, True), (2, b, {1: 100.0}, True)]) == 100
    # A mapping filling in (pages faulted in, none leaving): nothing moved.
    assert _moved_pages([(1, a, {}, False), (2, a, {0: 50.0}, False)]) == 0


@pytest.fixture(scope="module")
def mismatched(tmp_path_factory):
    """Plain forkserver with its writers on node 1, their buffers on node 0; and the same on one node."""
    root = tmp_path_factory.mktemp("runs")
    write_run(root / "two", Scenario(start_method="forkserver", buffer_node=0, writer_run_node=1))
    write_run(root / "one", Scenario(start_method="forkserver", nodes=1))
    return {name: summarize(load(root / name)) for name in ("two", "one")}


def test_the_placement_what_ifs_are_methods():
    assert methods_from("forkserver,forkserver+local,forkserver+first-touch") == PLACEMENT
    assert contrast.WHAT_IFS["forkserver+local"] == ("forkserver", "local")
    assert contrast.WHAT_IFS["forkserver+first-touch"] == ("forkserver", "first-touch")
    assert set(contrast.WHAT_IFS.values()) <= {(base, name) for base in ("forkserver",) for name in mitigate.NAMES}


def test_placement_what_ifs_do_not_apply_on_one_node(mismatched):
    reasons = contrast.cannot_apply(mismatched["one"], PLACEMENT)
    assert set(reasons) == {"forkserver+local", "forkserver+first-touch"}
    assert all("one NUMA node (host0)" in r for r in reasons.values())
    assert contrast.cannot_apply(mismatched["two"], PLACEMENT) == {}  # two nodes: both run


def test_numa_mismatch_costs_what_local_won_back(mismatched):
    forkserver = mismatched["two"]
    plain = [d for d in forkserver["diagnoses"] if d["code"] == "numa-mismatch"]
    assert plain and all(d["cost_s"] is None and UNMEASURED in d["message"] for d in plain)
    ran = [{"method": "forkserver+local", "ran": True, "reason": None, "gib_s": 2.0, "recovered_s": 0.25,
            "recovered_share": 0.5},
           {"method": "forkserver+first-touch", "ran": True, "reason": None, "gib_s": 1.5, "recovered_s": 0.1,
            "recovered_share": 0.2}]
    costs = [d for d in contrast.placement_costs(forkserver, ran) if d["code"] == "numa-mismatch"]
    assert len(costs) == len(plain)
    for d in costs:
        assert d["cost_s"] == 0.25 and d["cost_from"] == "forkserver+local"  # +local first
        assert UNMEASURED not in d["message"] and d["message"].endswith("cost measured by forkserver+local")
    # Only +first-touch ran: its figure. None ran: no cost, the message says how to measure it.
    (only,) = {d["cost_s"] for d in contrast.placement_costs(forkserver, ran[1:]) if d["code"] == "numa-mismatch"}
    assert only == 0.1
    for d in contrast.placement_costs(forkserver, []):
        assert d["cost_s"] is None and d["cost_from"] is None and UNMEASURED in d["message"]


class _Journal:
    def __init__(self):
        self.events = []

    def event(self, kind, **fields):
        self.events.append(dict(fields, kind=kind))


@pytest.fixture
def probe(monkeypatch):
    journal = _Journal()
    monkeypatch.setattr(mitigate, "active", set())
    monkeypatch.setattr(mitigate, "_noted", set())
    monkeypatch.setattr(mitigate, "journal", journal)
    monkeypatch.setattr(mitigate, "_hook_status", lambda *args: journal.event("hook", args=args))
    return journal


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to stand for two nodes")
def test_first_touch_touches_every_page_from_the_writers_node(probe, monkeypatch):
    cpus = sorted(os.sched_getaffinity(0))[:2]
    # Two "nodes" of one CPU each: the writer started now would inherit this thread's CPUs, node 1's.
    monkeypatch.setattr(numa, "node_cpus", lambda: {0: {cpus[0]}, 1: {cpus[1]}})
    mitigate.active.add("first-touch")
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpus[1]})
    buffer = shared_memory.SharedMemory(create=True, size=64 * numa.PAGE_SIZE)
    try:
        mitigate.first_touch(buffer)
        (done,) = [e for e in probe.events if e["kind"] == "mitigation"]
        assert done["applied"] and done["node"] == 1 and done["cpus"] == [cpus[1]] and done["buffer"] == buffer.name
        start, end = shm._mapping(buffer)
        found = numa.placement_from_move_pages(start, end)
        assert found["unfaulted"] == 0  # every page touched (and so placed)
        assert bytes(buffer.buf) == bytes(buffer.size)  # and its contents unchanged
    finally:
        os.sched_setaffinity(0, before)
        buffer.unlink()
        buffer.close()


def test_the_placement_what_ifs_say_why_not_on_one_node(probe, monkeypatch):
    monkeypatch.setattr(numa, "node_cpus", lambda: {0: set(os.sched_getaffinity(0))})
    buffer = shared_memory.SharedMemory(create=True, size=numa.PAGE_SIZE)
    try:
        mitigate.first_touch(buffer)
        mitigate._local(type("Process", (), {})())
    finally:
        buffer.unlink()
        buffer.close()
    assert [(e["name"], e["applied"], e["reason"]) for e in probe.events] == [
        ("first-touch", False, "one NUMA node: nowhere else to put the pages"),
        ("local", False, "one NUMA node: nowhere else to run")]


def test_first_touch_is_not_applied_when_the_writer_may_run_on_both_nodes(probe, monkeypatch):
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs to stand for two nodes")
    monkeypatch.setattr(numa, "node_cpus", lambda: {0: {cpus[0]}, 1: {cpus[1]}})
    buffer = shared_memory.SharedMemory(create=True, size=numa.PAGE_SIZE)
    try:
        mitigate.first_touch(buffer)
    finally:
        buffer.unlink()
        buffer.close()
    (event,) = probe.events
    assert not event["applied"] and "may run on nodes 0, 1" in event["reason"]
