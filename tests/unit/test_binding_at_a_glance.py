"""Binding at a glance (mlcommons/storage #201, "is the cpu-bind option set?"):
the probe's reading of a process's memory binding (its numa_maps policy and
Mems_allowed_list, on the files of a real two-node kernel and on written
ones), each rank's CPU and memory binding per host and whether its writers
inherit it (analysis.binding.per_host, on the numa2 fixture topology), and
the report's "binding" lines. Real recordings: tests/integration/
test_binding_glance.py (one node) and test_numavm_binding.py (two)."""

from __future__ import annotations

from pathlib import Path

import pytest

from writerprof.analysis import binding
from writerprof.analysis.shapes import Summary, mismatches
from writerprof.analysis.summary import summarize
from writerprof.probes.writerprof_probe import identity
from writerprof.render.format import host_bindings
from writerprof.render.html import report_html
from writerprof.render.terminal import report_text
from writerprof.run import load
from writerprof.synthetic import Scenario, make_topology, write_run

REAL_NUMA2 = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "numa2" / "proc" / "self-sample"
TOPOLOGY = make_topology()  # two nodes of 8 CPUs: 0-3,8-11 and 4-7,12-15
NODE0, NODE1 = TOPOLOGY["nodes"]["0"]["cpus"], TOPOLOGY["nodes"]["1"]["cpus"]
ALL = sorted(NODE0 + NODE1)
DEFAULT = {"policy": "default", "nodes": None, "allowed": [0, 1]}


def _proc_dir(tmp_path, policy: str, allowed: str) -> str:
    (tmp_path / "numa_maps").write_text(f"55d0c0a00000 {policy} file=/usr/bin/python3.11 mapped=1 N0=1\n"
                                        "55d0c0a01000 default heap anon=3 N0=3\n")
    (tmp_path / "status").write_text(f"Name:\tpython3\nCpus_allowed_list:\t0-15\nMems_allowed_list:\t{allowed}\n")
    return str(tmp_path)


def test_the_probe_reads_the_memory_binding_of_a_real_two_node_kernels_process():
    if not REAL_NUMA2.exists():
        pytest.skip(f"no {REAL_NUMA2}")
    assert identity.memory_binding(str(REAL_NUMA2)) == DEFAULT


@pytest.mark.parametrize("policy, allowed, expected", [
    ("bind:1", "0-1", {"policy": "bind", "nodes": [1], "allowed": [0, 1]}),
    ("interleave=static:0-1", "0-1", {"policy": "interleave", "nodes": [0, 1], "allowed": [0, 1]}),
    ("weighted interleave:0,2", "0-3", {"policy": "weighted interleave", "nodes": [0, 2], "allowed": [0, 1, 2, 3]}),
    ("prefer (many):1,3", "0-3", {"policy": "prefer (many)", "nodes": [1, 3], "allowed": [0, 1, 2, 3]}),
    ("local", "1", {"policy": "local", "nodes": None, "allowed": [1]}),
])
def test_the_probe_reads_each_policy_numa_maps_writes(tmp_path, policy, allowed, expected):
    assert identity.memory_binding(_proc_dir(tmp_path, policy, allowed)) == expected


def test_a_kernel_without_numa_maps_leaves_the_policy_unread(tmp_path):
    (tmp_path / "status").write_text("Mems_allowed_list:\t0\n")
    assert identity.memory_binding(str(tmp_path)) == {"policy": None, "nodes": None, "allowed": [0]}
    assert identity.memory_binding(str(tmp_path / "gone")) == {"policy": None, "nodes": None, "allowed": None}


def _proc(row, role, pid, rank, cpus, memory, host="host0", changes=()):
    return {"id": row, "host": host, "role": role, "pid": pid, "rank": rank, "inherited_cpus": list(cpus),
            "allowed_cpus": list(cpus), "memory": memory, "created_s": float(row),
            "affinity_changes": [{"t_s": t, "cpus": c} for t, c in changes]}


def _save(producer, writer, host="host0"):
    return {"producer": producer, "writer": writer, "host": host}


BIND0 = {"policy": "bind", "nodes": [0], "allowed": [0, 1]}
BIND1 = {"policy": "bind", "nodes": [1], "allowed": [0, 1]}


def _two_ranks():
    """Rank 0 bound to node 0's CPUs and memory, its writer forked (inheriting
    both); rank 1 to node 1's, its writer started by a forkserver daemon that
    was not (all CPUs, default policy)."""
    procs = [_proc(0, "producer", 100, 0, NODE0, BIND0), _proc(1, "writer", 101, 0, NODE0, BIND0),
             _proc(2, "producer", 200, 1, NODE1, BIND1), _proc(3, "writer", 201, 1, ALL, DEFAULT)]
    return procs, [_save(0, 1), _save(2, 3)]


def test_each_ranks_cpus_and_memory_and_whether_its_writers_inherit_them():
    procs, saves = _two_ranks()
    (host,) = binding.per_host(procs, {"host0": TOPOLOGY}, saves)
    assert (host["host"], host["cpus"], host["nodes"]) == ("host0", 16, [0, 1])
    first, second = host["ranks"]
    assert first == {"rank": 0, "pid": 100, "cpus": NODE0, "started_cpus": NODE0, "cpus_bound": True,
                     "cpu_nodes": [0], "memory": BIND0,
                     "memory_bound": True, "writers": 1, "writers_inherit_cpus": True, "writers_inherit_memory": True,
                     "writer_cpus": [], "writer_memory": []}
    assert second["cpu_nodes"] == [1] and second["memory_bound"]
    assert second["writers_inherit_cpus"] is False and second["writer_cpus"] == [ALL]
    assert second["writers_inherit_memory"] is False
    assert second["writer_memory"] == [{"memory": DEFAULT, "bound": False}]


def test_a_rank_that_binds_itself_once_running_is_judged_by_the_cpus_it_had_as_each_writer_started():
    """A rank started unbound that pins itself to node 1 between its first and
    second writer, as --pin-when after-first-writer does: its first writer
    (forked before) inherits the CPUs it had then, its second (from a
    forkserver daemon started before the pin) does not."""
    procs = [_proc(0, "producer", 100, 0, ALL, DEFAULT, changes=[(0.0, ALL), (1.5, NODE1)]),
             _proc(1, "writer", 101, 0, ALL, DEFAULT), _proc(2, "writer", 102, 0, ALL, DEFAULT)]
    (host,) = binding.per_host(procs, {"host0": TOPOLOGY}, [_save(0, 1), _save(0, 2)])
    (rank,) = host["ranks"]
    assert rank["cpus"] == NODE1 and rank["started_cpus"] == ALL and rank["cpus_bound"]
    assert rank["writers_inherit_cpus"] is False and rank["writer_cpus"] == [ALL]
    assert rank["writers_inherit_memory"] is True
    ((_, line),) = host_bindings([host])
    assert line == ("rank 0: CPUs 4-7,12-15 (node 1), set after its start on 0-15, memory unbound; its writers "
                    "started on CPUs 0-15, not its own; they inherit its memory binding")


def test_memory_is_bound_by_a_policy_naming_nodes_or_a_narrower_cpuset():
    assert binding.memory_bound(DEFAULT, [0, 1]) is False
    assert binding.memory_bound({"policy": "local", "nodes": None, "allowed": [0, 1]}, [0, 1]) is False
    assert binding.memory_bound({"policy": "default", "nodes": None, "allowed": [1]}, [0, 1]) is True
    assert binding.memory_bound({"policy": "interleave", "nodes": [0, 1], "allowed": [0, 1]}, [0, 1]) is True
    assert binding.memory_bound(None, [0, 1]) is None  # not recorded
    assert binding.memory_bound({"policy": None, "nodes": None, "allowed": None}, [0, 1]) is None


def test_the_binding_line_says_each_rank_and_what_its_writers_did_not_inherit():
    procs, saves = _two_ranks()
    ((hosts, line),) = host_bindings(binding.per_host(procs, {"host0": TOPOLOGY}, saves))
    assert hosts == "host0"
    assert line == ("rank 0: CPUs 0-3,8-11 (node 0), memory bound to node 0 (its CPUs' node); its writers inherit "
                    "both; rank 1: CPUs 4-7,12-15 (node 1), memory bound to node 1 (its CPUs' node); its writers "
                    "started on CPUs 0-15, not its own; not its memory binding (theirs: unbound)")


def test_many_ranks_are_grouped_by_what_is_alike_and_hosts_alike_share_a_line():
    procs, saves = [], []
    for host in ("node-a", "node-b"):
        for rank in range(8):
            cpus, memory = (NODE0, BIND0) if rank % 2 == 0 else (NODE1, BIND1)
            row = len(procs)
            procs += [_proc(row, "producer", 1000 + row, rank, cpus[:2], memory, host),
                      _proc(row + 1, "writer", 1001 + row, rank, cpus[:2], memory, host)]
            saves.append(_save(row, row + 1, host))
    found = host_bindings(binding.per_host(procs, {"node-a": TOPOLOGY, "node-b": TOPOLOGY}, saves))
    assert found == [("2 hosts (node-a ... node-b)", "ranks 0-7: CPUs bound, 2 each on 1 node, memory bound to 1 "
                      "node each (its CPUs' node); its writers inherit both")]


def test_unbound_ranks_and_a_run_without_memory_readings():
    procs = [_proc(0, "producer", 100, -1, ALL, None), _proc(1, "writer", 101, -1, ALL, None)]
    ((_, line),) = host_bindings(binding.per_host(procs, {"host0": TOPOLOGY}, [_save(0, 1)]))
    assert line == ("pid 100: CPUs unbound (all 16), memory not recorded; its writers inherit its CPUs (their memory "
                    "binding not recorded)")


def test_the_summary_and_both_reports_carry_it(tmp_path):
    write_run(tmp_path / "run", Scenario(producer_cpus="0-3"))  # synthetic: no memory readings (a run from before)
    summary = summarize(load(tmp_path / "run"))
    assert mismatches(summary, Summary) == []
    (host,) = summary["host_binding"]
    assert [r["rank"] for r in host["ranks"]] == [0, 1] and all(r["cpus"] == [0, 1, 2, 3] for r in host["ranks"])
    line = ("binding   host0: ranks 0-1: CPUs 0-3 (node 0), memory not recorded; its writers inherit its CPUs "
            "(their memory binding not recorded)")
    header = report_text(summary).split("\n\n")[0]
    assert " ".join(header.split()).count(" ".join(line.split())) == 1, header
    assert "binding host0" in report_html(summary) and "ranks 0-1: CPUs 0-3 (node 0)" in report_html(summary)
