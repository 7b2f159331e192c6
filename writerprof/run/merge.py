"""One run directory from the parts of a recording made on several hosts
whose run directories were not shared: the launcher's part (with run.json)
and, from every other host, the directory its processes wrote to (holding
hosts/HOST/ only). The result is what a shared filesystem would have held:
run.json from the launcher's part, each host's subtree as it was.

A part is checked before anything is written: each host's subtree carries
the recording's id (format.RUN_ID_FILE, run.json's run_id), so a part of
another recording is refused (in the launcher's own part, a host without
one is of a recording from before every part carried it); and a part holds
directories and regular files only: a symbolic link (which would copy in
whatever it points to, /etc as well), a FIFO, device or socket is refused,
never followed or read."""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

from writerprof.errors import UsageError, WriterprofError
from writerprof.probes.writerprof_probe.format import PREVIOUS_DIR, RUN_ID_FILE
from writerprof.run import directory, layout, ownfile
from writerprof.run.meta import read_meta


@dataclass(frozen=True)
class Parts:
    paths: list[Path]  # as given
    launcher: Path  # the part with run.json
    meta: dict  # its run.json
    hosts: dict[str, Path]  # host -> the part holding its subtree
    files: dict[str, list[tuple[str, bool]]]  # host -> its subtree's entries (relative path, is a directory)

    @property
    def run_id(self) -> str:
        run_id = self.meta.get("run_id")
        return run_id if isinstance(run_id, str) else ""  # (a damaged run.json's number: no id)


def find_parts(paths: list[Path]) -> Parts:
    """Which part is the launcher's and which holds each host, or why these
    are not the parts of one recording."""
    hosts: dict[str, Path] = {}
    launcher = meta = None
    for part in map(Path, paths):
        if not part.is_dir():
            raise UsageError(f"{part}: no such directory")
        if os.path.lexists(part / layout.RUN_FILE):
            found = read_meta(part)  # a readable run of this writerprof, or a clear error
            if launcher is not None:
                raise UsageError(f"{launcher} and {part} both have a {layout.RUN_FILE}: two recordings, "
                                 f"not parts of one")
            launcher, meta = part, found
        found_hosts = _host_names(part)
        if not found_hosts:
            raise UsageError(f"{part}: no {layout.HOSTS_DIR}/HOST/ in it: not a part of a recording")
        for host in found_hosts:
            if host in hosts:
                raise UsageError(f"host {host} is in both {hosts[host]} and {part}")
            hosts[host] = part
    if launcher is None:
        raise UsageError(f"none of the parts has a {layout.RUN_FILE}: name the launcher's run directory too")
    parts = Parts([Path(p) for p in paths], launcher, meta, hosts, {})
    for host, part in sorted(hosts.items()):
        _check_run_id(parts, host, part)
        try:
            parts.files[host] = _entries(part / layout.HOSTS_DIR / host)
        except OSError as exc:
            raise WriterprofError(f"{exc.filename}: unreadable ({exc.strerror}); not merged") from None
    return parts


def merge(parts: Parts, out: Path) -> Path:
    """Write the merged run directory at out (new, or empty and ours)."""
    out = directory.claim(Path(out))
    meta = {**parts.meta, "merged_from": [str(p.resolve()) for p in parts.paths]}
    if isinstance(meta.get("homecoming"), dict) and isinstance(meta["homecoming"].get("missing"), dict):
        # A part that did not come home to record is no longer missing once merged here.
        meta["homecoming"] = {**meta["homecoming"], "missing": {
            host: why for host, why in meta["homecoming"]["missing"].items() if host not in parts.hosts}}
    directory.start(out, meta)
    try:
        hosts = out / layout.HOSTS_DIR
        hosts.mkdir(ownfile.PRIVATE_DIR)
        for host in sorted(parts.hosts):
            _copy_host(parts, host, hosts / host)
    except OSError as exc:
        raise WriterprofError(f"cannot write {out}: {exc.filename}: {exc.strerror or exc}") from None
    return out


def add_parts(parts: Parts) -> list[str]:
    """merge() into the launcher's part itself: each other part's hosts
    copied into it (record, as the parts come home: writerprof.record.homecoming).
    The hosts added; a host not copied whole is not left there."""
    added = []
    for host, part in sorted(parts.hosts.items()):
        if part == parts.launcher:
            continue
        target = parts.launcher / layout.HOSTS_DIR / host
        try:
            _copy_host(parts, host, target)
        except OSError as exc:
            shutil.rmtree(target, ignore_errors=True)
            raise WriterprofError(f"cannot write {target}: {exc.filename}: {exc.strerror or exc}") from None
        added.append(host)
    return added


def _copy_host(parts: Parts, host: str, target: Path) -> None:
    """The host's subtree, as find_parts listed it, copied to target (new)."""
    source = parts.hosts[host] / layout.HOSTS_DIR / host
    target.mkdir(ownfile.PRIVATE_DIR)
    for rel, is_dir in parts.files[host]:
        if is_dir:
            (target / rel).mkdir(ownfile.PRIVATE_DIR)
        else:
            _copy(source / rel, target / rel)


def _host_names(part: Path) -> list[str]:
    """The hosts of a part: the directories in its hosts/ (none if it has none)."""
    subtree = part / layout.HOSTS_DIR
    try:
        mode = os.lstat(subtree).st_mode
    except FileNotFoundError:
        return []
    _refuse_special(subtree, mode)
    if not stat.S_ISDIR(mode):
        return []
    names = []
    with os.scandir(subtree) as listing:
        for entry in listing:
            mode = entry.stat(follow_symlinks=False).st_mode
            _refuse_special(Path(entry.path), mode)
            if stat.S_ISDIR(mode):
                names.append(entry.name)
    return sorted(names)


def _entries(top: Path) -> list[tuple[str, bool]]:
    """Every entry below top, parents first, as (path relative to top, is a directory)."""
    out = []
    # os.walk never follows a link to a directory (it lists it, and lstat refuses it).
    for at, dirs, files in os.walk(top, onerror=_raise):
        base = Path(at).relative_to(top)
        for name in sorted(dirs + files):
            path = Path(at) / name
            mode = os.lstat(path).st_mode
            _refuse_special(path, mode)
            out.append((str(base / name), stat.S_ISDIR(mode)))
    return out


def _raise(exc: OSError):
    raise exc


def _refuse_special(path: Path, mode: int) -> None:
    """A UsageError for what a part never holds: anything but a directory or regular file."""
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise UsageError(f"{path}: {ownfile.not_regular(mode)}: a part of a recording holds none; not merged")


def _check_run_id(parts: Parts, host: str, part: Path) -> None:
    file = part / layout.HOSTS_DIR / host / RUN_ID_FILE
    try:
        found = ownfile.read(file, ownfile.SMALL_LIMIT).decode("ascii", "replace").strip()
    except FileNotFoundError:
        if part == parts.launcher:
            return  # beside its run.json: that recording's, from before the launcher's host's part carried the id
        found = ""
    except OSError as exc:
        raise WriterprofError(f"{file}: unreadable ({exc.strerror}); not merged") from None
    if found != parts.run_id and part == parts.launcher:  # its own run.json's host: damage, not another recording
        raise WriterprofError(f"{file} says recording {_shown(found)}, the {layout.RUN_FILE} beside it "
                              f"{_shown(parts.run_id)}: a damaged run directory; not merged")
    if found != parts.run_id:
        earlier = part / PREVIOUS_DIR / parts.run_id
        moved = (f" (a later recording moved this one's part of {host} aside: merge {earlier})"
                 if parts.run_id.isalnum() and (earlier / layout.HOSTS_DIR / host).is_dir() else "")
        raise UsageError(f"{part}: host {host} is of another recording: its recording id is {_shown(found)}, "
                         f"{parts.launcher}'s is {parts.run_id or 'none (recorded before recording ids)'}; "
                         f"not merged{moved}")


def _copy(source: Path, target: Path) -> None:
    """A part's file copied, as what it is when opened (ownfile: a regular
    file, not through a link), into a new file of ours."""
    with ownfile.open_file(source) as src:
        fd = ownfile.create(target, ownfile.NEW)
        try:
            while os.sendfile(fd, src.fileno(), None, 1 << 30):
                pass
        finally:
            os.close(fd)


def _shown(run_id: str) -> str:
    """A recording id as a message's line can hold it: a damaged file's bytes (a newline) quoted."""
    if not run_id:
        return "none"
    return run_id if run_id.isalnum() and len(run_id) <= 64 else repr(run_id[:64])
