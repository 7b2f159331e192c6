"""The types the loader requires of the fields in a run directory's JSON
(run.json, journal lines, the sampler's records, topology.json, stacks.json),
so that the analysis reads clean data: a field of another type (a string
where a dict belongs, a number for a list, a time that no clock can read) is
left out, as if it had not been written, and the loader says how many were;
a record without a field it cannot be read without is dropped. Fields not
named here are kept as they are."""

from __future__ import annotations

from itertools import chain, repeat
from math import isnan
from operator import itemgetter
from typing import Callable

Check = Callable[[object], bool]

# A CLOCK_MONOTONIC or wall-clock reading, or a count: >= 0, and far enough
# below 2**63 that differences and sums of a few of them stay int64s.
MAX_TIME = 1 << 62


def is_int(v) -> bool:
    return type(v) is int and -MAX_TIME < v < MAX_TIME


def is_count(v) -> bool:
    return type(v) is int and 0 <= v < MAX_TIME


def is_id(v) -> bool:
    """A pid or a rank: what an int32 column of run.processes holds."""
    return type(v) is int and 0 <= v < 1 << 31


def is_str(v) -> bool:
    return isinstance(v, str)


def is_bool(v) -> bool:
    return isinstance(v, bool)


def is_number(v) -> bool:
    return type(v) in (int, float) and v == v and abs(v) < MAX_TIME  # not NaN, not huge


def is_dict(v) -> bool:
    return isinstance(v, dict)


# The int checks' ranges (lo <= v < hi), for _all_pass.
_INT_RANGES = {is_count: (0, MAX_TIME), is_id: (0, 1 << 31), is_int: (-MAX_TIME + 1, MAX_TIME)}


def optional(check: Check) -> Check:
    return _made(lambda v: v is None or check(v), optional=check)


def list_of(check: Check) -> Check:
    return _made(lambda v: isinstance(v, list) and all(check(x) for x in v), list_of=check)


def dict_of(check: Check) -> Check:
    return _made(lambda v: isinstance(v, dict) and all(check(x) for x in v.values()), dict_of=check)


def _made(check, **how) -> Check:
    check.made = next(iter(how.items()))  # how it was made, for _all_pass
    return check


def is_node_key(v) -> bool:
    return isinstance(v, str) and v.isdigit() and len(v) < 6


# A placement's nodes: {node: pages}, as the loader reads them into columns.
node_pages = _made(lambda v: isinstance(v, dict) and all(map(is_node_key, v)) and all(map(is_count, v.values())),
                   node_pages=is_count)


# Journal fields, by name, whatever the kind (kinds and fields: the probe's
# format module); a (kind, field) entry overrides the name's.
EVENT_FIELDS: dict[str, Check] = {
    "kind": is_str, "t_ns": is_count, "start_ns": is_count, "end_ns": is_count,
    "schema": is_int, "pid": is_id, "ppid": is_id, "created_ns": is_count, "child_pid": is_id,
    "wall_ns": is_count, "mono_ns": is_count, "forked_from": optional(is_id),
    "rank": optional(is_id), "local_rank": optional(is_id), "world_size": optional(is_id),
    "argv": list_of(is_str), "executable": is_str, "python": is_str, "implementation": is_str,
    "host": is_str, "created_via": is_str, "role": is_str, "env": dict_of(is_str),
    "affinity": list_of(is_count), "source": optional(is_str), "spec": is_str, "status": is_str,
    "reason": optional(is_str), "name": is_str, "method": is_str, "target": is_str, "started": is_bool,
    "writer_seq": is_count, "path": optional(is_str), "module": optional(is_str),
    "native_threads": is_count, "python_threads": is_count, "threads": list_of(is_str),
    "forking_thread": optional(is_str), "native_only": list_of(is_str), "comm": is_str,
    "op": is_str, "size": is_count, "index": is_int,
    "start": is_count, "end": is_count, "when": is_str, "pages": is_count, "sampled": is_count,
    "stride": is_count, "unfaulted": is_count, "unreadable": is_count, "nodes": dict_of(is_count), "via": is_str,
    "code": optional(is_int), "rusage": dict_of(is_number), "signal": optional(lambda v: is_str(v) or is_int(v)),
    "applied": is_bool, "cpus": list_of(is_count), "inherited": list_of(is_count), "modules": list_of(is_str),
    "events_dropped": optional(is_count), "records_dropped": optional(is_count), "error": is_str,
    "where": is_str, "forced": optional(is_str), "requested": optional(is_str), "samples": is_count,
    "cpu_ns": is_count,
    # The resource tracker's (the probe's tracker.py).
    "rtype": is_str, "tracker": optional(is_count), "caller": optional(is_str), "site": optional(is_str),
    "opened": is_str, "outcome": is_str, "errno": optional(is_int), "category": is_str, "message": is_str,
    "pipe": is_count, "fd": is_int,
}
KIND_FIELDS: dict[tuple[str, str], Check] = {
    ("phase", "code"): is_count,
    # Read into int32 columns (writerprof.run.shm).
    ("shm", "index"): is_id, ("placement", "index"): is_id, ("placement", "nodes"): node_pages,
}
# What each kind cannot be read without (every kind: kind and t_ns).
REQUIRED: dict[str, tuple[str, ...]] = {
    "process": ("pid", "created_ns"),
    "process_start": ("start_ns", "end_ns"),
    "activated": ("start_ns", "end_ns"), "main_rerun": ("start_ns", "end_ns"), "unpickle": ("start_ns", "end_ns"),
    "phase": ("code", "name"),
    "shm": ("index",), "placement": ("index",),
}

# The sampler's records (sampled.jsonl, kinds in writerprof.run.layout).
SAMPLED_FIELDS: dict[str, Check] = {
    "kind": is_str, "t_ns": is_count, "pid": is_id, "ppid": is_id, "created_ns": is_count,
    "cmdline": list_of(is_str), "exe": optional(is_str), "cpus": is_str, "address": is_count, "file": is_str,
    "pages": dict_of(is_count), "huge": is_bool, "error": is_str, "traceback": is_str,
    "counters": dict_of(is_int), "pythonpath_has_probe": optional(is_bool),
}
SAMPLED_REQUIRED: dict[str, tuple[str, ...]] = {"seen": ("pid",), "exec": ("pid",), "affinity": ("pid", "cpus"),
                                                "gone": ("pid",), "vmstat": ("counters",),
                                                "numa_sched": ("pid", "counters")}

# run.json (its keys: writerprof.run.layout).
META_FIELDS: dict[str, Check] = {
    "command": list_of(is_str), "cwd": is_str, "host": is_str, "writerprof_version": is_str,
    "started_wall_ns": is_count, "started_ns": is_count, "ended_ns": optional(is_count),
    "exit_status": optional(is_int), "ended_by": optional(is_str), "signal": optional(is_str),
    "interval_ns": optional(is_count), "sampler": is_bool, "probes": list_of(is_str), "env": dict_of(is_str),
    "what_if": dict_of(is_str), "synthetic": is_bool, "merged_from": list_of(is_str), "stacks": optional(is_dict),
    "incomplete": list_of(is_str), "outlived_cmd": list_of(is_dict), "sampler_ticks": optional(is_dict),
    "save_files": list_of(is_str), "interposer": is_bool, "run_id": is_str, "signals": list_of(is_dict),
    "slurm": optional(is_dict), "homecoming": optional(is_dict),
}
STACKS_META_FIELDS: dict[str, Check] = {
    "enabled": is_bool, "rate_hz": lambda v: is_number(v) and v > 0, "native": is_bool, "idle": is_bool,
    "nonblocking": is_bool, "taken": optional(is_bool), "reason": optional(is_str), "py_spy": optional(is_str),
    "samples": optional(is_count), "segments": optional(lambda v: is_count(v) or isinstance(v, list)),
    "sparse_rate_hz": lambda v: is_number(v) and v > 0, "tree_rate_hz": lambda v: is_number(v) and v > 0,
    "full_rate_processes": optional(is_count), "full_rate_samples": optional(is_count),
    "busy_cpu_processes": optional(is_count), "busy_rate_hz": optional(lambda v: is_number(v) and v > 0),
    "after_startup_processes": optional(is_count),
}

# stacks.json, the stack sampler's index.
STACKS_INDEX_FIELDS: dict[str, Check] = {
    "rate_hz": lambda v: is_number(v) and v > 0, "segments": list_of(is_dict), "py_spy": optional(is_str),
    "executable": optional(is_str), "command": list_of(is_str), "enabled": is_bool,
    "sparse_rate_hz": lambda v: is_number(v) and v > 0, "tree_rate_hz": lambda v: is_number(v) and v > 0,
    "full_rate_command": optional(list_of(is_str)), "by": is_str,
    "daemon_rate_hz": lambda v: is_number(v) and v > 0,
}
SEGMENT_FIELDS: dict[str, Check] = {
    "file": is_str, "root_pid": optional(is_count), "started_ns": optional(is_count),
    "ended_ns": optional(is_count), "exit_status": optional(is_int), "samples": optional(is_count),
    "errors": optional(is_count), "pid": optional(is_count), "rate_hz": lambda v: is_number(v) and v > 0,
    "stage": optional(is_str), "ended": optional(is_str),
}


def clean(record: dict, checks: dict[str, Check], kind_checks: dict | None = None) -> list[str]:
    """Leave out the fields of record that fail their check, in place; their names."""
    kind = record.get("kind") if isinstance(record.get("kind"), str) else None
    wrong = [name for name, value in record.items()
             if not (kind_checks or {}).get((kind, name), checks.get(name, _any))(value)]
    for name in wrong:
        del record[name]
    return wrong


def clean_event(event: dict) -> tuple[bool, list[str]]:
    """A journal line cleaned in place: (still readable, fields left out)."""
    wrong = clean(event, EVENT_FIELDS, KIND_FIELDS)
    return _has(event, REQUIRED), wrong


def clean_sampled(record: dict) -> tuple[bool, list[str]]:
    wrong = clean(record, SAMPLED_FIELDS)
    return _has(record, SAMPLED_REQUIRED), wrong


def clean_events(files: list[list]) -> list[tuple[list[dict], list[str]]]:
    """Per journal, its parsed lines' dicts each as clean_event leaves it:
    (the readable ones in order, the fields left out)."""
    return _clean_all(files, EVENT_FIELDS, KIND_FIELDS, REQUIRED, clean_event)


def clean_sampled_records(files: list[list]) -> list[tuple[list[dict], list[str]]]:
    """Per sampled.jsonl, its parsed lines' dicts each as clean_sampled leaves it."""
    return _clean_all(files, SAMPLED_FIELDS, {}, SAMPLED_REQUIRED, clean_sampled)


def _clean_all(files: list[list], checks: dict, kind_checks: dict, required: dict, clean_one):
    """What clean_one does to each dict of each file's parsed lines, done a
    field at a time: the records of one kind, in all the files, are checked
    a field over all of them at once (a pass of builtins, many times faster
    than a check per record); the records of a kind in which any value fails
    are cleaned by clean_one one by one, so the outcome is clean_one's."""
    records = [parsed if set(map(type, parsed)) <= {dict} else [r for r in parsed if isinstance(r, dict)]
               for parsed in files]
    kinds: dict = {}  # kind -> its records
    try:
        for rs in records:
            for r, kind in zip(rs, map(dict.get, rs, repeat("kind"))):
                kinds.setdefault(kind, []).append(r)
        how: dict | None = {}  # id of a record not kept as it is -> "drop" | "each"
    except TypeError:  # an unhashable kind: every record on its own
        how = None
    for kind, group in (kinds.items() if how is not None else ()):
        kind = kind if isinstance(kind, str) else None
        names, whole = tuple(group[0]), True
        try:  # the common case: every record has the first one's fields, and no other (KeyError else)
            if set(map(len, group)) != {len(names)}:
                raise KeyError
            values = (zip(*map(itemgetter(*names), group)) if len(names) > 1
                      else [list(map(itemgetter(*names), group))] if names else [])
        except KeyError:  # a field at a time over the records that have it
            names, whole = tuple(dict.fromkeys(chain.from_iterable(group))), False
            values = [[r[name] for r in group if name in r] for name in names]
        if not all(_all_pass(kind_checks.get((kind, name), checks.get(name, _any)), column)
                   for name, column in zip(names, values)):
            how.update(dict.fromkeys(map(id, group), "each"))
        elif whole:
            if not _has(group[0], required):
                how.update(dict.fromkeys(map(id, group), "drop"))
        else:
            how.update((id(r), "drop") for r in group if not _has(r, required))
    if how == {}:  # the common case: every record of every file kept as it is
        return [(rs, []) for rs in records]
    out = []
    for rs in records:
        if how is not None and how.keys().isdisjoint(map(id, rs)):  # the common case: every record kept as it is
            out.append((rs, []))
            continue
        kept, wrong = [], []
        for r in rs:
            verdict = how.get(id(r), "keep") if how is not None else "each"
            if verdict == "keep":
                kept.append(r)
            elif verdict == "each":
                readable, left_out = clean_one(r)
                wrong += left_out
                if readable:
                    kept.append(r)
        out.append((kept, wrong))
    return out


def _all_pass(check: Check, values) -> bool:
    """all(map(check, values)), for the common checks without a call per value."""
    if check is _any:
        return True
    types = set(map(type, values))
    if check in (is_str, is_dict) and types <= {str if check is is_str else dict}:
        return True
    if check is is_bool and types <= {bool}:
        return True
    if check in _INT_RANGES and types <= {int}:
        lo, hi = _INT_RANGES[check]
        return not values or (min(values) >= lo and max(values) < hi)
    if check is is_number and types <= {int, float}:  # isnan last: only then is every value a float's size
        return not values or (min(values) > -MAX_TIME and max(values) < MAX_TIME and not any(map(isnan, values)))
    made, inner = getattr(check, "made", (None, None))
    if made == "optional":
        return _all_pass(inner, [v for v in values if v is not None])
    if made == "list_of" and types <= {list}:
        return _all_pass(inner, list(chain.from_iterable(values)))
    if made == "node_pages" and types <= {dict}:
        return all(map(is_node_key, chain.from_iterable(values))) and _all_pass(
            inner, list(chain.from_iterable(map(dict.values, values))))
    if made == "dict_of" and types <= {dict}:
        return _all_pass(inner, list(chain.from_iterable(map(dict.values, values))))
    return all(map(check, values))


def _has(record: dict, required: dict[str, tuple[str, ...]]) -> bool:
    return "kind" in record and "t_ns" in record and all(f in record for f in required.get(record["kind"], ()))


def _any(value) -> bool:
    return True


def topology_problem(snapshot) -> str | None:
    """What makes a topology.json unusable (None: nothing); the analysis reads
    its nodes (node -> cpus), cpus (cpu -> node) and cpu_model."""
    from writerprof.run.topology import SCHEMA

    if not isinstance(snapshot, dict):
        return f"a {type(snapshot).__name__}, not an object"
    schema = snapshot.get("schema", SCHEMA)
    if type(schema) is not int or not 1 <= schema <= SCHEMA:
        return f"topology schema {schema!r} (this writerprof reads 1 to {SCHEMA})"
    nodes, cpus = snapshot.get("nodes", {}), snapshot.get("cpus", {})
    if not (isinstance(nodes, dict) and all(is_node_key(n) and isinstance(info, dict)
                                            and list_of(is_count)(info.get("cpus")) for n, info in nodes.items())):
        return "its nodes are not node -> {cpus: [CPU, ...]}"
    if not (isinstance(cpus, dict) and all(is_node_key(c) and isinstance(info, dict)
                                           and "node" in info and optional(is_count)(info["node"])
                                           and optional(list_of(is_count))(info.get("siblings"))
                                           for c, info in cpus.items())):
        return "its cpus are not CPU -> {node: N, siblings: [CPU, ...]}"
    if not optional(is_str)(snapshot.get("cpu_model")):
        return "its cpu_model is not a string"
    return None


def describe(wrong: list[str]) -> str:
    """'3 fields (argv, rank)' for a loss line, from the names of the fields left out."""
    distinct = sorted(set(wrong))
    names = ", ".join(distinct[:4]) + (", ..." if len(distinct) > 4 else "")
    return f"{len(wrong)} field{'s' * (len(wrong) != 1)} ({names})"
