"""The analysis's compiled kernels (native/kernels.c, built into native/ as
LIBRARY when the package installs), called through ctypes on numpy arrays.

Loaded at the first call, not at import: record's summary of a run with
nothing to look up never loads it (record's fixed floor). Without the
library (a source tree used where it was never built) the analysis cannot
go on, and says how to build it."""

from __future__ import annotations

import os

import numpy as np

from writerprof.errors import WriterprofError

LIBRARY = "libwriterprof_kernels.so"

_loaded = []  # the library's functions, once loaded


def time_inside(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Time spent inside the sorted, disjoint intervals [starts, ends) up to
    each of t (any order; in order is fastest), as int64: integer arrays."""
    starts, ends, t = (_int64(a) for a in (starts, ends, t))
    if len(starts) != len(ends):
        raise ValueError(f"{len(starts)} starts but {len(ends)} ends")
    out, done = np.empty(len(t), np.int64), np.empty(len(starts) + 1, np.int64)
    _library().wp_time_inside(starts.ctypes.data, ends.ctypes.data, len(starts), t.ctypes.data, len(t),
                              out.ctypes.data, done.ctypes.data)
    return out


def merged(starts: np.ndarray, ends: np.ndarray, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals (integer arrays), taken in order of their
    starts (order: the rows in that order, None if they are in it), as
    sorted disjoint intervals: an interval that starts after all before it
    have ended starts a new one, else (where it starts as one ends, too) it
    joins them."""
    starts, ends = _int64(starts), _int64(ends)
    if len(starts) != len(ends) or (order is not None and len(order) != len(starts)):
        raise ValueError(f"{len(starts)} starts, {len(ends)} ends and an order of "
                         f"{len(starts) if order is None else len(order)}")
    order = None if order is None else _int64(order)
    out_starts, out_ends = np.empty(len(starts), np.int64), np.empty(len(starts), np.int64)
    found = _library().wp_merged(starts.ctypes.data, ends.ctypes.data, len(starts),
                                 None if order is None else order.ctypes.data, out_starts.ctypes.data,
                                 out_ends.ctypes.data)
    if found < len(starts):  # (copies: views would keep every row's memory for the union's life)
        return out_starts[:found].copy(), out_ends[:found].copy()
    return out_starts, out_ends


def _int64(values) -> np.ndarray:
    """values as a contiguous int64 array; refused where int64 cannot hold
    every value of their type (a float would be cut, a uint64 wrap)."""
    array = np.asarray(values)
    if len(array) and not np.can_cast(array.dtype, np.int64):
        raise TypeError(f"integer times that int64 holds expected, not {array.dtype}")
    return np.ascontiguousarray(array, dtype=np.int64)


def _library():
    if not _loaded:
        import ctypes

        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native", LIBRARY)
        try:
            library = ctypes.CDLL(path)
        except OSError as exc:
            raise WriterprofError(
                f"writerprof's compiled analysis kernels are missing or unloadable ({exc}): install writerprof "
                f"with pip (`pip install .` in a checkout), which builds them") from None
        pointer, count = ctypes.c_void_p, ctypes.c_int64
        library.wp_time_inside.argtypes = [pointer, pointer, count, pointer, count, pointer, pointer]
        library.wp_time_inside.restype = None
        library.wp_merged.argtypes = [pointer, pointer, count, pointer, pointer, pointer]
        library.wp_merged.restype = count
        _loaded.append(library)
    return _loaded[0]
