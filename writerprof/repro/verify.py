"""--verify: every file written must equal, byte for byte, what the generator makes."""

from __future__ import annotations

from writerprof.errors import WriterprofError
from writerprof.repro.config import ReproConfig
from writerprof.repro.generators import make_generator


def verify_file(path: str, config: ReproConfig, save: int) -> None:
    """Regenerate save `save` chunk by chunk and compare it with the file."""
    generator = make_generator(
        config.generator, config.seed, config.gen_threads, config.size, config.chunk_size
    )
    expected = bytearray(config.chunk_size)
    try:
        with open(path, "rb") as handle:  # buffered: read(n) returns n bytes or EOF
            remaining = config.size
            for chunk in range(config.chunks_per_save):
                length = min(config.chunk_size, remaining)
                with memoryview(expected)[:length] as view:
                    generator.fill(view, save, chunk)
                    actual = handle.read(length)
                    if actual != view:
                        offset = chunk * config.chunk_size
                        raise WriterprofError(
                            f"verify: {path} differs from the generator in chunk {chunk}"
                            f" (bytes {offset}..{offset + length})"
                        )
                remaining -= length
            if handle.read(1):
                raise WriterprofError(f"verify: {path} is longer than {config.size} bytes")
    finally:
        generator.close()
