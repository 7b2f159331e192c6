"""Stacks taken by the probe inside each Python process of CMD (record's
default, issue 16; the sampler is writerprof_probe.stacks), as record
asks for them and says what was taken. py-spy (writerprof.record.pyspy)
takes them instead with --stacks-by py-spy, and for --native.

The probe's files are hosts/HOST/stacks/PID-CREATED.stacks.txt, one per
process; stacks.json beside them says who took them ("by": "probe") and at
what rates, for the loader (writerprof.run.stacks)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from writerprof.probes.writerprof_probe import format as journal
from writerprof.record.stackoptions import DAEMON_RATE_HZ, StackOptions
from writerprof.run import ownfile
from writerprof.run.layout import STACKS_INDEX


def rates(options: StackOptions) -> tuple[int, int, int]:
    """(full, sparse, daemon) Hz: a writer's start-up, the rest, multiprocessing's daemons."""
    sparse = min(options.sparse_rate_hz, options.rate_hz)
    return options.rate_hz, sparse, min(sparse, DAEMON_RATE_HZ)


def environment(options: StackOptions) -> dict:
    """What CMD's environment needs for the probe to sample its stacks."""
    return {journal.STACKS_ENV: ",".join(map(str, rates(options)))}


def write_index(stacks_dir: Path, options: StackOptions) -> None:
    _, sparse, daemon = rates(options)
    ownfile.make_dirs(stacks_dir)
    index = {**options.settings(), "tree_rate_hz": sparse, "daemon_rate_hz": daemon, "segments": []}
    ownfile.replace(stacks_dir / STACKS_INDEX, (json.dumps(index, indent=2) + "\n").encode())


def outcome(run_dir: Path, options: StackOptions) -> dict:
    """What the probe took on every host (run.json's "stacks"): the samples
    of its files, counted in periods of the full rate (a sparse sample
    counts for the periods it stands for)."""
    samples = processes = 0
    files = []
    probed = False  # whether any process journaled: else no Python process was reached at all
    try:
        for host in os.listdir(run_dir / journal.HOSTS_DIR):
            probed = probed or any(n.endswith(journal.EVENTS_SUFFIX) for n in _listing(
                run_dir / journal.HOSTS_DIR / host / journal.PROCS_DIR))
            where = run_dir / journal.HOSTS_DIR / host / journal.STACKS_DIR
            files += [where / n for n in os.listdir(where) if n.endswith(journal.STACKS_SUFFIX)]
    except OSError:
        pass
    for file in files:
        counted = 0
        try:
            with open(file, "rb") as lines:
                for line in lines:
                    count = line.rstrip(b"\n").rpartition(b" ")[2]
                    counted += int(count) if count.isdigit() else 0
        except OSError:
            continue
        samples += counted
        processes += counted > 0
    taken = samples > 0
    return {**options.settings(), "taken": taken,
            "reason": None if taken else "no probed Python process lived long enough to be sampled" if probed
            else "no Python process was probed",
            "py_spy": None, "segments": 0, "samples": samples, "processes": processes,
            "tree_rate_hz": rates(options)[1]}


def _listing(directory: Path) -> list[str]:
    try:
        return os.listdir(directory)
    except OSError:
        return []
