"""A run's stall snapshots (RUN/hosts/HOST/stalls.jsonl, layout.STALLS_FILE,
written by record --stall: writerprof.record.snapshot), read apart from
the rest of the run (writerprof.run.load does not read them: a run without
the file, or a writerprof from before it, reads the run as it was).

Each snapshot is cleaned as the loader cleans journal lines
(writerprof.run.fields): a field of the wrong type is left out, a process
or thread without its pid or tid is dropped, a line that is no snapshot (a
last line cut short by a killed record) is skipped; each such is a line
in Losses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from writerprof.run import fields, layout, ownfile, times
from writerprof.run.fields import is_count, is_dict, is_id, is_int, is_str, list_of, optional

SNAPSHOT_FIELDS = {"t_ns": is_count, "wall_ns": optional(is_count), "last_progress_ns": is_count,
                   "stall_ns": is_count, "window_ns": is_count, "machine": optional(is_str),
                   "py_spy": optional(is_str), "stacks_error": optional(is_str), "processes": list_of(is_dict)}
PROCESS_FIELDS = {"pid": is_id, "ppid": optional(is_id), "created_ns": optional(is_count), "comm": optional(is_str),
                  "window_ns": optional(is_count),
                  "state": optional(is_str), "role": optional(is_str), "cmdline": optional(list_of(is_str)),
                  "exe": optional(is_str), "stack_error": optional(is_str), "threads": list_of(is_dict)}
THREAD_FIELDS = {"tid": is_id, "name": optional(is_str), "state": optional(is_str), "cpu": optional(is_int),
                 "window_cpu_ns": optional(is_int), "window_delay_ns": optional(is_int), "syscall": optional(is_int),
                 "syscall_name": optional(is_str),
                 "syscall_args": optional(list_of(is_int)), "wchan": optional(is_str),
                 "python_name": optional(is_str), "frames": optional(list_of(is_dict))}
FRAME_FIELDS = {"function": optional(is_str), "file": optional(is_str), "line": optional(is_int)}


@dataclass
class Stalls:
    snapshots: list[dict] = field(default_factory=list)  # in time order per host, each with its "host"
    losses: list[str] = field(default_factory=list)


def load(run) -> Stalls:
    found = Stalls()
    for host in run.hosts:
        path = layout.host_dir(run.path, host) / layout.STALLS_FILE
        try:
            text = ownfile.read(path, ownfile.SMALL_LIMIT).decode("utf-8", "replace")
        except FileNotFoundError:
            continue
        except OSError as exc:
            found.losses.append(f"{times.rel(run.path, path)}: unreadable ({exc.strerror or exc}): its stall "
                                f"snapshots are left out")
            continue
        dropped = wrong = 0
        for line in text.splitlines():
            snapshot = _parsed(line)
            if snapshot is None:
                dropped += 1
                continue
            wrong += _clean(snapshot)
            found.snapshots.append({**snapshot, "host": host})
        if dropped or wrong:
            found.losses.append(f"{times.rel(run.path, path)}: {dropped} line(s) that are no stall snapshot "
                                f"skipped, {wrong} field(s), process(es) or thread(s) of the wrong type left out")
    return found


def _parsed(line: str) -> dict | None:
    try:
        snapshot = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(snapshot, dict):
        return None
    fields.clean(snapshot, SNAPSHOT_FIELDS)
    return snapshot if all(k in snapshot for k in ("t_ns", "last_progress_ns", "processes")) else None


def _clean(snapshot: dict) -> int:
    """Its processes, threads and frames cleaned in place; how many things were left out."""
    wrong = 0
    processes = []
    for process in snapshot["processes"]:
        wrong += len(fields.clean(process, PROCESS_FIELDS))
        if "pid" not in process:
            continue
        threads = []
        for thread in process.get("threads", []):
            wrong += len(fields.clean(thread, THREAD_FIELDS))
            for frame in thread.get("frames") or []:
                wrong += len(fields.clean(frame, FRAME_FIELDS))
            if "tid" in thread:
                threads.append(thread)
        wrong += len(process.get("threads", [])) - len(threads)
        process["threads"] = threads
        processes.append(process)
    wrong += len(snapshot["processes"]) - len(processes)
    snapshot["processes"] = processes
    return wrong
