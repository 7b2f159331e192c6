"""Where a buffer's pages are, as the probe measures it: move_pages(2) on
this host's own memory, the numa_maps fallback on a real two-node line."""

import ctypes
import os
from multiprocessing import shared_memory

import pytest

from test_procfs import NUMA2, SAMPLE_PID, needs_numa2
from writerprof.probes.writerprof_probe import numa


@pytest.mark.parametrize("pages, stride", [(1, 1), (1024, 1), (1025, 17), (8192, 17), (20000, 23),
                                           (262144, 257), (263169, 263)])
def test_sample_stride_is_prime_and_bounds_the_sample(pages, stride):
    assert numa.sample_stride(pages) == stride
    assert -(-pages // stride) <= numa.MAX_SAMPLED_PAGES


def test_interleaved_pages_are_not_aliased():
    """Pages interleaved over n nodes, sampled every stride-th: every node is seen."""
    for pages in (2048, 8192, 65536):
        stride = numa.sample_stride(pages)
        for nodes in range(2, 17):
            assert {page % nodes for page in range(0, pages, stride)} == set(range(nodes))


@pytest.fixture
def buffer():
    segment = shared_memory.SharedMemory(create=True, size=8 << 20)  # 2048 pages: sampled
    try:
        yield segment, ctypes.addressof(ctypes.c_char.from_buffer(segment.buf))
    finally:
        segment.close()
        segment.unlink()


def _node_of(cpu):
    nodes = [name for name in os.listdir(f"/sys/devices/system/cpu/cpu{cpu}")
             if name.startswith("node") and name[4:].isdigit()]
    return nodes[0][4:] if nodes else "0"


def test_move_pages_counts_faulted_and_unfaulted_pages(buffer):
    segment, start = buffer
    end = start + segment.size
    before = numa.placement_from_move_pages(start, end)
    assert before == {"source": "move_pages", "pages": 2048, "sampled": 121, "stride": 17,
                      "nodes": {}, "unfaulted": 121}
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    os.sched_setaffinity(0, {cpu})  # first touch from a known node
    try:
        segment.buf[: segment.size // 2] = b"\1" * (segment.size // 2)  # the first half only
    finally:
        os.sched_setaffinity(0, allowed)
    after = numa.placement_from_move_pages(start, end)
    assert after["nodes"] == {_node_of(cpu): 61} and after["unfaulted"] == 60  # pages 0, 17, ... 1020


def test_numa_maps_fallback_reads_the_mapping_at_its_address(buffer):
    segment, start = buffer
    segment.buf[:] = b"\1" * segment.size
    with open("/proc/self/numa_maps") as f:
        found = numa.placement_from_numa_maps(start, start + segment.size, f.read())
    assert found["source"] == "numa_maps" and found["pages"] == found["sampled"] == 2048
    assert sum(found["nodes"].values()) == 2048 and found["unfaulted"] == 0


@needs_numa2
def test_numa_maps_of_a_buffer_on_the_other_node():
    text = (NUMA2 / "proc" / SAMPLE_PID / "numa_maps").read_text()
    found = numa.placement_from_numa_maps(0x7f707e0f3000, 0x7f707e8f3000, text)
    assert found == {"source": "numa_maps", "pages": 2048, "sampled": 2048, "stride": 1,
                     "nodes": {"1": 2048}, "unfaulted": 0}
    assert numa.placement_from_numa_maps(0x1000, 0x2000, text) is None
