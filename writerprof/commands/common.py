"""What every command shares: its output directories and files.

One rule for all of them: writerprof creates the file or directory it is
asked to write, never the directories above it. A mistyped parent is a
one-line error, not a tree of new directories (up to `/` as root). And no
output is written over the run it was made from, nor over another output of
the same command (check_outputs)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from writerprof.errors import UsageError, WriterprofError
from writerprof.run import layout
from writerprof.run.directory import claim as new_directory  # empty or new, for output that must not mix
from writerprof.run.directory import parent_missing

SHARED_DIR = 0o777  # a directory of plots, for others to look at: the mode the umask leaves


def output_directory(path: Path, what: str = "output directory") -> Path:
    """An existing directory, or a new one made at path (its parent must exist)."""
    path = Path(path)
    return path if path.is_dir() else new_directory(path, what, SHARED_DIR)


def check_outputs(runs: list[Path], outputs: list[tuple[str, Path | None]]) -> None:
    """A UsageError, before any work, if an output (its option, its path;
    None: not asked for) is one of a run's own files, whose data writing it
    would destroy (run.json, anything in hosts/; through a link or a hard
    link too), or the same file as another output (one would overwrite the
    other). Elsewhere in the run directory is fine (plot's RUN/plots)."""
    given = [(option, Path(path)) for option, path in outputs if path is not None]
    for run in runs:
        for option, path in given:
            own = _own_file(Path(run), path)
            if own:
                raise UsageError(f"{option} {path} is {own} of the run {run}: writing it would destroy the "
                                 f"run; choose a place outside its files")
    for i, (option, path) in enumerate(given):
        for earlier, other in given[:i]:
            if _same_file(path, other):
                raise UsageError(f"{earlier} {other} and {option} {path} are the same file: one would "
                                 f"overwrite the other; choose two")


def _own_file(run: Path, path: Path) -> str | None:
    """What of the run's own files path is, or None."""
    root = os.path.realpath(run)
    target = os.path.realpath(path)
    hosts = os.path.join(root, layout.HOSTS_DIR)
    if target == os.path.join(root, layout.RUN_FILE):
        return f"the {layout.RUN_FILE}"
    if target == hosts or target.startswith(hosts + os.sep):
        return f"inside the {layout.HOSTS_DIR}/"
    try:
        info = os.stat(path)
    except OSError:
        return None
    if info.st_nlink < 2 or not stat.S_ISREG(info.st_mode):
        return None  # no other name: the checks above were all
    for file in _run_files(root):  # a hard link: one of them under another name
        try:
            if os.path.samestat(info, os.lstat(file)):
                return f"the {os.path.relpath(file, root)}, under another name (a hard link),"
        except OSError:  # gone meanwhile
            continue
    return None


def _run_files(root: str):
    yield os.path.join(root, layout.RUN_FILE)
    for at, _, files in os.walk(os.path.join(root, layout.HOSTS_DIR)):
        yield from (os.path.join(at, name) for name in files)


def _same_file(a: Path, b: Path) -> bool:
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one is not there yet: then the real paths told
        return False


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
    from writerprof import jsonout

    return write_bytes(path, jsonout.dumps(document), what)
