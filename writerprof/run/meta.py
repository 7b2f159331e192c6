"""A run directory's run.json, read and checked (read_meta), and the error
of a path that is no run directory this writerprof reads. Apart from the
loader (writerprof.run.loader), which needs numpy: record writes a run
(writerprof.run.directory) without importing it."""

from __future__ import annotations

import json
from pathlib import Path

import writerprof
from writerprof.errors import WriterprofError
from writerprof.run import layout, ownfile


class RunDirectoryError(WriterprofError):
    """The path is not a run directory this writerprof can read."""


def read_meta(path: Path) -> dict:
    """run.json of a run directory, or a RunDirectoryError saying why not."""
    path = Path(path)
    if not path.exists():
        raise RunDirectoryError(f"{path}: no such run directory")
    if not path.is_dir():
        raise RunDirectoryError(f"{path}: not a directory (a run is a directory made by writerprof record)")
    file = path / layout.RUN_FILE
    try:
        meta = json.loads(ownfile.read(file, ownfile.SMALL_LIMIT))
    except FileNotFoundError:
        raise RunDirectoryError(f"{path}: not a writerprof run directory (it has no {layout.RUN_FILE})") from None
    except OSError as exc:
        raise RunDirectoryError(f"{file}: cannot read it: {exc.strerror}") from None
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json parses
        raise RunDirectoryError(f"{file}: not JSON (a damaged run directory?)") from None
    if not isinstance(meta, dict) or meta.get("format") != layout.FORMAT:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise RunDirectoryError(
            f"{file}: not a writerprof run file (format {found!r}, expected {layout.FORMAT!r})")
    schema = meta.get("schema")
    if type(schema) is not int or schema < 1:
        raise RunDirectoryError(f"{file}: schema {schema!r} is not a version number writerprof writes "
                                f"(1 to {layout.SCHEMA}): a damaged run directory?")
    if schema > layout.SCHEMA:
        raise RunDirectoryError(
            f"{path} was recorded by a newer writerprof (run schema {schema}; writerprof "
            f"{writerprof.__version__} reads up to schema {layout.SCHEMA}): upgrade writerprof to read it")
    return meta


def run_id(path: Path) -> str:
    """The recording's id in run.json ("" for a run from before ids, or none
    readable): every host's part of it carries the same (writerprof.run.merge
    checks it)."""
    try:
        found = read_meta(path).get("run_id")
    except RunDirectoryError:
        return ""
    return found if isinstance(found, str) else ""
