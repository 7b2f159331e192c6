import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from writerprof.record.system import System
from writerprof.record.topology import snapshot
from writerprof.run.topology import cpu_nodes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SYSROOTS = FIXTURES / "sysroots"
REAL_NUMA2 = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "numa2"

# What each generated machine is, written out by hand rather than derived
# from make_sysroots.py, so that a mistake in either shows here.
EXPECTED = {
    "numa2": {
        "model": "Intel(R) Xeon(R) Silver 4112 CPU @ 2.60GHz",
        "node_cpus": {"0": [0, 1, 2, 3, 8, 9, 10, 11], "1": [4, 5, 6, 7, 12, 13, 14, 15]},
        "distances": [[10, 21], [21, 10]],
        "memory_kb": {"0": (32_727_380, 30_112_904), "1": (33_021_564, 31_874_220)},
        "cpus": {0: (0, 0, [0, 8]), 8: (0, 0, [0, 8]), 5: (1, 1, [5, 13]), 15: (1, 3, [7, 15])},
        "smt": True,
    },
    "numa4": {
        "model": "Intel(R) Xeon(R) Gold 6244 CPU @ 3.60GHz",
        "node_cpus": {"0": [0, 2, 4, 6], "1": [8, 10, 12, 14], "2": [1, 3, 5, 7],
                      "3": [9, 11, 13, 15]},
        "distances": [[10, 12, 21, 21], [12, 10, 21, 21], [21, 21, 10, 12], [21, 21, 12, 10]],
        "memory_kb": {"0": (24_361_224, 22_904_316), "3": (24_768_720, 23_655_184)},
        "cpus": {0: (0, 0, [0]), 1: (1, 0, [1]), 8: (0, 4, [8]), 15: (1, 7, [15])},
        "smt": False,
    },
    "numa8": {
        "model": "AMD Opteron(tm) Processor 6134",
        "node_cpus": {str(n): [4 * n, 4 * n + 1, 4 * n + 2, 4 * n + 3] for n in range(8)},
        "distances": [[10, 16, 22, 28, 28, 28, 22, 16], [16, 10, 16, 22, 28, 28, 28, 22],
                      [22, 16, 10, 16, 22, 28, 28, 28], [28, 22, 16, 10, 16, 22, 28, 28],
                      [28, 28, 22, 16, 10, 16, 22, 28], [28, 28, 28, 22, 16, 10, 16, 22],
                      [22, 28, 28, 28, 22, 16, 10, 16], [16, 22, 28, 28, 28, 22, 16, 10]],
        "memory_kb": {"0": (8_162_496, 7_391_208), "7": (8_388_608, 90_112)},
        "cpus": {0: (0, 0, [0]), 4: (0, 4, [4]), 13: (1, 5, [13]), 31: (3, 7, [31])},
        "smt": False,
    },
}


def _write(root: Path, files: dict[str, str]) -> System:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return System(root)


@pytest.mark.parametrize("machine", sorted(EXPECTED))
def test_snapshot_of_fixture_machine(machine):
    expected = EXPECTED[machine]
    topology = snapshot(System(SYSROOTS / machine))

    assert topology["schema"] == 1 and topology["numa"] is True
    assert {node: info["cpus"] for node, info in topology["nodes"].items()} == expected["node_cpus"]
    all_cpus = sorted(cpu for cpus in expected["node_cpus"].values() for cpu in cpus)
    assert topology["online_cpus"] == all_cpus
    assert sorted(map(int, topology["cpus"])) == all_cpus
    assert topology["cpu_model"] == expected["model"]
    assert topology["smt"] is expected["smt"]
    for cpu, (package, core, siblings) in expected["cpus"].items():
        info = topology["cpus"][str(cpu)]
        assert (info["package"], info["core"], info["siblings"]) == (package, core, siblings), cpu
    for node, (total_kb, free_kb) in expected["memory_kb"].items():
        assert topology["nodes"][node]["memory_total_bytes"] == total_kb * 1024
        assert topology["nodes"][node]["memory_free_bytes"] == free_kb * 1024


@pytest.mark.parametrize("machine", sorted(EXPECTED))
def test_distances_are_the_matrix_symmetric_and_local_10(machine):
    nodes = snapshot(System(SYSROOTS / machine))["nodes"]
    ids = sorted(nodes, key=int)
    matrix = [[nodes[a]["distances"][b] for b in ids] for a in ids]
    assert matrix == EXPECTED[machine]["distances"]
    for a in ids:
        assert nodes[a]["distances"][a] == 10
        assert all(nodes[a]["distances"][b] == nodes[b]["distances"][a] > 10 for b in ids if b != a)


@pytest.mark.parametrize("machine", sorted(EXPECTED))
def test_cpu_nodes_survives_the_json_round_trip(machine):
    topology = snapshot(System(SYSROOTS / machine))
    loaded = json.loads(json.dumps(topology))
    assert loaded == topology  # no int keys or tuples that JSON would change
    expected = {cpu: int(node) for node, cpus in EXPECTED[machine]["node_cpus"].items()
                for cpu in cpus}
    assert cpu_nodes(loaded) == cpu_nodes(topology) == expected
    assert all(topology["cpus"][str(cpu)]["node"] == node for cpu, node in expected.items())


def test_committed_sysroots_are_what_the_script_writes(tmp_path):
    subprocess.run([sys.executable, str(FIXTURES / "make_sysroots.py"), str(tmp_path)], check=True)

    def tree(root):
        return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}

    for machine in EXPECTED:
        assert tree(tmp_path / machine) == tree(SYSROOTS / machine), machine


def test_kernel_without_numa_is_one_node(tmp_path):
    system = _write(tmp_path, {
        "sys/devices/system/cpu/online": "0-3\n",
        "sys/devices/system/cpu/cpu2/topology/thread_siblings_list": "2-3\n",
        "sys/devices/system/cpu/cpu2/topology/core_id": "1\n",
        "sys/devices/system/cpu/cpu2/topology/physical_package_id": "0\n",
        "proc/meminfo": "MemTotal:        4000000 kB\nMemFree:         3000000 kB\n",
        "proc/cpuinfo": "processor\t: 0\nmodel name\t: Some CPU\n\n"
                        "processor\t: 1\nmodel name\t: Other\n",
    })
    topology = snapshot(system)

    assert topology["numa"] is False
    assert topology["nodes"] == {"0": {"cpus": [0, 1, 2, 3], "distances": {"0": 10},
                                       "memory_total_bytes": 4_000_000 * 1024,
                                       "memory_free_bytes": 3_000_000 * 1024}}
    assert cpu_nodes(topology) == {0: 0, 1: 0, 2: 0, 3: 0}
    assert topology["cpus"]["2"] == {"node": 0, "package": 0, "core": 1, "siblings": [2, 3]}
    assert topology["cpu_model"] == "Some CPU"
    assert topology["smt"] is True


def test_missing_or_garbled_files_give_empty_values(tmp_path):
    # Nodes listed but their files gone (or never there), and CPU 1 online
    # but on no node and with no topology directory.
    system = _write(tmp_path, {
        "sys/devices/system/node/online": "0-1\n",
        "sys/devices/system/node/node0/cpulist": "0\n",
        "sys/devices/system/node/node0/distance": "10 20 30\n",  # one too many for 2 nodes
        "sys/devices/system/node/node1/cpulist": "\n",  # a memory-only node
        "sys/devices/system/node/node1/meminfo": "Node 1 MemTotal:        1024 kB\n",
        "sys/devices/system/cpu/online": "0-1\n",
        "sys/devices/system/cpu/cpu0/topology/core_id": "not a number\n",
        "sys/devices/system/cpu/cpu0/topology/thread_siblings_list": "0-\n",
    })
    topology = snapshot(system)

    assert topology["numa"] is True
    assert topology["nodes"]["0"] == {"cpus": [0], "distances": {}, "memory_total_bytes": None,
                                      "memory_free_bytes": None}
    assert topology["nodes"]["1"] == {"cpus": [], "distances": {},
                                      "memory_total_bytes": 1024 * 1024, "memory_free_bytes": None}
    assert topology["cpus"]["0"] == {"node": 0, "package": None, "core": None, "siblings": []}
    assert topology["cpus"]["1"] == {"node": None, "package": None, "core": None, "siblings": []}
    assert cpu_nodes(topology) == {0: 0}
    assert topology["cpu_model"] is None and topology["smt"] is False


def test_empty_root_does_not_raise(tmp_path):
    topology = snapshot(System(tmp_path))
    assert topology["nodes"] == {"0": {"cpus": [], "distances": {"0": 10},
                                       "memory_total_bytes": None, "memory_free_bytes": None}}
    assert topology["cpus"] == {} and topology["online_cpus"] == [] and cpu_nodes(topology) == {}


def test_host_nodes_cover_the_cpus_this_process_may_use():
    topology = snapshot()
    affinity = os.sched_getaffinity(0)

    assert topology["nodes"]
    assert affinity <= {cpu for node in topology["nodes"].values() for cpu in node["cpus"]}
    assert affinity <= set(topology["online_cpus"])
    assert affinity <= set(cpu_nodes(topology))
    json.dumps(topology)


@pytest.mark.skipif(not REAL_NUMA2.is_dir(),
                    reason=f"no files read off a real two-node kernel at {REAL_NUMA2}")
def test_real_two_node_kernel():
    topology = snapshot(System(REAL_NUMA2))

    assert topology["numa"] is True
    assert {node: info["cpus"] for node, info in topology["nodes"].items()} == {"0": [0], "1": [1]}
    assert topology["nodes"]["0"]["distances"] == {"0": 10, "1": 20}
    assert topology["nodes"]["1"]["distances"] == {"0": 20, "1": 10}
    assert topology["nodes"]["0"]["memory_total_bytes"] == 1_951_988 * 1024
    assert topology["nodes"]["0"]["memory_free_bytes"] == 1_916_084 * 1024
    assert cpu_nodes(topology) == {0: 0, 1: 1}
    assert topology["cpus"]["1"] == {"node": 1, "package": 1, "core": 0, "siblings": [1]}
    assert topology["cpu_model"] == "QEMU TCG CPU version 2.5+" and topology["smt"] is False


def test_the_analysis_imports_no_recording_code():
    """What reads a snapshot (writerprof.run.topology) stays outside writerprof.record:
    the analysis, renderers and exports load nothing of the recording side."""
    code = ("import importlib, pkgutil, sys\n"
            "import writerprof.analysis, writerprof.exports, writerprof.render, writerprof.run\n"
            "for package in (writerprof.analysis, writerprof.exports, writerprof.render, writerprof.run):\n"
            "    for module in pkgutil.iter_modules(package.__path__, package.__name__ + '.'):\n"
            "        importlib.import_module(module.name)\n"
            "print(sorted(m for m in sys.modules if m.startswith('writerprof.record')))\n")
    assert _printed_by_fresh_python(code) == "[]"


def test_record_starts_cmd_without_numpy():
    """What record imports before CMD starts, and a host's sampler agent, go
    without the loader's numpy; its summary imports it with no OpenBLAS
    threads of its own, and leaves its environment as it was; the loader's
    `load` is the function, however its module was first imported."""
    code = ("import os, sys\n"
            "import writerprof.commands.record, writerprof.record.agent, writerprof.run.directory\n"
            "print('numpy' in sys.modules, end=' ')\n"
            "from writerprof.record import session\n"
            "os.environ.pop('OPENBLAS_NUM_THREADS', None)\n"
            "load = session._loader()\n"
            "print(load.__name__, 'numpy' in sys.modules, len(os.listdir('/proc/self/task')),\n"
            "      'OPENBLAS_NUM_THREADS' in os.environ, end=' ')\n"
            "from writerprof.run.loader import CHUNK_DTYPE\n"
            "from writerprof.run import load\n"
            "print(callable(load) and load.__name__)\n")
    assert _printed_by_fresh_python(code) == "False load True 1 False load"


def _printed_by_fresh_python(code: str) -> str:
    # From /, so that a source checkout in the working directory cannot shadow the installed package.
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    return done.stdout.strip()
