"""A host's sampler agent: on a host other than the launcher's, the first
probed process starts this (python -m writerprof.record.agent RUN HOST
INTERVAL_NS ROOT_PID [STALL_NS]). It writes the host's topology and samples ROOT_PID, its
descendants and every process that journals into RUN/hosts/HOST/procs/,
as `writerprof record`'s sampler does on the launcher's host (its stall
snapshots too: writerprof.record.stall), until none of
them is left (or the recording has ended, when the run directory is shared).
It never prints: what ends it early is left in RUN/hosts/HOST/agent.error,
which the loader reports."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

# Ticks with no process to follow before the agent ends: ranks of one host
# start within moments of each other, and the next may not have journaled yet.
IDLE_TICKS = 20


def run(run_dir: Path, host: str, interval_s: float, root_pid: int, stall_ns: int = 0) -> None:
    from writerprof.record import topology
    from writerprof.record.sampler import Sampler
    from writerprof.run import directory, layout

    directory.write_topology(run_dir, host, topology.snapshot())
    sampler = Sampler(root_pid, layout.host_dir(run_dir, host), interval_s, stall_ns=stall_ns)
    sampler.start()
    idle = 0
    try:
        # A sampler that could not write (a full run directory) has stopped: so does the agent.
        while idle < IDLE_TICKS and sampler.write_error is None and not _recording_ended(run_dir):
            time.sleep(interval_s)
            # Itself aside: the probed process that started it is its parent.
            idle = 0 if sampler.status().alive - {os.getpid()} else idle + 1
    finally:
        sampler.stop()


def _recording_ended(run_dir: Path) -> bool:
    from writerprof.run import layout

    try:
        return json.loads((run_dir / layout.RUN_FILE).read_bytes()).get("ended_ns") is not None
    except (OSError, ValueError):
        return False  # not shared with the launcher, or being rewritten: carry on


def main(argv: list[str]) -> int:
    try:
        run_dir, host, interval_ns, root_pid, *stall_ns = argv  # (no STALL_NS: a probe from before --stall)
        run(Path(run_dir), host, int(interval_ns) / 1e9, int(root_pid), int(stall_ns[0]) if stall_ns else 0)
    except Exception:
        _leave_word(argv)
        return 1
    return 0


def _leave_word(argv: list[str]) -> None:
    """What went wrong, where the loader will find it (ERROR_FILE)."""
    import traceback

    try:
        from writerprof.run import layout, ownfile

        path = layout.host_dir(Path(argv[0]), argv[1]) / layout.AGENT_ERROR_FILE
        ownfile.replace(path, traceback.format_exc().encode())
    except Exception:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
