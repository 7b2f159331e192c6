"""Make a run directory and close it: the launcher's side of the format.
run.json is replaced whole, so that a reader never sees half of it; on a
full disk, where no new file fits, it is rewritten in the room it already
has (see _write_json)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import writerprof
from writerprof.probes.writerprof_probe.format import host_name
from writerprof.probes.writerprof_probe.identity import redact_argv
from writerprof.run import layout
from writerprof.run.meta import RunDirectoryError, read_meta


def create(path: Path | None, command: list[str], *, interval_ns: int, sampler: bool,
           probes: list[str], env: dict, what_if: dict | None = None, stacks: dict | None = None,
           save_files: list[str] = (), interposer: bool = False) -> Path:
    """A new run directory with run.json (still recording) and this host's procs/.
    what_if: the probe's what-if switches this run was recorded with (contrast);
    stacks: the stack sampler's settings (writerprof.record.stackoptions.StackOptions.settings(),
    completed by record with what was taken); save_files: the globs that name
    the checkpoint files (writerprof.run.files), none for its default rule;
    interposer: whether CMD runs with the I/O interposer preloaded."""
    path = _new_default() if path is None else claim(Path(path))
    host = host_name()
    try:
        layout.procs_dir(path, host).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot make the run directory's {layout.HOSTS_DIR}/: "
                                f"{exc.strerror}") from None
    _write_json(path / layout.RUN_FILE, {
        "format": layout.FORMAT,
        "schema": layout.SCHEMA,
        "writerprof_version": writerprof.__version__,
        "command": redact_argv(list(command)),  # as the probe journals argv: no credentials
        "cwd": os.getcwd(),
        "host": host,
        "started_wall_ns": time.time_ns(),
        "started_ns": time.monotonic_ns(),
        "ended_ns": None,
        "exit_status": None,
        "ended_by": None,
        "signal": None,
        "interval_ns": interval_ns,
        "sampler": sampler,
        "probes": list(probes),
        "env": dict(env),
        "what_if": dict(what_if or {}),
        "stacks": dict(stacks) if stacks is not None else None,
        "save_files": list(save_files),
        "interposer": interposer,
    })
    return path


def update_meta(path: Path, **items) -> None:
    """Set items of run.json while recording (such as what stacks were taken);
    a RunDirectoryError if it cannot be (a vanished or full run directory)."""
    meta = read_meta(path)
    meta.update(items)
    _write_json(Path(path) / layout.RUN_FILE, meta)


def finish(path: Path, *, exit_status: int, ended_by: str, signal: str | None, **items) -> None:
    """Mark the recording ended now, with how CMD ended (and any other items
    of run.json, in the same write)."""
    update_meta(path, **items, ended_ns=time.monotonic_ns(), exit_status=exit_status, ended_by=ended_by,
                signal=signal)


def write_topology(path: Path, host: str, topology: dict) -> None:
    directory = layout.host_dir(path, host)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RunDirectoryError(f"{directory}: cannot make it: {exc.strerror}") from None
    _write_json(directory / layout.TOPOLOGY_FILE, topology)


def new_default(stem: str, what: str = "run directory") -> Path:
    """A new directory STEM (or STEM-2, ...) here, for a command's output when
    -o is not given; a one-line error naming the place and -o if none can be made."""
    for n in range(1, 10_000):
        candidate = Path(stem if n == 1 else f"{stem}-{n}")
        try:
            candidate.mkdir()  # mkdir, not a test first: two launchers in one second stay apart
            return candidate
        except FileExistsError:
            continue
        except OSError as exc:
            raise RunDirectoryError(f"cannot make the {what} {Path.cwd() / candidate}: {exc.strerror}; "
                                    f"name another place with -o") from None
    raise RunDirectoryError(f"{stem}: too many {what} names of that kind here; name another with -o")


def _new_default() -> Path:
    return new_default(time.strftime("writerprof-%Y%m%d-%H%M%S"))


def claim(path: Path, what: str = "run directory") -> Path:
    """An empty or new directory at path (`what` it is for, in the message).
    The directory itself is made, never the ones above it: a mistyped parent
    is an error, not a new tree (the rule of every output, commands.common)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunDirectoryError(f"{path}: exists and is not a directory; choose another {what}")
    if path.is_dir() and any(path.iterdir()):
        raise RunDirectoryError(f"{path}: exists and is not empty; choose another {what}")
    parent_missing(path, what)
    try:
        path.mkdir(exist_ok=True)
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot create it: {exc.strerror}") from None
    return path


def parent_missing(path: Path, what: str) -> None:
    """A one-line error if the directory an output goes into is not there."""
    parent = Path(path).parent
    if not parent.is_dir():
        state = "is not a directory" if parent.exists() else "does not exist"
        raise RunDirectoryError(f"cannot write {what} {path}: {parent} {state}")


def _write_json(file: Path, data: dict) -> None:
    """Write through a temporary file and rename, so that file is whole or old.
    Where no new file fits (a full disk), an existing file is rewritten in
    place, compact, if that fits in the blocks it already holds: those are
    not taken away by a full disk. Else a RunDirectoryError."""
    temporary = file.with_name(f".{file.name}.{os.getpid()}.tmp")  # one launcher per run
    try:
        with open(temporary, "w") as f:
            json.dump(data, f, indent=2)
            f.write("\n")
        os.replace(temporary, file)
    except OSError as exc:
        _unlink(temporary)
        if not _rewrite_in_place(file, data):
            raise RunDirectoryError(f"cannot write {file}: {exc.strerror or exc}") from None
    except BaseException:
        _unlink(temporary)
        raise


def _rewrite_in_place(file: Path, data: dict) -> bool:
    compact = (json.dumps(data, separators=(",", ":")) + "\n").encode()
    try:
        with open(file, "r+b") as f:
            if len(compact) > os.fstat(f.fileno()).st_blocks * 512:
                return False  # it would need a new block, and a failed write would leave it half old
            f.write(compact)
            f.truncate()
    except OSError:
        return False
    return True


def _unlink(file: Path) -> None:
    try:
        file.unlink(missing_ok=True)
    except OSError:
        pass
