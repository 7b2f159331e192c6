"""glibc malloc's thresholds for a process that analyses a large run
(report, compare): arrays up to MMAP_THRESHOLD from the heap, and up to
TRIM_THRESHOLD of freed heap kept for the next ones. By default an array
over 32 MiB (a 1M-chunk run's columns and their temporaries) is mapped
afresh, every page faulted in, and unmapped when freed (the mmap threshold
alone changes nothing: the freed heap is handed back at once).

report --json of 10M chunks, no forks: system time 7.0 -> 3.8-5.1 s, peak
RSS 3.62 -> 3.64-3.70 GiB; forks: 10.4 -> 7.1 s, 2.96 -> 3.03-3.06 GiB. A
trim threshold of 1 GiB kept more: 3.83 and 3.27 GiB. compare of a 1M-chunk
run with itself: 21.6 s (10.8 s system) before, 22.3, 19.8 and 19.5 s
(10.9, 9.4 and 8.7 s system) after, the same peak: a small gain, if any.

And no transparent huge pages asked for (numpy madvises them for every
array of 4 MiB or more): where the kernel compacts memory to find one
(defrag "madvise", a page cache full of a run's files) a fault can take
milliseconds, and a forked worker's copy-on-write copies 2 MiB at a time.
report --json of 1M chunks, no forks: summarize's system time 0.5-1.4 s ->
0.13-0.16 s, the same user time."""

from __future__ import annotations

MMAP_THRESHOLD = 1 << 30
TRIM_THRESHOLD = 128 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)


def for_big_arrays() -> None:
    """Set MMAP_THRESHOLD and TRIM_THRESHOLD, where the C library is glibc;
    numpy's arrays made without huge pages."""
    import ctypes

    try:  # (numpy's own switch, private: its env variable NUMPY_MADVISE_HUGEPAGE is read at import)
        from numpy._core.multiarray import _set_madvise_hugepage
    except ImportError:
        try:  # numpy 1.x
            from numpy.core.multiarray import _set_madvise_hugepage
        except ImportError:
            _set_madvise_hugepage = None
    if _set_madvise_hugepage is not None:
        _set_madvise_hugepage(False)
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc's (macOS): its allocator as it is
        return
    mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
