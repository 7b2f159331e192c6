"""glibc malloc's thresholds for a large run's analysis (writerprof.allocator)."""

import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")

# The heap's size after a 64 MiB bytes object is made and while it lives: on
# the heap once the thresholds are set, a mapping of its own by default.
CODE = """
import sys
from writerprof import allocator
if sys.argv[1] == "set":
    allocator.for_big_arrays()
big = bytes(64 << 20)
heap = 0
with open("/proc/self/maps") as maps:
    for line in maps:
        if line.rstrip().endswith("[heap]"):
            start, end = (int(x, 16) for x in line.split()[0].split("-"))
            heap += end - start
print(heap >> 20)
"""


def heap_mib(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", CODE, mode], capture_output=True, text=True, check=True, cwd="/")
    return int(done.stdout)


def test_an_array_over_malloc_s_default_mmap_threshold_comes_from_the_heap():
    assert heap_mib("default") < 64 <= heap_mib("set")


# Whether the pages of a 64 MiB numpy array were asked for as transparent huge
# pages: the VmFlags of its mapping in /proc/self/smaps say "hg" (MADV_HUGEPAGE).
HUGE = """
import sys
import numpy as np
from writerprof import allocator
if sys.argv[1] == "set":
    allocator.for_big_arrays()
array = np.ones(64 << 20, np.uint8)
at = array.ctypes.data + array.nbytes // 2  # (numpy advises from the first whole page on)
inside = False
with open("/proc/self/smaps") as smaps:
    for line in smaps:
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            start, end = (int(x, 16) for x in head.split("-"))
            inside = start <= at < end
        elif inside and head == "VmFlags:":
            print("hg" in line.split()[1:])
"""


def madvised_huge(mode: str) -> bool:
    done = subprocess.run([sys.executable, "-c", HUGE, mode], capture_output=True, text=True, check=True, cwd="/")
    return done.stdout.split() == ["True"]


@pytest.mark.skipif(not madvised_huge("default"), reason="numpy asks for no huge pages here (a kernel without them)")
def test_big_arrays_are_not_asked_for_as_huge_pages():
    assert not madvised_huge("set")
