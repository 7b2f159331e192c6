"""Merge the parts of one recording made on several hosts whose run
directories were not shared: the launcher's run directory (with run.json)
and, from every other host, the directory its processes wrote to (holding
hosts/HOST/ only). The result is the run directory a shared filesystem would
have held: run.json from the launcher's part, each host's subtree as it was.
Each host's part must carry the launcher's recording id (a later recording
into the same node-local directory moved an earlier one's to
PART/previous/ID/, which the refusal names), and hold directories and
regular files only.

    writerprof merge RUN_LAUNCHER RUN_HOST_B RUN_HOST_C ... -o RUN
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXAMPLE = """
writerprof merge run1 /scratch/node2/run1 /scratch/node3/run1 -o run1-merged
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("parts", nargs="+", type=Path, metavar="RUN",
                        help="the launcher's run directory and each other host's part")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="RUN",
                        help="the merged run directory (new, or empty and yours)")


def run(args: argparse.Namespace) -> int:
    from writerprof.run import merge

    parts = merge.find_parts(args.parts)
    out = merge.merge(parts, args.output)
    recording = f"recording {parts.run_id}" if parts.run_id else "a recording from before recording ids"
    print(f"writerprof merge: {out}: {recording}, {len(parts.hosts)} host(s): "
          + ", ".join(f"{host} (from {part})" for host, part in sorted(parts.hosts.items())), file=sys.stderr)
    return 0
