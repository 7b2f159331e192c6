"""What every command shares: its output directories and files.

One rule for all of them: writerprof creates the file or directory it is
asked to write, never the directories above it. A mistyped parent is a
one-line error, not a tree of new directories (up to `/` as root)."""

from __future__ import annotations

import json
from pathlib import Path

from writerprof.errors import WriterprofError


def _parent_exists(path: Path, what: str) -> None:
    parent = path.parent
    if not parent.is_dir():
        state = "is not a directory" if parent.exists() else "does not exist"
        raise WriterprofError(f"cannot write {what} {path}: {parent} {state}")


def output_directory(path: Path, what: str = "output directory") -> Path:
    """An existing directory, or a new one made at path (its parent must exist)."""
    path = Path(path)
    if path.is_dir():
        return path
    if path.exists():
        raise WriterprofError(f"{path}: exists and is not a directory; choose another {what}")
    _parent_exists(path, what)
    try:
        path.mkdir()
    except OSError as exc:
        raise WriterprofError(f"cannot make {what} {path}: {exc.strerror}") from None
    return path


def new_directory(path: Path, what: str) -> Path:
    """An empty or new directory at path, for output that must not mix with
    another run's (its parent must exist)."""
    path = Path(path)
    if path.is_dir() and any(path.iterdir()):
        raise WriterprofError(f"{path}: exists and is not empty; choose another {what}")
    return output_directory(path, what)


def write_bytes(path: Path, data: bytes, what: str = "output file") -> Path:
    """Write an output file, or say in one line why not."""
    path = Path(path)
    _parent_exists(path, what)
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise WriterprofError(f"cannot write {what} {path}: {exc.strerror}") from None
    return path


def write_text(path: Path, text: str, what: str = "output file") -> Path:
    # Non-UTF-8 bytes from argv or paths arrive as surrogates: written back as the bytes they were.
    return write_bytes(path, text.encode("utf-8", "surrogateescape"), what)


def write_json(path: Path, document, what: str = "output file") -> Path:
    # dumps, not dump, and no indent: only then does json use its C encoder (5x faster).
    return write_text(path, json.dumps(document, separators=(",", ":")), what)
