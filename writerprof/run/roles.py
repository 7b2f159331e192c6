"""What each recorded process is in the checkpoint pipeline, from what its
journal shows it did: one answer for every report, plot and export."""

from __future__ import annotations

import numpy as np

PRODUCER = "producer"  # started writer processes
WRITER = "writer"  # a multiprocessing child: its Process ran a target
FORKSERVER = "forkserver"
RESOURCE_TRACKER = "resource_tracker"
OTHER = "other"


def roles(run) -> np.ndarray:
    """The role of each row of run.processes."""
    out = np.full(len(run.processes), OTHER, dtype=object)
    events = run.events
    for kind, role in (("process_start", PRODUCER), ("bootstrap", WRITER)):
        out[np.unique(events["proc"][events["kind"] == kind])] = role
    # The daemons are known by how they were started, whatever they did.
    for role in (FORKSERVER, RESOURCE_TRACKER):
        out[run.processes["role"] == role] = role
    return out
