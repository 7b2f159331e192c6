"""Binding at a glance on real recordings (mlcommons/storage #201): the
report's first lines say whether the rank's CPUs and memory are bound, to
what, and whether its writers inherit them, as `taskset` and `numactl` set
them, in the text and in `report --json`'s host_binding. This machine has
one NUMA node, so memory is bound to node 0, the only one: the binding's
facts, not a placement (two nodes: test_numavm_binding.py)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from writerprof.units import format_cpu_list

from helpers import run_writerprof

REPRO = ["writerprof", "repro", "--saves", "2", "--size", "64MiB"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    if not shutil.which("numactl"):
        pytest.skip("needs numactl (apt-get install numactl)")
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("needs two allowed CPUs")
    cpu = str(allowed[-1])
    work = tmp_path_factory.mktemp("binding")
    commands = {
        "unbound": REPRO,
        # Bound by its launcher, CPUs and memory: a forkserver daemon it starts inherits both, and so its writers.
        "bound": ["numactl", "--membind=0", "taskset", "-c", cpu, *REPRO, "--start-method", "forkserver"],
        # Memory bound by its launcher, CPUs by itself once its forkserver daemon ran: the writers keep the old CPUs.
        "self_bound": ["numactl", "--membind=0", *REPRO, "--start-method", "forkserver", "--pin-parent", cpu,
                       "--pin-when", "after-first-writer"],
    }
    out = {}
    for name, command in commands.items():
        run_writerprof("record", "-o", work / name, "--", *command)
        text = run_writerprof("report", work / name).stdout
        out[name] = {"header": " ".join(text.split("\n\n")[0].split()),
                     "json": json.loads(run_writerprof("report", "--json", work / name).stdout), "cpu": int(cpu),
                     "all": allowed}
    return out


def _rank(report) -> dict:
    ((host,),) = [report["json"]["host_binding"]]
    (rank,) = host["ranks"]
    return rank


def test_an_unbound_rank_says_so(reports):
    r = reports["unbound"]
    rank = _rank(r)
    assert not rank["cpus_bound"] and rank["memory"]["policy"] == "default" and rank["memory_bound"] is False
    assert rank["writers"] == 2 and rank["writers_inherit_cpus"] and rank["writers_inherit_memory"]
    assert f"CPUs unbound (all {len(r['all'])}), memory unbound; its writers inherit both" in r["header"]


def test_a_rank_bound_by_taskset_and_numactl_and_its_forkserver_writers_inherit_both(reports):
    r = reports["bound"]
    rank = _rank(r)
    assert rank["cpus"] == rank["started_cpus"] == [r["cpu"]] and rank["cpus_bound"]
    assert rank["memory"] == {"policy": "bind", "nodes": [0], "allowed": [0]} and rank["memory_bound"]
    assert rank["writers_inherit_cpus"] and rank["writers_inherit_memory"]
    assert (f"CPUs {r['cpu']} (node 0), memory bound to node 0 (its CPUs' node); its writers inherit both"
            in r["header"])


def test_a_rank_that_binds_itself_after_its_forkserver_started_has_writers_that_do_not_inherit(reports):
    r = reports["self_bound"]
    rank = _rank(r)
    assert rank["cpus"] == [r["cpu"]] and rank["started_cpus"] == r["all"]
    assert rank["writers_inherit_cpus"] is False and rank["writer_cpus"] == [r["all"]]
    assert rank["writers_inherit_memory"] is True  # the daemon was started under numactl's policy too
    all_cpus = format_cpu_list(r["all"])
    assert (f"set after its start on {all_cpus}, memory bound to node 0 (its CPUs' node); its writers started "
            f"on CPUs {all_cpus}, not its own; they inherit its memory binding") in r["header"]
