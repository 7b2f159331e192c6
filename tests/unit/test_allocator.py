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
