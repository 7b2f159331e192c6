"""What every command shares: its output directories and files.

One rule for all of them: writerprof creates the file or directory it is
asked to write, never the directories above it. A mistyped parent is a
one-line error, not a tree of new directories (up to `/` as root)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from writerprof.errors import WriterprofError
from writerprof.run.directory import claim as new_directory  # empty or new, for output that must not mix
from writerprof.run.directory import parent_missing


def output_directory(path: Path, what: str = "output directory") -> Path:
    """An existing directory, or a new one made at path (its parent must exist)."""
    path = Path(path)
    return path if path.is_dir() else new_directory(path, what)


def write_bytes(path: Path, data: bytes, what: str = "output file") -> Path:
    """Write an output file, or say in one line why not."""
    path = Path(path)
    parent_missing(path, what)
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise WriterprofError(f"cannot write {what} {path}: {exc.strerror}") from None
    return path


def write_text(path: Path, text: str, what: str = "output file") -> Path:
    # Non-UTF-8 bytes from argv or paths arrive as surrogates: written back as the bytes they were.
    return write_bytes(path, text.encode("utf-8", "surrogateescape"), what)


# A byte that was not UTF-8 (argv, paths, names) arrives as a surrogate
# U+DC80..U+DCFF (Python's surrogateescape); any other lone surrogate is no text.
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def shown_bytes(text: str) -> str:
    """Text for a document that must be valid UTF-8 (HTML, SVG): each byte
    that was not UTF-8 shown as \\xNN, any other lone surrogate as U+FFFD."""
    text = _NOT_UTF8.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    return _SURROGATE.sub("\ufffd", text)


def write_markup(path: Path, text: str, what: str = "output file") -> Path:
    """An HTML or SVG file: valid UTF-8 whatever bytes the names held (browsers refuse others)."""
    return write_text(path, shown_bytes(text), what)


def write_json(path: Path, document, what: str = "output file") -> Path:
    # dumps, not dump, and no indent: only then does json use its C encoder (5x faster).
    return write_text(path, json.dumps(document, separators=(",", ":")), what)
