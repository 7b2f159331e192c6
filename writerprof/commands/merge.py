"""Merge the parts of one recording made on several hosts whose run
directories were not shared: the launcher's run directory (with run.json)
and, from every other host, the directory its processes wrote to (holding
hosts/HOST/ only). The result is the run directory a shared filesystem would
have held: run.json from the launcher's part, each host's subtree as it was.

    writerprof merge RUN_LAUNCHER RUN_HOST_B RUN_HOST_C ... -o RUN
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from writerprof.errors import UsageError, WriterprofError

HELP = "merge the per-host parts of a recording made without a shared run directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("parts", nargs="+", type=Path, metavar="RUN",
                        help="the launcher's run directory and each other host's part")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="RUN",
                        help="the merged run directory (new or empty)")


def run(args: argparse.Namespace) -> int:
    from writerprof.run import directory, layout
    from writerprof.run.load import read_meta

    hosts: dict[str, Path] = {}
    launcher = None
    for part in args.parts:
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
    out = directory.claim(args.output)
    try:
        meta = json.loads((launcher / layout.RUN_FILE).read_bytes())
        meta["merged_from"] = [str(p.resolve()) for p in args.parts]
        (out / layout.RUN_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        for host, part in sorted(hosts.items()):
            shutil.copytree(part / layout.HOSTS_DIR / host, out / layout.HOSTS_DIR / host)
    except OSError as exc:
        raise WriterprofError(f"cannot write {out}: {exc.strerror or exc}") from None
    print(f"writerprof merge: {out}: {len(hosts)} host(s): "
          + ", ".join(f"{host} (from {part})" for host, part in sorted(hosts.items())), file=sys.stderr)
    return 0
