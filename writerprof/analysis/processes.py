"""The process table: who each recorded process is, where it was allowed to
run and where it ran, where its buffers' pages are, and what it cost the
kernel (faults, involuntary switches)."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import buffers, threads, work_windows
from writerprof.analysis.samples import cpu_column, node_table, sample_rows
from writerprof.run import roles as run_roles
from writerprof.run import columns, topology
from writerprof.units import parse_cpu_list

# The calls that are a process's own work, whose CPUs say where it worked.
WORK_PHASES = {run_roles.WRITER: "write", run_roles.PRODUCER: "gen"}


def shares(weights: dict) -> dict[str, float]:
    """{key: weight} -> {key: share of the total}, largest first; keys as strings (JSON)."""
    total = sum(weights.values())
    if total <= 0:
        return {}
    items = weights.items() if len(weights) == 1 else sorted(weights.items(), key=_largest_first)  # (60k calls)
    return {str(k): v / total for k, v in items}


def _largest_first(item: tuple) -> tuple:
    return -item[1], item[0]


def mean_shares(many: list[dict]) -> dict[str, float]:
    """The mean of several {node: share} (empty ones left out), largest first."""
    many = [s for s in many if s]
    total: dict = {}
    for share in many:
        for node, value in share.items():
            total[node] = total.get(node, 0.0) + value / len(many)
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def dominant(share: dict[str, float]) -> tuple[int | None, float]:
    """The node with the largest share, and that share."""
    if not share:
        return None, 0.0
    node, value = next(iter(share.items()))
    return int(node), value


WORKED_FROM_THREADS = "threads' CPU time"
WORKED_FROM_CALLS = "hooked calls' CPUs"
WORKED_FROM_SAMPLES = "sampler"


def _worked(by_threads, by_calls, by_samples) -> tuple[dict[str, float], str | None]:
    """The one answer to "which nodes did it work on", and where it comes from:
    the CPU time of all its threads inside the spans it worked on the saves'
    buffers (thread_work), else its hooked calls' CPUs (runs without
    per-thread readings), else the sampler's readings of it. Every report and
    diagnosis reads this."""
    for found, source in ((by_threads, WORKED_FROM_THREADS), (by_calls, WORKED_FROM_CALLS),
                          (by_samples, WORKED_FROM_SAMPLES)):
        if found:
            return found, source
    return {}, None


def table(run, idx, role_of: np.ndarray) -> list[dict]:
    """One row per process (role_of: run.roles.roles'), its start_method None
    and where it worked empty until with_start_methods and with_work (the
    fields the saves give: summarize finds them beside the table)."""
    # Field by field: long because the row is wide, not because it branches;
    # the per-run lookups before the loop serve every row.
    p = run.processes
    origin = run.meta.get("started_ns") or 0
    node_of = {host: topology.cpu_nodes(t) for host, t in run.topology.items()}
    rows_of_samples = sample_rows(run)
    sampled = rows_of_samples >= 0
    sampled_nodes = _node_shares(_on_nodes(run)(rows_of_samples[sampled], run.samples["cpu"][sampled]))
    by_proc = np.argsort(rows_of_samples, kind="stable")
    bounds = np.searchsorted(rows_of_samples[by_proc], np.arange(-1, len(p) + 1)).tolist()
    affinity_log = _affinity_log(run)
    found = buffers.readings(run)
    mapped, last_nodes = found.mapped, found.last_nodes
    # The columns as lists, and the samples' threads in process order once: a field
    # or a fancy index per row costs more than the row's work at 10k processes.
    hosts, pids, ppids = list(p["host"]), p["pid"].tolist(), p["ppid"].tolist()
    created, exited, rank = p["created_ns"].tolist(), p["exited_ns"].tolist(), p["rank"].tolist()
    sample_threads = run.samples["threads"][by_proc].tolist()
    # Each row's last sample's counters, as lists (a row without samples reads another's: not used).
    lasts = by_proc[np.maximum(np.array(bounds[2:], dtype=np.int64) - 1, 0)] if len(by_proc) else by_proc
    minflt, majflt, nivcsw, nvcsw, utime, stime = (run.samples[name][lasts].tolist() for name in (
        "minflt", "majflt", "nonvoluntary_ctxt", "voluntary_ctxt", "utime_ns", "stime_ns"))
    rows_of_pid: dict = {}
    for row, (h, pid) in enumerate(zip(hosts, pids)):
        rows_of_pid.setdefault((h, pid), []).append(row)
    out = []
    for row in range(len(p)):
        host, pid = hosts[row], pids[row]
        nodes = node_of.get(host, {})
        identity = idx.events[row][0][1] if idx.events[row] else {}
        first, end = bounds[row + 1], bounds[row + 2]
        inherited = sorted(identity.get("affinity") or [])
        # The what-ifs pin and local set a child's CPUs before its target runs: those are the ones it worked with.
        pinned = [d.get("cpus") for k, d in idx.events[row]
                  if k == "mitigation" and d.get("name") in ("pin", "local") and d.get("applied")
                  and not d.get("where")]
        allowed = sorted(pinned[-1]) if pinned else inherited
        changes = [(t, cpus) for t, cpus in affinity_log.get((host, pid), [])
                   if t >= created[row] and (exited[row] < 0 or t <= exited[row])]
        usage = next((d.get("rusage") for k, d in reversed(idx.events[row]) if k == "exit"), None) or {}
        sampled_row = end > first
        out.append({
            "id": row,
            "host": host,
            "rank": rank[row],
            "pid": pid,
            "ppid": ppids[row],
            "parent": _parent(row, hosts, ppids, created, rows_of_pid),
            "role": str(role_of[row]),
            "start_method": None,
            "python": identity.get("python"),
            "created_s": (created[row] - origin) / 1e9,
            "exited_s": (exited[row] - origin) / 1e9 if exited[row] >= 0 else None,
            "allowed_cpus": allowed,
            "inherited_cpus": inherited,
            "memory": identity.get("memory"),
            "allowed_nodes": sorted({nodes[c] for c in allowed if c in nodes}),
            "affinity_changes": [{"t_s": (t - origin) / 1e9, "cpus": cpus} for t, cpus in changes],
            "samples": end - first,
            "cpu_nodes": sampled_nodes[row],
            "work_nodes": {},  # with_work
            "thread_nodes": {},  # with_work
            "thread_cpu_s": None,
            "threads": [],
            "worked_nodes": {},
            "worked_nodes_from": None,
            "buffer_nodes": _buffer_nodes(mapped.get(row, ()), last_nodes.get(row, {})),
            "minflt": _counter(usage, "minflt", sampled_row and minflt[row]),
            "majflt": _counter(usage, "majflt", sampled_row and majflt[row]),
            "nonvoluntary_switches": _counter(usage, "nivcsw", sampled_row and nivcsw[row]),
            "voluntary_switches": _counter(usage, "nvcsw", sampled_row and nvcsw[row]),
            "cpu_s": (usage["utime_s"] + usage["stime_s"]) if "utime_s" in usage else (
                (utime[row] + stime[row]) / 1e9 if sampled_row else None),
            "threads_max": max(sample_threads[first:end]) if end > first else None,
        })
    return out


def _parent(row, hosts, ppids, created, rows_of_pid) -> int | None:
    """The row of the probed process that started this one: its ppid, the
    newest by that pid created before it (hosts, ppids, created: run.processes' columns as lists)."""
    rows = [r for r in rows_of_pid.get((hosts[row], ppids[row]), []) if created[r] <= created[row]]
    return max(rows, key=lambda r: created[r]) if rows else None


def _counter(usage: dict, key: str, sampled: int | bool) -> int | None:
    """The process's own count at exit (getrusage), else the sampler's last
    reading (sampled: it, or False for a process with no sample)."""
    if key in usage:
        return int(usage[key])
    return None if sampled is False else sampled


def _affinity_log(run) -> dict:
    log: dict = {}
    parsed: dict = {}  # a CPU list's text -> its CPUs (None: not a list): a few texts, thousands of processes
    for record in run.sampled:
        if record.get("kind") == "affinity" and isinstance(record.get("cpus"), str):
            text = record["cpus"]
            if text not in parsed:
                try:
                    parsed[text] = sorted(parse_cpu_list(text))
                except ValueError:
                    parsed[text] = None
            if parsed[text] is not None:
                cpus = list(parsed[text])  # (a list of each row's own)
                log.setdefault((record["host"], record.get("pid")), []).append((int(record["t_ns"]), cpus))
    return log


def with_start_methods(rows: list[dict], saves: list[dict]) -> list[dict]:
    """The table's rows with their start_method: a writer's, the method it
    was started with; a producer's, the methods it used."""
    used: dict = {}
    for save in saves:
        if save["writer"] == save["producer"]:  # a process that saved its own file: it started no writer
            continue
        if save["writer"] is not None:
            rows[save["writer"]]["start_method"] = save["start_method"]
        used.setdefault(save["producer"], set()).add(save["start_method"] or "?")
    for row, methods in used.items():
        rows[row]["start_method"] = ",".join(sorted(methods))
    return rows


def _work_calls(run, role_of):
    """The chunks of each process's work calls (WORK_PHASES of its role): a mask of run.chunk_columns."""
    c = run.chunk_columns
    codes = {name: code for code, name in run.phase_names.items()}
    work_code = np.array([codes.get(WORK_PHASES.get(role), -1) for role in role_of] or [-1])
    phase, proc = c["phase"], c["proc"]
    mask = np.empty(len(phase), bool)
    for block in columns.blocks(len(phase)):  # (no temporary of every record's code: 8 bytes a record)
        np.equal(phase[block], work_code[proc[block]], out=mask[block])
    return mask


def _work_nodes(run, mine: np.ndarray) -> list[dict[str, float]]:
    """Per process: node -> share of the time of its work calls (mine: a mask
    of run.chunk_columns), by the CPU each ended on; all processes at once, a
    block of records at a time (no copy of every call's fields: a 10M-chunk
    run's took 0.4 GiB)."""
    c = run.chunk_columns
    proc, start, end, cpu = c["proc"], c["start_ns"], c["end_ns"], c["cpu"]
    on_nodes = _on_nodes(run)
    table = 0.0
    for block in columns.blocks(len(proc)) or [slice(0, 0)]:  # (once, empty, without calls: a table of zeros)
        calls = np.flatnonzero(mine[block]) + block.start
        # Whole nanoseconds summed as floats: exact in any order up to 2**53 ns (104 days).
        table = table + on_nodes(proc[calls], cpu[calls], end[calls] - start[calls])
    return _node_shares(table)


def _on_nodes(run):
    """f(rows, cpus, weights=None): a (process row, node) table of the weights
    (None: the number) of records of those processes read on those CPUs."""
    lut = node_table(run)
    number = {host: i for i, host in enumerate(run.hosts)}
    host_of = np.array([number[h] for h in run.processes["host"]] or [0])
    n_nodes = max(int(lut.max()) + 1, 1)

    def table(rows, cpus, weights=None) -> np.ndarray:
        node = lut[host_of[rows], cpu_column(lut, cpus)]
        known = node >= 0
        return np.bincount(rows[known] * n_nodes + node[known], weights=None if weights is None else weights[known],
                           minlength=len(run.processes) * n_nodes).reshape(len(run.processes), n_nodes)
    return table


def _node_shares(table: np.ndarray) -> list[dict[str, float]]:
    """Per row of a (process row, node) table: node -> share (processes.shares)."""
    return [shares({n: w for n, w in enumerate(row) if w > 0}) for row in table.tolist()]  # (not numpy's scalars)


def with_work(rows: list[dict], calls_nodes: list[dict[str, float]], found: dict[int, dict]) -> list[dict]:
    """The table's rows with where each process worked (_worked), its threads'
    CPU time and its busiest threads: calls_nodes and found, work's (the
    whole run's, or its parts' together)."""
    for row in rows:
        work = found.get(row["id"], {})
        row["work_nodes"] = calls_nodes[row["id"]]
        row["thread_nodes"], row["thread_cpu_s"] = work.get("nodes", {}), work.get("cpu_s")
        row["threads"] = work.get("threads", [])
        row["worked_nodes"], row["worked_nodes_from"] = _worked(row["thread_nodes"], row["work_nodes"],
                                                                row["cpu_nodes"])
    return rows


def work(run, role_of, saves: list[dict]) -> tuple[list[dict[str, float]], dict[int, dict]]:
    """Per process row (role_of: its role), the share of its work calls' time
    per node, and its threads' (thread_work): from one mask of its work calls."""
    if not len(run.processes):
        return [], {}
    calls = _work_calls(run, role_of)
    return _work_nodes(run, calls), thread_work(run, calls, saves)


def thread_work(run, calls: np.ndarray, saves: list[dict]) -> dict[int, dict]:
    """Per process: its threads' CPU time per node (threads.worked, as shares)
    inside the spans it worked on a save's buffers (work_windows), so that
    neither its start-up nor what it did between saves counts; a process that
    worked on none: inside its work calls (calls: _work_calls' mask; all its life without any)."""
    spans = work_windows.spans(run, saves)
    c = run.chunk_columns
    windowed = np.zeros(len(run.processes), bool)
    for row, _, _ in spans:
        windowed[row] = True
    calls = calls & (~windowed)[c["proc"]]
    if calls.any():
        calls = np.flatnonzero(calls)
        spans.append((c["proc"][calls], *(work_windows.taken(c[name], calls) for name in ("start_ns", "end_ns"))))
    found = threads.worked(run, spans)
    for work in found.values():
        work["nodes"] = shares(work["nodes"])
        for thread in work["threads"]:
            thread["nodes"] = shares(thread["nodes"])
    return found


def _buffer_nodes(mapped, last_nodes: dict) -> dict[str, float]:
    """Node -> share of the sampled pages of the buffers this process created
    or attached, as last measured (an inherited mapping is its parent's)."""
    pages: dict = {}
    for index, nodes in last_nodes.items():  # in the order they were first read
        if index in mapped:
            for node, count in nodes.items():
                node = int(node)
                pages[node] = pages.get(node, 0) + count
    return shares(pages)
