"""One time line for a run of many hosts. Each host has its own
CLOCK_MONOTONIC; each probed process journals one (wall_ns, mono_ns) pair
taken together, which ties its host's monotonic clock to wall time. The
hosts' wall clocks are taken to agree (NTP/PTP keep them within
milliseconds; writerprof cannot see how well), so a host's offset is the
difference of its wall-minus-monotonic anchor and the recording host's."""

from __future__ import annotations

from collections import defaultdict

import numpy as np


def alignment(run) -> dict[str, dict]:
    """Per host: offset_ns to add to its monotonic readings to put them on the
    recording host's clock, the anchors it rests on, and spread_ns, how far
    that host's own anchors disagree (each is read by a different process at
    a different moment: the alignment is no better than this)."""
    wall, mono = run.meta.get("started_wall_ns"), run.meta.get("started_ns")
    anchors = defaultdict(list)
    identities = run.events["kind"] == "process"  # (each process's first event: few of a run's)
    for host, data in zip(run.events["host"][identities].tolist(), run.events["data"][identities].tolist()):
        if isinstance(data.get("wall_ns"), int) and isinstance(data.get("mono_ns"), int):
            anchors[host].append(data["wall_ns"] - data["mono_ns"])
    out = {}
    for host in run.hosts:
        values = anchors.get(host, [])
        known = bool(values) and bool(wall) and bool(mono)
        home = host == run.meta.get("host")
        out[host] = {
            "offset_ns": int(np.median(values)) - (wall - mono) if known and not home else 0,
            "anchors": len(values),
            "spread_ns": int(max(values) - min(values)) if values else None,
            "aligned": home or known,
        }
    return out


def host_offsets(run) -> dict[str, int]:
    """Per host, nanoseconds to add to its monotonic readings (0: the
    recording host's, or no anchor known)."""
    return {host: a["offset_ns"] for host, a in alignment(run).items()}
