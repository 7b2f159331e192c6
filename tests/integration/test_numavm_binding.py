"""Binding at a glance on a real kernel with two NUMA nodes (cpu 0 on node 0,
cpu 1 on node 1), through ../shared/numavm: the reproducer recorded as a
rank that numactl bound to node 1 (CPUs and memory), and as one whose
memory numactl interleaved over both nodes; the report's binding line and
report --json's host_binding say so, and that the writers inherit it."""

from __future__ import annotations

import json
import shlex

import pytest

from helpers import run_writerprof
from numavm_guest import guest_python, guest_run, run_steps

pytestmark = pytest.mark.numavm

NUMACTL = {"node1": ["numactl", "--cpunodebind=1", "--membind=1"], "interleaved": ["numactl", "--interleave=0,1"]}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    python = guest_python()
    # (No stacks: none is looked at here, and py-spy under the guest's emulation costs.)
    steps = [shlex.join([*numactl, python, "-m", "writerprof", "record", "-o", guest_run(name), "--no-stacks", "--",
                         python, "-m", "writerprof", "repro", "--saves", "1", "--size", "32MiB",
                         "--start-method", "forkserver"])
             for name, numactl in NUMACTL.items()]
    xfer = run_steps(tmp_path_factory, "numavm-binding", steps, balancing=False)
    return {name: (" ".join(run_writerprof("report", xfer / name).stdout.split("\n\n")[0].split()),
                   json.loads(run_writerprof("report", "--json", xfer / name).stdout)) for name in NUMACTL}


def _rank(summary) -> dict:
    (host,) = summary["host_binding"]
    assert host["nodes"] == [0, 1]  # it really ran on the two-node kernel
    (rank,) = host["ranks"]
    return rank


def test_a_rank_numactl_bound_to_node_1_and_its_writers(reports):
    header, summary = reports["node1"]
    rank = _rank(summary)
    assert rank["cpus"] == [1] and rank["cpus_bound"] and rank["cpu_nodes"] == [1]
    assert rank["memory"] == {"policy": "bind", "nodes": [1], "allowed": [0, 1]} and rank["memory_bound"]
    assert rank["writers"] == 1 and rank["writers_inherit_cpus"] and rank["writers_inherit_memory"]
    assert "CPUs 1 (node 1), memory bound to node 1 (its CPUs' node); its writers inherit both" in header


def test_a_rank_whose_memory_numactl_interleaved(reports):
    header, summary = reports["interleaved"]
    rank = _rank(summary)
    assert not rank["cpus_bound"] and rank["memory"]["policy"] == "interleave" and rank["memory"]["nodes"] == [0, 1]
    assert "CPUs unbound (all 2), memory interleaved on nodes 0-1; its writers inherit both" in header
