import sys

import pytest

from writerprof.errors import UsageError
from writerprof.repro.generators import check_available, make_generator

CHUNK = (5 << 20) + 13  # not a multiple of any block size the generators use


def _fill(kind, seed, save, chunk, threads=1, size=4 * CHUNK):
    generator = make_generator(kind, seed, threads, size, CHUNK)
    out = bytearray(CHUNK)
    try:
        for number in range(chunk + 1):  # dgen streams: fill in order
            generator.fill(memoryview(out), save, number)
    finally:
        generator.close()
    return bytes(out)


@pytest.mark.parametrize("kind", ["fast", "random", "dgen"])
def test_same_seed_same_bytes_and_every_input_counts(kind):
    if kind == "dgen":
        pytest.importorskip("dgen_py")
    reference = _fill(kind, 1, 1, 1)
    assert _fill(kind, 1, 1, 1) == reference
    assert _fill(kind, 2, 1, 1) != reference
    assert _fill(kind, 1, 2, 1) != reference
    assert _fill(kind, 1, 1, 0) != reference


def test_random_bytes_do_not_depend_on_threads():
    assert _fill("random", 3, 1, 0, threads=1) == _fill("random", 3, 1, 0, threads=3)


def test_fast_chunks_have_no_repeated_pieces():
    data = _fill("fast", 0, 1, 0)
    piece = 4 << 20
    assert data[:4096] != data[piece:piece + 4096]


def test_dgen_missing_gives_the_install_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "dgen_py", None)  # makes `import dgen_py` fail
    with pytest.raises(UsageError, match=r"pip install 'writerprof\[dgen\]'"):
        check_available("dgen")
    check_available("fast")
