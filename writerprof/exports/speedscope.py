"""A run's Python stacks as a speedscope file
(https://www.speedscope.app/file-format-schema.json), which speedscope.app
opens offline once loaded: one "sampled" profile per process, named by role,
rank and pid, and by how many threads it adds up where several ("producer
pid 9 (3 threads added up)"); or, threads=True, one per thread of each
("producer pid 9: thread MainThread"). The frames are shared across profiles.

A profile holds each distinct stack of its process once, in a fixed order,
weighted by its samples in milliseconds (samples / rate): with record's idle
sampling that is the wall-clock time the process spent in that stack. The
stacks are summed over the recording (py-spy's raw output keeps no time
order), so speedscope's "Time Order" view shows them one after the other,
sorted, and its "Left Heavy" and "Sandwich" views are the ones to read.
"""

from __future__ import annotations

import writerprof
from writerprof.run.stacks import frame_parts, how_many

SCHEMA_URL = "https://www.speedscope.app/file-format-schema.json"


def split_frame(frame: str) -> dict:
    """A py-spy frame string as a speedscope frame: name, file, line."""
    name, file, line = frame_parts(frame)
    out: dict = {"name": name}
    if file is not None:
        out["file"] = file
    if line is not None:
        out["line"] = line
    return out


def document(run, stacks, threads: bool = False) -> dict:
    """The speedscope document of stacks (writerprof.run.stacks.load_stacks(run)):
    a profile per process, or per thread of each (threads)."""
    frames: list[dict] = []
    index: dict[str, int] = {}
    profiles, roles = [], []
    for process in stacks:
        host = f" on {process.host}" if len(run.hosts) > 1 else ""
        if threads:
            tables = [(f"{process.label}{host}: {thread}", table) for thread, table in process.thread_stacks.items()]
        else:
            added = how_many([process], " added up")
            tables = [(f"{process.label}{host}{f' ({added})' if added else ''}", process.samples)]
        for name, table in tables:
            samples, weights = [], []
            ms = 1000.0 / process.rate_hz
            for stack in sorted(table):
                count = table[stack]
                if count <= 0:
                    continue
                ids = []
                for frame in stack:
                    if frame not in index:
                        index[frame] = len(frames)
                        frames.append(split_frame(frame))
                    ids.append(index[frame])
                samples.append(ids)
                weights.append(count * ms)
            profiles.append({"type": "sampled", "name": name, "unit": "milliseconds",
                             "startValue": 0, "endValue": sum(weights), "samples": samples, "weights": weights})
            roles.append(process.role)
    writers = [i for i, role in enumerate(roles) if role == "writer"]
    return {"$schema": SCHEMA_URL, "shared": {"frames": frames}, "profiles": profiles,
            "name": f"writerprof {run.path}", "activeProfileIndex": writers[0] if writers else 0,
            "exporter": f"writerprof {writerprof.__version__}"}
