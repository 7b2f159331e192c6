"""Make a run directory and close it: the launcher's side of the format.
The directory is a new one (mkdir, mode 0700) or an empty one of ours, and
the O_EXCL creation of its run.json claims it: of two launchers given one
directory at once, one records into it and the other stops (start). Its
files are 0600. run.json is then replaced whole, so that a reader never
sees half of it, through a temporary file of a random name made with
O_EXCL|O_NOFOLLOW (nothing planted there is written through); on a full
disk, where no new file fits, it is rewritten in the room it already has
(see _write_json)."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import writerprof
from writerprof.probes.writerprof_probe import part
from writerprof.probes.writerprof_probe.format import RUN_ID_FILE, host_name
from writerprof.probes.writerprof_probe.identity import redact_argv
from writerprof.run import layout, ownfile
from writerprof.run.ownfile import PRIVATE_DIR, make_dirs
from writerprof.run.meta import RunDirectoryError, read_meta


class RunDirectoryTaken(RunDirectoryError):
    """The directory holds a recording, or a host's part of one: never two
    recordings in one directory (bad input, exit 2)."""

    exit_code = 2


def create(path: Path | None, command: list[str], *, interval_ns: int, sampler: bool,
           probes: list[str], env: dict, what_if: dict | None = None, stacks: dict | None = None,
           save_files: list[str] = (), interposer: bool = False, slurm: dict | None = None) -> Path:
    """A new run directory with run.json (still recording) and this host's procs/.
    what_if: the probe's what-if switches this run was recorded with (contrast);
    stacks: the stack sampler's settings (writerprof.record.stackoptions.StackOptions.settings(),
    completed by record with what was taken); save_files: the globs that name
    the checkpoint files (writerprof.run.files), none for its default rule;
    interposer: whether CMD runs with the I/O interposer preloaded; slurm:
    the job it runs in (writerprof.record.slurm.context), None outside one."""
    path = _new_default() if path is None else claim(Path(path))
    host = host_name()
    run_id = os.urandom(8).hex()  # the recording's: carried by every host's part (merge)
    start(path, {
        "format": layout.FORMAT,
        "schema": layout.SCHEMA,
        "writerprof_version": writerprof.__version__,
        "run_id": run_id,
        "command": redact_argv(list(command)),  # as the probe journals argv: no credentials
        "cwd": os.getcwd(),
        "host": host,
        "started_wall_ns": time.time_ns(),
        "started_ns": time.monotonic_ns(),
        "ended_ns": None,
        "exit_status": None,
        "ended_by": None,
        "signal": None,
        "signals": [],
        "interval_ns": interval_ns,
        "sampler": sampler,
        "probes": list(probes),
        "env": dict(env),
        "what_if": dict(what_if or {}),
        "stacks": dict(stacks) if stacks is not None else None,
        "save_files": list(save_files),
        "interposer": interposer,
        "slurm": slurm,
    })
    try:
        part.claim(str(path), host, run_id)  # this host's part, carrying the id, as every other host's
        make_dirs(layout.procs_dir(path, host))
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot make the run directory's {layout.HOSTS_DIR}/: "
                                f"{exc.strerror}") from None
    return path


def start(path: Path, meta: dict) -> None:
    """Write run.json, new, into the directory path: its creation (O_EXCL)
    is the claim, so a RunDirectoryError if another launcher's is there."""
    file = Path(path) / layout.RUN_FILE
    try:
        fd = ownfile.create(file, ownfile.NEW)
    except FileExistsError:
        raise RunDirectoryTaken(f"{path}: taken by another writerprof meanwhile (it has a {layout.RUN_FILE} "
                                f"now); choose another run directory") from None
    except OSError as exc:
        raise RunDirectoryError(f"cannot write {file}: {exc.strerror}") from None
    try:
        _dump(fd, meta)
    except OSError as exc:
        _unlink(file)
        raise RunDirectoryError(f"cannot write {file}: {exc.strerror or exc}") from None
    except BaseException:
        _unlink(file)
        raise


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
        make_dirs(directory)
    except OSError as exc:
        raise RunDirectoryError(f"{directory}: cannot make it: {exc.strerror}") from None
    _write_json(directory / layout.TOPOLOGY_FILE, topology)


def new_default(stem: str, what: str = "run directory") -> Path:
    """A new directory STEM (or STEM-2, ...) here, for a command's output when
    -o is not given; a one-line error naming the place and -o if none can be made."""
    for n in range(1, 10_000):
        candidate = Path(stem if n == 1 else f"{stem}-{n}")
        try:
            candidate.mkdir(PRIVATE_DIR)  # mkdir, not a test first: two launchers in one second stay apart
            return candidate
        except FileExistsError:
            continue
        except OSError as exc:
            raise RunDirectoryError(f"cannot make the {what} {Path.cwd() / candidate}: {exc.strerror}; "
                                    f"name another place with -o") from None
    raise RunDirectoryError(f"{stem}: too many {what} names of that kind here; name another with -o")


def _new_default() -> Path:
    return new_default(time.strftime("writerprof-%Y%m%d-%H%M%S"))


def claim(path: Path, what: str = "run directory", mode: int = PRIVATE_DIR) -> Path:
    """A new directory at path (made with mode), or an empty one there that
    is ours and no symbolic link (`what` it is for, in the message): never
    one another user made or points to, such as a name planted in /tmp. The
    directory itself is made, never the ones above it: a mistyped parent is
    an error, not a new tree (the rule of every output, commands.common).
    Two callers may both get one empty directory: what must not be shared
    claims it with a file of its own (start)."""
    path = Path(path)
    parent_missing(path, what)
    try:
        path.mkdir(mode)
        return path
    except FileExistsError:
        pass
    except OSError as exc:
        raise RunDirectoryError(f"{path}: cannot create it: {exc.strerror}") from None
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise RunDirectoryError(f"{path}: a symbolic link; name a new or empty directory of your own as the {what}")
    if not stat.S_ISDIR(info.st_mode):
        raise RunDirectoryError(f"{path}: exists and is not a directory; choose another {what}")
    if info.st_uid != os.geteuid():
        raise RunDirectoryError(f"{path}: owned by another user (uid {info.st_uid}); choose a {what} of your own")
    if any(path.iterdir()):
        held = _recording_in(path)
        if held:
            raise RunDirectoryTaken(f"{path}: holds {held} already, and a {what} holds one recording: "
                                    f"choose a new or empty one")
        raise RunDirectoryError(f"{path}: exists and is not empty; choose another {what}")
    return path


def _recording_in(path: Path) -> str | None:
    """What recording the directory holds ("recording ID", "a part of
    recording ID"), or None."""
    if os.path.lexists(path / layout.RUN_FILE):
        try:
            return f"recording {read_meta(path).get('run_id') or '(from before recording ids)'}"
        except RunDirectoryError:
            return f"a {layout.RUN_FILE}"
    for id_file in sorted((path / layout.HOSTS_DIR).glob(f"*/{RUN_ID_FILE}")):
        try:
            found = ownfile.read(id_file, ownfile.SMALL_LIMIT).decode("ascii", "replace").strip()
        except OSError:
            continue
        return f"a part of recording {found} ({id_file.parent.relative_to(path)})"
    return None


def parent_missing(path: Path, what: str) -> None:
    """A one-line error if the directory an output goes into is not there."""
    parent = Path(path).parent
    if not parent.is_dir():
        state = "is not a directory" if parent.exists() else "does not exist"
        raise RunDirectoryError(f"cannot write {what} {path}: {parent} {state}")


def _dump(fd: int, data: dict) -> None:
    with open(fd, "w") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def _write_json(file: Path, data: dict) -> None:
    """Write through a temporary file and rename, so that file is whole or old.
    Where no new file fits (a full disk), an existing file is rewritten in
    place, compact, if that fits in the blocks it already holds: those are
    not taken away by a full disk. Else a RunDirectoryError."""
    try:
        temporary, fd = ownfile.temporary_beside(file)
    except OSError as exc:
        if not _rewrite_in_place(file, data):
            raise RunDirectoryError(f"cannot write {file}: {exc.strerror or exc}") from None
        return
    try:
        _dump(fd, data)
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
        fd = os.open(file, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)  # the file itself, never through a link
    except OSError:
        return False
    with open(fd, "r+b", buffering=0) as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or len(compact) > info.st_blocks * 512:
            return False  # it would need a new block, and a failed write would leave it half old
        try:
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
