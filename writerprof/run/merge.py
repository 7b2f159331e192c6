"""One run directory from the parts of a recording made on several hosts
whose run directories were not shared: the launcher's part (with run.json)
and, from every other host, the directory its processes wrote to (holding
hosts/HOST/ only). The result is what a shared filesystem would have held:
run.json from the launcher's part, each host's subtree as it was."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from writerprof.errors import UsageError, WriterprofError
from writerprof.run import directory, layout
from writerprof.run.meta import read_meta


@dataclass(frozen=True)
class Parts:
    paths: list[Path]  # as given
    launcher: Path  # the part with run.json
    hosts: dict[str, Path]  # host -> the part holding its subtree


def find_parts(paths: list[Path]) -> Parts:
    """Which part is the launcher's and which holds each host, or why these
    are not the parts of one recording."""
    hosts: dict[str, Path] = {}
    launcher = None
    for part in map(Path, paths):
        if not part.is_dir():
            raise UsageError(f"{part}: no such directory")
        if (part / layout.RUN_FILE).exists():
            read_meta(part)  # a readable run of this writerprof, or a clear error
            if launcher is not None:
                raise UsageError(f"{launcher} and {part} both have a {layout.RUN_FILE}: two recordings, "
                                 f"not parts of one")
            launcher = part
        subtree = part / layout.HOSTS_DIR
        found = sorted(p for p in subtree.iterdir() if p.is_dir()) if subtree.is_dir() else []
        if not found:
            raise UsageError(f"{part}: no {layout.HOSTS_DIR}/HOST/ in it: not a part of a recording")
        for host_dir in found:
            if host_dir.name in hosts:
                raise UsageError(f"host {host_dir.name} is in both {hosts[host_dir.name]} and {part}")
            hosts[host_dir.name] = part
    if launcher is None:
        raise UsageError(f"none of the parts has a {layout.RUN_FILE}: name the launcher's run directory too")
    return Parts([Path(p) for p in paths], launcher, hosts)


def merge(parts: Parts, out: Path) -> Path:
    """Write the merged run directory at out (new or empty)."""
    out = directory.claim(Path(out))
    try:
        meta = json.loads((parts.launcher / layout.RUN_FILE).read_bytes())
        meta["merged_from"] = [str(p.resolve()) for p in parts.paths]
        (out / layout.RUN_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        for host, part in sorted(parts.hosts.items()):
            shutil.copytree(part / layout.HOSTS_DIR / host, out / layout.HOSTS_DIR / host)
    except OSError as exc:
        raise WriterprofError(f"cannot write {out}: {exc.strerror or exc}") from None
    return out
