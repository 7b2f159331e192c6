"""Placement across ranks compared by shape, not by CPU number: Slurm's
one core per task (srun --cpu-bind=cores, map_cpu:1,0) is alike on every
rank; ranks bound to different numbers of CPUs or cores, writers off their
CPUs' node, buffers away from the writers, bound beside unbound, differ, and
the report says how; bound ranks given the same CPU share it. On topologies
read from kernel files: a real two-node guest's (shared/fixtures/numa2, one
CPU per node), the same made one-node, and the generated two-socket SMT
machine of tests/fixtures/sysroots/numa2."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from writerprof.analysis.binding import launcher_binding
from writerprof.analysis.ranks import placement_consistency
from writerprof.analysis.summary import summarize
from writerprof.record.system import System
from writerprof.record.topology import snapshot
from writerprof.render.format import placement
from writerprof.render.html import report_html
from writerprof.render.terminal import report_text
from writerprof.run import load
from writerprof.synthetic import Scenario, write_run

REAL_NUMA2 = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "numa2"
SMT_NUMA2 = Path(__file__).resolve().parents[1] / "fixtures" / "sysroots" / "numa2"  # CPU N and N+8 one core

pytestmark = pytest.mark.skipif(not REAL_NUMA2.is_dir(),
                                reason=f"no files read off a real two-node kernel at {REAL_NUMA2}")

ALIKE_ONE_CPU = ("the same on every rank of each host: bound to 1 CPU (1 core, 1 node), writers on their "
                 "CPUs' nodes, buffers on the writers' node")


@pytest.fixture(scope="module")
def numa2():
    """Two nodes: CPU 0 on node 0, CPU 1 on node 1."""
    return snapshot(System(REAL_NUMA2))


@pytest.fixture(scope="module")
def numa1(tmp_path_factory):
    """The real guest's files as a kernel shows them with one node: CPUs 0 and 1 on node 0."""
    root = tmp_path_factory.mktemp("numa1")
    shutil.copytree(REAL_NUMA2, root, dirs_exist_ok=True)
    node = root / "sys/devices/system/node"
    shutil.rmtree(node / "node1")
    for name in ("online", "possible", "has_cpu", "has_memory"):
        (node / name).write_text("0\n")
    (node / "node0/cpulist").write_text("0-1\n")
    (node / "node0/cpumap").write_text("3\n")
    (node / "node0/distance").write_text("10\n")
    topology = snapshot(System(root))
    assert {n: info["cpus"] for n, info in topology["nodes"].items()} == {"0": [0, 1]}
    return topology


@pytest.fixture(scope="module")
def smt16():
    """16 CPUs on 2 nodes, 2 threads a core: node 0 CPUs 0-3,8-11, node 1 CPUs 4-7,12-15."""
    return snapshot(System(SMT_NUMA2))


def _writer(rank, cpus, worked=None, buffers=None, host="a"):
    """A writer's row of the process table, as much of it as placement reads."""
    return {"role": "writer", "host": host, "rank": rank, "allowed_cpus": list(cpus), "inherited_cpus": list(cpus),
            "worked_nodes": {} if worked is None else {str(worked): 1.0},
            "buffer_nodes": {} if buffers is None else {str(buffers): 1.0}}


def _local(rank, cpus, node, writers=1, host="a"):
    """A rank's writers working on `node` with its buffers there."""
    return [_writer(rank, cpus, node, node, host) for _ in range(writers)]


def _consistency(topology, *writers, **topologies):
    return placement_consistency([w for group in writers for w in group], {"a": topology, **topologies})


# --- alike -------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", [[0, 1], [1, 0]], ids=["cpu-bind=cores", "map_cpu:1,0"])
def test_one_cpu_of_its_own_per_rank_on_two_nodes_is_alike(numa2, layout):
    found = _consistency(numa2, *(_local(rank, [cpu], cpu, writers=3) for rank, cpu in enumerate(layout)))
    assert found["consistent"] and found["hosts_alike"]
    host = found["hosts"]["a"]
    assert host["differs"] == [] and host["shared"] == []
    # Each rank's own CPU and node stay in the summary: is cpu-bind set as meant.
    assert [(r["rank"], r["cpus"], r["nodes"], r["writers"]) for r in host["ranks"]] == [
        (0, [layout[0]], [layout[0]], 3), (1, [layout[1]], [layout[1]], 3)]
    assert placement(found) == ALIKE_ONE_CPU


def test_one_cpu_of_its_own_per_rank_on_one_node_is_alike(numa1):
    found = _consistency(numa1, _local(0, [0], 0), _local(1, [1], 0))
    assert found["consistent"] and placement(found) == ALIKE_ONE_CPU


def test_one_core_of_two_threads_per_rank_is_alike(smt16):
    """srun --cpu-bind=cores with SMT: each task both threads of a core, two ranks per node."""
    cores = {0: [0, 8], 1: [1, 9], 2: [4, 12], 3: [5, 13]}
    found = _consistency(smt16, *(_local(rank, cpus, rank // 2) for rank, cpus in cores.items()))
    assert found["consistent"], found
    assert {r["rank"]: r["cpus"] for r in found["hosts"]["a"]["ranks"]} == cores
    assert placement(found).startswith("the same on every rank of each host: bound to 2 CPUs (1 core, 1 node),")


def test_unbound_ranks_are_alike(numa2):
    found = _consistency(numa2, _local(0, [0, 1], 0), _local(1, [0, 1], 0))
    assert found["consistent"] and found["hosts"]["a"]["shared"] == []  # the whole host is no sharing
    assert placement(found).startswith("the same on every rank of each host: unbound (all 2 CPUs),")


# --- different shapes ----------------------------------------------------------------------------


def test_one_cpu_against_two(numa1):
    found = _consistency(numa1, _local(0, [0], 0), _local(1, [0, 1], 0))
    assert not found["consistent"] and found["hosts"]["a"]["differs"] == ["binding"]
    assert placement(found) == "DIFFERS between ranks: a: bound to 1 CPU (1 core, 1 node) on rank 0 vs unbound (all " \
                               "2 CPUs) on rank 1"


def test_two_threads_of_one_core_against_two_cores(smt16):
    """As many CPUs, not as many cores: rank 1 got two of node 0's cores, a thread of each."""
    found = _consistency(smt16, _local(0, [0, 8], 0), _local(1, [1, 2], 0), _local(2, [4, 12], 1))
    assert found["hosts"]["a"]["differs"] == ["binding"] and found["hosts"]["a"]["shared"] == []
    assert placement(found) == ("DIFFERS between ranks: a: bound to 2 CPUs (1 core, 1 node) on ranks 0,2 vs bound "
                                "to 2 CPUs (2 cores, 1 node) on rank 1")


def test_one_cpu_against_two_on_two_nodes(smt16):
    found = _consistency(smt16, _local(0, [0], 0), _local(1, [1, 4], 0), _local(2, [5], 1))
    assert placement(found) == ("DIFFERS between ranks: a: bound to 1 CPU (1 core, 1 node) on ranks 0,2 vs bound to "
                                "2 CPUs (2 cores, 2 nodes) on rank 1")


def test_buffers_away_from_one_ranks_writers(numa2):
    """Rank 0's buffers on node 1 while its writer works on node 0; rank 1's where its writer is."""
    found = _consistency(numa2, [_writer(0, [0], worked=0, buffers=1)], _local(1, [1], 1))
    assert found["hosts"]["a"]["differs"] == ["buffers"]
    assert placement(found) == ("DIFFERS between ranks: a: buffers on another node than the writers' on rank 0 vs "
                                "buffers on the writers' node on rank 1")


def test_a_writer_off_its_cpus_node(numa2):
    """Rank 1's writer allowed CPU 1 (node 1) but measured at work on node 0 (its mask changed after it started)."""
    found = _consistency(numa2, _local(0, [0], 0), [_writer(1, [1], worked=0, buffers=0)])
    assert found["hosts"]["a"]["differs"] == ["writers"]
    assert "a: writers on their CPUs' nodes on rank 0 vs writers off their CPUs' nodes on rank 1" in placement(found)


def test_bound_and_unbound_ranks_and_writers_not_measured(numa2):
    found = _consistency(numa2, _local(0, [0], 0), [_writer(1, [0, 1])])
    assert found["hosts"]["a"]["differs"] == ["binding", "writers", "buffers"]
    text = placement(found)
    assert "bound to 1 CPU (1 core, 1 node) on rank 0 vs unbound (all 2 CPUs) on rank 1" in text
    assert "writers on their CPUs' nodes on rank 0 vs writers' node not measured on rank 1" in text


def test_two_kinds_of_writer_in_one_rank(numa2):
    """Rank 1's later writer was pinned elsewhere: its rank is under both kinds."""
    found = _consistency(numa2, _local(0, [0], 0), _local(1, [1], 1) + [_writer(1, [0, 1], 1, 1)])
    assert [(r["rank"], r["cpus"]) for r in found["hosts"]["a"]["ranks"]] == [(0, [0]), (1, [0, 1]), (1, [1])]
    assert placement(found) == ("DIFFERS between ranks: a: bound to 1 CPU (1 core, 1 node) on ranks 0-1 vs unbound "
                                "(all 2 CPUs) on rank 1")


# --- shared CPUs ---------------------------------------------------------------------------------


def test_two_ranks_on_one_cpu_share_it(numa1):
    found = _consistency(numa1, _local(0, [0], 0), _local(1, [0], 0))
    assert not found["consistent"] and found["hosts"]["a"]["differs"] == []
    assert found["hosts"]["a"]["shared"] == [{"cpus": [0], "ranks": [0, 1]}]
    assert placement(found) == "CPUs SHARED: ranks 0-1 on a share CPU 0; otherwise " + ALIKE_ONE_CPU


def test_two_of_four_ranks_share_a_core(smt16):
    found = _consistency(smt16, _local(0, [0, 8], 0), _local(1, [0, 8], 0), _local(2, [4, 12], 1),
                         _local(3, [5, 13], 1))
    assert found["hosts"]["a"]["shared"] == [{"cpus": [0, 8], "ranks": [0, 1]}]
    assert placement(found).startswith("CPUs SHARED: ranks 0-1 on a share CPU 0,8; otherwise the same")


def test_shapes_and_sharing_per_host(numa2):
    """Host a alike; host b: ranks 2 and 3 share CPU 1, rank 4 has both."""
    found = _consistency(numa2, _local(0, [0], 0), _local(1, [1], 1), _local(2, [1], 1, host="b"),
                         _local(3, [1], 1, host="b"), _local(4, [0, 1], 1, host="b"), b=numa2)
    assert found["hosts"]["a"]["differs"] == [] and found["hosts"]["b"]["differs"] == ["binding"]
    assert placement(found) == ("DIFFERS between ranks: b: bound to 1 CPU (1 core, 1 node) on ranks 2-3 vs unbound "
                                "(all 2 CPUs) on rank 4; CPUs SHARED: ranks 2-3 on b share CPU 1")


def test_hosts_of_different_topologies(numa1, numa2):
    found = _consistency(numa2, _local(0, [0], 0), _local(1, [1], 1), _local(2, [0], 0, host="b"),
                         _local(3, [1], 0, host="b"), b=numa1)
    assert found["consistent"] and not found["hosts_alike"]
    assert placement(found) == ALIKE_ONE_CPU + "; the hosts' topologies differ"


def test_the_launchers_binding_uses_the_same_rule(numa1):
    """A producer is bound by the launcher where its CPUs are fewer than its host's, as a rank's shape is."""
    procs = [{"role": "producer", "host": "a", "rank": rank, "pid": 10 + rank, "inherited_cpus": cpus}
             for rank, cpus in enumerate([[0], [0, 1]])] + _local(0, [0], 0) + _local(1, [0, 1], 0)
    assert [b["rank"] for b in launcher_binding(procs, {"a": numa1})] == [0]
    shapes = {r["rank"]: r["shape"]["bound"] for r in placement_consistency(procs, {"a": numa1})["hosts"]["a"]["ranks"]}
    assert shapes == {0: True, 1: False}


# --- in the report -------------------------------------------------------------------------------


def _report(tmp_path, topology, overrides):
    write_run(tmp_path / "run", Scenario(topology=topology, overrides=overrides, saves=2, chunks_per_save=4))
    summary = summarize(load(tmp_path / "run"))
    return summary, report_text(summary), report_html(summary, {})


def test_the_report_of_slurms_one_core_per_task(tmp_path, numa2):
    """srun -n 2 --cpu-bind=cores on the two-node guest: each task's CPU on its own node, its buffers there."""
    summary, text, page = _report(tmp_path, numa2, {(rank, None): {"producer_cpus": str(rank), "buffer_node": rank}
                                                    for rank in (0, 1)})
    assert summary["placement"]["consistent"]
    flat = " ".join(line.strip() for line in text.splitlines())  # wrapped lines joined
    assert "Placement: " + ALIKE_ONE_CPU in flat
    assert "DIFFERS" not in text and "SHARED" not in text
    for rank in (0, 1):  # the CPU numbers, per rank
        assert (f"rank {rank}: started bound to CPU {rank} (1 of host0's 2 CPUs: the launcher's binding); its "
                f"writers inherit it") in flat
    assert "<h2>Placement across ranks</h2><p>" + ALIKE_ONE_CPU.replace("'", "&#x27;") + "</p>" in page


def test_the_report_of_two_tasks_bound_to_one_cpu(tmp_path, numa2):
    summary, text, page = _report(tmp_path, numa2, {(rank, None): {"producer_cpus": "0"} for rank in (0, 1)})
    assert summary["placement"]["hosts"]["host0"]["shared"] == [{"cpus": [0], "ranks": [0, 1]}]
    assert "Placement: CPUs SHARED: ranks 0-1 on host0 share CPU 0; otherwise the same on every rank" in text
    assert "CPUs SHARED: ranks 0-1 on host0 share CPU 0" in page
