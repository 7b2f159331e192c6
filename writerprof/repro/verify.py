"""--verify: every save written must equal, byte for byte, what the generator makes."""

from __future__ import annotations

from writerprof.errors import WriterprofError
from writerprof.repro.config import ReproConfig
from writerprof.repro.generators import make_generator


def verify_file(path: str, config: ReproConfig, save: int) -> None:
    """Regenerate save `save` chunk by chunk and compare it with the file."""
    with open(path, "rb") as handle:
        verify_stream(handle, path, config, save)


def verify_stream(handle, where: str, config: ReproConfig, save: int) -> None:
    """Regenerate save `save` chunk by chunk and compare it with what `handle`
    reads (a file, an object's body); `where` names it in the error."""
    generator = make_generator(
        config.generator, config.seed, config.gen_threads, config.size, config.chunk_size
    )
    expected = bytearray(config.chunk_size)
    try:
        remaining = config.size
        for chunk in range(config.chunks_per_save):
            length = min(config.chunk_size, remaining)
            with memoryview(expected)[:length] as view:
                generator.fill(view, save, chunk)
                if _read_exactly(handle, length) != view:
                    offset = chunk * config.chunk_size
                    raise WriterprofError(
                        f"verify: {where} differs from the generator in chunk {chunk}"
                        f" (bytes {offset}..{offset + length})"
                    )
            remaining -= length
        if handle.read(1):
            raise WriterprofError(f"verify: {where} is longer than {config.size} bytes")
    finally:
        generator.close()


def _read_exactly(handle, length: int) -> bytes:
    """`length` bytes, fewer only at the end: a network body's read(n) may
    return less before its end."""
    pieces, wanted = [], length
    while wanted:
        piece = handle.read(wanted)
        if not piece:
            break
        pieces.append(piece)
        wanted -= len(piece)
    return b"".join(pieces)
