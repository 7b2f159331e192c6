"""The reproducer's object-store pieces that need no store: the chunks as
the transfer manager's stream, S3's part limits, contrast's pass-through."""

from __future__ import annotations

import argparse

import pytest

from writerprof.commands.repro import add_store_arguments, store_argv
from writerprof.errors import UsageError
from writerprof.repro.objectstore import check_parts

MIB = 1 << 20


def _stream(*chunks: bytes):
    """A ChunkStream over bytearrays, each exported as a view while it is the chunk in hand."""
    from writerprof.repro.upload import ChunkStream

    buffers = [bytearray(c) for c in chunks]

    def views():
        for buffer in buffers:
            with memoryview(buffer) as view:
                yield view

    return ChunkStream(views()), buffers


def test_a_read_of_the_chunk_size_is_one_chunk_and_the_end_is_empty():
    stream, _ = _stream(b"a" * 6, b"b" * 6, b"c" * 3)
    assert [stream.read(6), stream.read(6), stream.read(6), stream.read(6)] == [b"a" * 6, b"b" * 6, b"c" * 3, b""]


def test_a_read_crosses_chunks_and_read_all_takes_the_rest():
    stream, _ = _stream(b"abc", b"def", b"g")
    assert stream.read(4) == b"abcd"
    assert stream.read() == b"efg"
    assert stream.read(1) == b""


def test_taking_the_next_chunk_releases_the_last_ones_buffer():
    stream, buffers = _stream(b"abc", b"def")
    stream.read(3)
    with pytest.raises(BufferError):  # still the chunk in hand: its view exported
        buffers[0].extend(b"x")
    stream.read(1)
    buffers[0].extend(b"x")  # released: a bytearray resizes only with no view of it left


@pytest.mark.parametrize("size, chunk, refused", [
    (12 * MIB, 4 * MIB, "below S3's smallest part"),
    (4 * MIB, 4 * MIB, None),  # one chunk: the last part, which may be smaller
    (12 * MIB, 5 * MIB, None),
    (10_001 * 5 * MIB, 5 * MIB, "S3 takes at most 10000"),
])
def test_a_chunk_is_a_part_within_s3s_limits(size, chunk, refused):
    if refused is None:
        check_parts(size, chunk)
    else:
        with pytest.raises(UsageError, match=refused):
            check_parts(size, chunk)


def test_only_the_store_options_given_are_passed_on():
    parser = argparse.ArgumentParser()
    add_store_arguments(parser)
    assert store_argv(parser.parse_args([])) == []
    assert store_argv(parser.parse_args(["--backend", "s3", "--bucket", "b", "--upload", "transfer"])) == [
        "--backend", "s3", "--bucket", "b", "--upload", "transfer"]
