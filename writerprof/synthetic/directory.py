"""Writing a synthetic run directory: every host's subtree, then run.json,
which says the run is synthetic and records the scenario it was made from."""

from __future__ import annotations

import json
from pathlib import Path

import writerprof
from writerprof.run import layout
from writerprof.run.meta import RunDirectoryError
from writerprof.synthetic.host import WALL_BASE, Host, clock_base, host_name
from writerprof.synthetic.machine import Machine, make_topology
from writerprof.synthetic.scenario import Scenario
from writerprof.synthetic.timeline import MS, ns


def write_run(path, scenario: Scenario | None = None) -> Path:
    """Write the run directory of `scenario` at `path` (new or empty)."""
    sc = scenario or Scenario()
    path = Path(path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise RunDirectoryError(f"{path}: exists and is not an empty directory")
    path.mkdir(parents=True, exist_ok=True)
    machine = Machine(sc.topology or make_topology(sc.nodes, sc.cpus_per_node, sc.smt))
    last = 0
    for host in range(sc.hosts):
        last = max(last, Host(sc, machine, path, host).write())
    meta = {
        "format": layout.FORMAT, "schema": layout.SCHEMA, "writerprof_version": writerprof.__version__,
        "command": sc.command(), "cwd": "/synthetic", "host": host_name(0),
        "started_wall_ns": WALL_BASE, "started_ns": clock_base(0),
        "ended_ns": clock_base(0) + last + 40 * MS, "exit_status": 0, "ended_by": "exit",
        "signal": None, "interval_ns": ns(sc.interval_s), "sampler": True, "probes": [], "env": {},
        "what_if": {}, "synthetic": True, "scenario": sc.jsonable(),
    }
    (path / layout.RUN_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return path
