"""Data generators that fill the producer's buffers, deterministic per seed.

Each generator fills chunk `chunk` of save `save` into a writable buffer; the
same (seed, save, chunk) always gives the same bytes, so `--verify` can rebuild
what a file must hold. `fill` is called for chunks 0, 1, 2 ... in order.
"""

from __future__ import annotations

import importlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from writerprof.errors import UsageError

GENERATORS = ("fast", "random", "dgen")

_FAST_BLOCK = 4 << 20  # pre-generated random bytes the fast generator copies from
_FAST_STRIDE = 4099 * 64  # shifts each 4 MiB piece so that no two pieces repeat
_RANDOM_BLOCK = 1 << 20  # unit of work (and of seeding) of the random generator


def _as_array(view) -> np.ndarray:
    return np.frombuffer(view, dtype=np.uint8)


class FastGenerator:
    """Memory-bandwidth bound: copies rotating slices of one random block."""

    def __init__(self, seed: int):
        block = np.random.Generator(np.random.PCG64(seed)).integers(
            0, 256, size=_FAST_BLOCK, dtype=np.uint8
        )
        self._ring = np.concatenate([block, block])  # any offset reads a contiguous block

    def fill(self, view, save: int, chunk: int) -> None:
        out = _as_array(view)
        offset = ((save * 1_000_003 + chunk) * 2_654_435_761 % (_FAST_BLOCK // 64)) * 64
        for start in range(0, len(out), _FAST_BLOCK):
            piece = min(_FAST_BLOCK, len(out) - start)
            out[start:start + piece] = self._ring[offset:offset + piece]
            offset = (offset + _FAST_STRIDE) % _FAST_BLOCK

    def close(self) -> None:
        pass


class RandomGenerator:
    """CPU bound: PCG64 output, one generator per 1 MiB so that the bytes do
    not depend on the number of threads; numpy releases the GIL while it fills."""

    def __init__(self, seed: int, threads: int):
        self._seed = seed
        self._pool = ThreadPoolExecutor(threads, "writerprof-gen") if threads > 1 else None

    def _fill_block(self, out: np.ndarray, save: int, chunk: int, block: int) -> None:
        start = block * _RANDOM_BLOCK
        piece = out[start:start + _RANDOM_BLOCK]
        seq = np.random.SeedSequence([self._seed, save, chunk, block])
        words = np.random.PCG64(seq).random_raw(-(-len(piece) // 8))
        piece[:] = words.view(np.uint8)[:len(piece)]

    def fill(self, view, save: int, chunk: int) -> None:
        out = _as_array(view)
        blocks = range(-(-len(out) // _RANDOM_BLOCK))
        if self._pool is None:
            for block in blocks:
                self._fill_block(out, save, chunk, block)
        else:
            for done in [self._pool.submit(self._fill_block, out, save, chunk, b) for b in blocks]:
                done.result()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()


class DgenGenerator:
    """The benchmark's own generator, dgen-py: one stream per save."""

    def __init__(self, seed: int, threads: int, save_size: int, chunk_size: int):
        self._dgen = importlib.import_module("dgen_py")
        self._seed, self._threads = seed, threads
        self._save_size, self._chunk_size = save_size, chunk_size
        self._stream = None
        self._position = (None, 0)  # (save, next chunk) of the open stream

    def fill(self, view, save: int, chunk: int) -> None:
        if self._position != (save, chunk):
            if chunk != 0:
                raise ValueError(f"dgen fills chunks in order; asked for chunk {chunk} of save {save}")
            self._stream = self._dgen.Generator(
                size=self._save_size,
                seed=self._seed * 1_000_003 + save,
                chunk_size=self._chunk_size,
                max_threads=self._threads,
            )
        filled = self._stream.fill_chunk(view)
        if filled != len(view):
            raise RuntimeError(f"dgen filled {filled} of {len(view)} bytes")
        self._position = (save, chunk + 1)

    def close(self) -> None:
        self._stream = None


def check_available(kind: str) -> None:
    """Fail early, with the fix, when a generator's package is missing."""
    if kind == "dgen":
        try:
            importlib.import_module("dgen_py")
        except ImportError as exc:
            raise UsageError(
                f"--generator dgen needs the dgen-py package ({exc}); "
                "install it with: pip install 'writerprof[dgen]'"
            ) from None


def make_generator(kind: str, seed: int, threads: int, save_size: int, chunk_size: int):
    if kind == "fast":
        return FastGenerator(seed)
    if kind == "random":
        return RandomGenerator(seed, threads)
    if kind == "dgen":
        return DgenGenerator(seed, threads, save_size, chunk_size)
    raise ValueError(f"unknown generator {kind!r}")
