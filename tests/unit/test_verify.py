import os

import pytest

from writerprof.errors import WriterprofError
from writerprof.repro.config import ReproConfig
from writerprof.repro.generators import make_generator
from writerprof.repro.verify import verify_file

CONFIG = ReproConfig(
    saves=1, size=(3 << 20) + 5, chunk_size=1 << 20, buffers=2, start_method="fork",
    generator="random", gen_threads=1, seed=11, fsync=False, fadvise="none", verify=True,
    directory=None, keep=False, json=False, main_imports=(), pin_parent=None,
    pin_when="start", writer_cpus=None, touch_cpus=None,
)


def _write_expected(path, save):
    generator = make_generator("random", CONFIG.seed, 1, CONFIG.size, CONFIG.chunk_size)
    with open(path, "wb") as handle:
        remaining = CONFIG.size
        for chunk in range(CONFIG.chunks_per_save):
            out = bytearray(min(CONFIG.chunk_size, remaining))
            generator.fill(memoryview(out), save, chunk)
            handle.write(out)
            remaining -= len(out)


def test_a_good_file_verifies(tmp_path):
    path = tmp_path / "save.dat"
    _write_expected(path, 1)
    verify_file(str(path), CONFIG, 1)


@pytest.mark.parametrize("damage, message", [
    ("flip", "differs from the generator in chunk 2"),
    ("truncate", "differs from the generator in chunk 3"),
    ("extend", "is longer than"),
])
def test_a_damaged_file_is_caught(tmp_path, damage, message):
    path = tmp_path / "save.dat"
    _write_expected(path, 1)
    with open(path, "r+b") as handle:
        if damage == "flip":
            handle.seek(2 * CONFIG.chunk_size + 7)
            byte = handle.read(1)
            handle.seek(-1, os.SEEK_CUR)
            handle.write(bytes([byte[0] ^ 1]))
        elif damage == "truncate":
            handle.truncate(CONFIG.size - 1)
        else:
            handle.seek(0, os.SEEK_END)
            handle.write(b"x")
    with pytest.raises(WriterprofError, match=message):
        verify_file(str(path), CONFIG, 1)


def test_the_wrong_save_is_caught(tmp_path):
    path = tmp_path / "save.dat"
    _write_expected(path, 2)
    with pytest.raises(WriterprofError, match="chunk 0"):
        verify_file(str(path), CONFIG, 1)
