"""Numbers and names as text, the same in every renderer (terminal, HTML,
plots)."""

from __future__ import annotations

import shlex
from collections import defaultdict

from writerprof.analysis.binding import ASPECTS
from writerprof.units import format_cpu_list, format_size


def has_rank(rank) -> bool:
    return rank is not None and rank >= 0


def rank(value, none: str = "-") -> str:
    """A rank's number, or `none` for a process without one."""
    return str(value) if has_rank(value) else none


def rank_label(value) -> str:
    """'rank 3', or '' for a process without a rank."""
    return f"rank {value}" if has_rank(value) else ""


def ranks(values) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's list format reads as well for ranks as for CPUs)."""
    values = sorted({r for r in values if has_rank(r)})
    return format_cpu_list(values) if values else "-"


def seconds(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def rate(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def shares(share: dict, limit: int) -> str:
    """{node: share} as 'n:share' for the largest `limit`."""
    if not share:
        return "-"
    return " ".join(f"{n}:{v:.0%}" for n, v in list(share.items())[:limit])


def placement_value(value) -> str:
    """A comparison's placement entry: node shares, CPU lists, or a name."""
    if isinstance(value, dict):
        return shares(value, 4)
    if isinstance(value, list):
        return "; ".join(format_cpu_list(v) if isinstance(v, list) else str(v) for v in value) or "-"
    return "-" if value is None else str(value)


def command(argv) -> str:
    """argv as a shell would take it back: each argument quoted where it needs
    it, and one with control characters or stray bytes (non-UTF-8, carried as
    surrogates) written $'...' with escapes, so that it stays on one line."""
    if not argv:
        return "-"
    if isinstance(argv, str):
        argv = [argv]
    return " ".join(_argument(str(a)) for a in argv)


def _argument(arg: str) -> str:
    if not any(ord(c) < 0x20 or ord(c) == 0x7F or 0xDC80 <= ord(c) <= 0xDCFF for c in arg):
        return shlex.quote(arg)
    out = []
    for c in arg:
        code = ord(c)
        if c in "\\'":
            out.append("\\" + c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8
            out.append(f"\\x{code - 0xDC00:02x}")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        else:
            out.append(c)
    return "$'" + "".join(out) + "'"


def interval_kind(comparison: dict) -> str:
    """What a comparison's 95% intervals are: over repeats the bootstrap's;
    with one run a side, the run-to-run spread's (analysis.noise)."""
    if (comparison.get("noise") or {}).get("unit") == "run":
        return "interval from the run-to-run spread (a side of one run: its saves')"
    return "bootstrap interval"


def recording_notes(run: dict) -> list[str]:
    """What the recording itself says it missed, one line each: its own
    incomplete parts, processes that outlived CMD, --probe specs that matched
    nothing (a summary's "run")."""
    notes = [f"recording incomplete: {why}" for why in run.get("incomplete") or []]
    notes += [f"pid {p.get('pid')} ({command(p.get('cmdline'))}) was still running when CMD ended: "
              f"not recorded to its end" for p in run.get("outlived_cmd") or []]
    notes += [f"--probe {spec} matched nothing: {why}" for spec, why in (run.get("probes_unmatched") or {}).items()]
    notes += [not_probed(entry) for entry in run.get("not_probed") or []]
    return notes


def ending(run: dict) -> str:
    """How the run ended (a summary's "run": its "ending", analysis.ending, and "slurm"), for the report's
    first lines."""
    e = run["ending"]
    status = e["exit_status"]
    said = ("exit status unknown" if status is None else f"exit status {status}"
            + (f" (128+{e['exit_signal']})" if e.get("exit_signal") else ""))
    cut = e.get("recording_cut")
    parts = []
    if e["cut_short"] and e["by"] == "recording_cut":
        parts.append("CUT SHORT")  # when and how: the recording's cut, below
    elif e["cut_short"]:
        parts.append(f"CUT SHORT{' by ' + e['signal'] if e['signal'] else ''}{_at(e['at_s'])}: "
                     f"{_cut_by(e['by'], run.get('slurm') or {})}")
    elif e["failed"]:
        parts.append("CMD did not start" if e["ended_by"] == "not_started" else "complete: CMD failed")
    elif cut is None:
        parts.append("complete")
    if cut is not None:
        exits = (f"all {cut['processes']} processes" if cut["exited"] == cut["processes"]
                 else f"{cut['exited']} of {cut['processes']} processes")
        killed = ("writerprof record killed: in a batch script Slurm kills the step's processes once the "
                  "script's shell ends, so `exec writerprof record`" if run.get("slurm") else "writerprof record killed?")
        parts.append(f"RECORDING CUT{_at(cut['at_s'])}: run.json never finished ({killed}), "
                     f"the report ends where the journals do; {exits} left an exit record")
    return ", ".join(parts + [said]) if parts == ["complete"] else "; ".join(parts + [said])


def _at(seconds: float | None) -> str:
    return f" at {seconds:.2f} s" if seconds is not None else ""


def _cut_by(by: str, job: dict) -> str:
    """What cut a run short (analysis.ending's "by"; job: the Slurm job's run.json entry), in words."""
    name = f"Slurm job {job.get('job_id')}"
    if by == "slurm_time_limit":
        return f"{name} reached its time limit ({_slurm_duration(job.get('time_limit_s'))})"
    before = ", before its time limit" if job.get("end_wall_ns") is not None else ""
    return {"slurm": f"{name} cancelled or signalled (scancel){before}",
            "record_signal": "a signal writerprof record received and passed on to CMD",
            "cmd_signal": "CMD was killed by it",
            "exit_status": "a process of CMD was killed by it"}[by]


def slurm_job(run: dict) -> str | None:
    """The Slurm job the run was recorded in (a summary's run["slurm"]), in a line; None outside one."""
    job = run.get("slurm")
    if not job:
        return None
    array = f" (array {job['array_job_id']}_{job['array_task_id']})" if job.get("array_job_id") else ""
    parts = [f"job {job.get('job_id')}{array}" + (f", step {job['step_id']}" if job.get("step_id") else "")]
    if job.get("nodelist"):
        parts.append(f"nodes {job['nodelist']}" + (f" ({job['nnodes']})" if job.get("nnodes") else ""))
    if job.get("ntasks") or job.get("tasks_per_node"):
        parts.append(", ".join(filter(None, [f"{job['ntasks']} tasks" if job.get("ntasks") else None,
                                             f"tasks per node {job['tasks_per_node']}"
                                             if job.get("tasks_per_node") else None])))
    parts.append(f"time limit {_slurm_duration(job['time_limit_s'])}" if job.get("time_limit_s")
                 else "no time limit")
    return "; ".join(parts)


def _slurm_duration(seconds) -> str:
    """A time limit as Slurm writes it: [DAYS-]HH:MM:SS."""
    if not isinstance(seconds, int):
        return "unknown"
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days}-{text}" if days else text


def left_out(counts: dict) -> str:
    """The saves the figures leave out (a summary's run["ending"]["saves"]), "" for none."""
    out = [f"{counts[s]} {s}" for s in ("interrupted", "unconfirmed") if counts.get(s)]
    return ", ".join(out) + " (marked in the saves; not in these figures)" if out else ""


def save_status(save: dict) -> str | None:
    """A save that is not complete (analysis.ending) as its table row marks it; None for a complete one."""
    status = save.get("status", "complete")
    return None if status == "complete" else status.upper()


# The uploads tables' title and the meaning of their time columns.
UPLOADS_TITLE = "seconds; write: its requests' times as one (parts in parallel once); threads: their sum"


def upload_rows(saves: list[dict]) -> tuple[list[list[str]], list[str]]:
    """The upload saves as the uploads tables' cells (save, rank, writer,
    key, parts, size, write, threads, status), and a line per part whose
    Content-Length the bytes sent do not bear out."""
    rows, notes = [], []
    for s in saves:
        u = s.get("upload")
        if u is None:
            continue
        rows.append([str(s["save"]), rank(s["rank"]), str(s["writer_pid"] or "-"),
                     u["key"] if u["key"] is not None else f"~{u['peer']}", str(u["parts"] or "-"),
                     format_size(u["bytes"]), seconds(u["critical_s"]), seconds(u["threads_s"]), _upload_status(u)])
        notes += [f"save {s['save']}: {m}" for m in u["mismatches"]]
    return rows, notes


def _upload_status(upload: dict) -> str:
    """ok, or what went wrong in capitals (a failed one with its HTTP status)."""
    if upload["kind"] == "inferred":
        return "inferred: no request read"
    if upload["status"] == "failed":
        return f"FAILED {upload['http_status']}"
    return upload["status"] if upload["status"] == "ok" else upload["status"].upper()


def save_cut(save: dict) -> str:
    """A save that is not complete: which, and what became of it."""
    rank = f" ({rank_label(save['rank'])})" if has_rank(save["rank"]) else ""
    who = f"save {save['save']}{rank} on {save['host']}, writer {save.get('writer_pid') or '-'}"
    if save.get("status") == "interrupted":
        return f"{who}: interrupted, {format_size(save['bytes'])} written before the cut"
    return f"{who}: unconfirmed, file closed, its owner did nothing more before the cut"


def not_probed(entry: dict) -> str:
    """Python processes the probe was not in, why, and what to do (a
    summary's run["not_probed"] entry: writerprof.analysis.unprobed)."""
    n = entry["processes"]
    example = command(entry.get("cmdline") or ["?"])
    example = example if len(example) <= 60 else example[:57] + "..."
    what = f"{n} Python process{'es' * (n != 1)} not probed ({'e.g. ' * (n != 1)}pid {entry.get('pid')}: {example})"
    if entry["why"] == "options":
        options = entry["options"]
        does = " and ".join(["ignores PYTHONPATH"] * ("-I" in options or "-E" in options)
                            + ["runs no sitecustomize"] * ("-S" in options))
        return (f"{what}: a Python started with {options} {does}, where record puts the probe: drop {options} "
                f"to probe {'them' if n != 1 else 'it'}")
    if entry["why"] == "pythonpath":
        return (f"{what}: the PYTHONPATH {'they' if n != 1 else 'it'} started with lacks record's probe "
                f"directory (the command set its own, or a launcher did not pass it on): add to PYTHONPATH "
                f"rather than replace it (PYTHONPATH=/your/dir:$PYTHONPATH), and have a launcher pass it on "
                f"(mpirun -x PYTHONPATH, srun --export=ALL)")
    return f"{what}: why is not known (its environment could not be read, or the probe did not start in it)"


def binding(b: dict) -> str:
    """A rank's launcher binding (a summary's "binding" entry), and whether its writers inherited it."""
    writers = ("its writers inherit it" if b["writers_inherit"] else
               "its writers started on CPU " + "; ".join(format_cpu_list(m) for m in b["writer_cpus"])
               if b["writer_cpus"] else "no writer of its was seen")
    return (f"rank {b['rank']}: started bound to CPU {format_cpu_list(b['cpus'])} ({len(b['cpus'])} of "
            f"{b['host']}'s {b['host_cpus']} CPUs: the launcher's binding); {writers}")


LISTED_RANKS = 4  # a host's ranks said one by one in its binding line; more are grouped by what is alike
_BOUND_BY = {"bind": "bound to", "interleave": "interleaved on", "weighted interleave": "interleaved (weighted) on",
             "prefer": "preferring", "prefer (many)": "preferring"}


def host_bindings(hosts: list[dict]) -> list[tuple[str, str]]:
    """(hosts, line) of a summary's "host_binding": each rank's CPU and memory
    binding and whether its writers inherit them; a host of more than
    LISTED_RANKS ranks in groups alike in counts (CPUs, nodes), not numbers;
    hosts whose lines are the same on one (host_names)."""
    alike = defaultdict(list)
    for h in hosts:
        exact = len(h["ranks"]) <= LISTED_RANKS
        groups = defaultdict(list)
        for r in h["ranks"]:
            groups[_rank_binding(r, h["cpus"], exact)].append(r)
        alike["; ".join(f"{_who(rows)}: {text}" for text, rows in groups.items())].append(h["host"])
    return [(host_names(names), text) for text, names in alike.items()]


def _rank_binding(r: dict, host_cpus: int, exact: bool) -> str:
    if not r["cpus_bound"]:
        cpus = f"CPUs unbound (all {host_cpus})"
    elif exact:
        cpus = f"CPUs {format_cpu_list(r['cpus'])} ({_nodes(r['cpu_nodes'])})"
    else:
        cpus = f"CPUs bound, {len(r['cpus'])} each on {_count(len(r['cpu_nodes']), 'node')}"
    if r["started_cpus"] != r["cpus"]:
        cpus += f", set after its start on {format_cpu_list(r['started_cpus'])}" if exact else ", set after its start"
    return f"{cpus}, memory {_memory(r['memory'], r['memory_bound'], r['cpu_nodes'], exact)}; {_writers(r)}"


def _writers(r: dict) -> str:
    """Whether a rank's writers (a "host_binding" rank) started with its CPUs and its memory binding."""
    if not r["writers"]:
        return "no writer seen"
    cpus, memory = r["writers_inherit_cpus"], r["writers_inherit_memory"]
    if cpus and memory:
        return "its writers inherit both"
    said = ("its writers inherit its CPUs" if cpus else
            "its writers started on CPUs " + " or ".join(map(format_cpu_list, r["writer_cpus"])) + ", not its own")
    if memory is None:
        return said + " (their memory binding not recorded)"
    if memory:
        return said + "; they inherit its memory binding"
    theirs = " or ".join(_memory(w["memory"], w["bound"], r["cpu_nodes"], True) for w in r["writer_memory"])
    return said + f"; not its memory binding (theirs: {theirs})"


def _memory(m: dict | None, bound: bool | None, cpu_nodes: list[int], exact: bool) -> str:
    """A memory binding (a process's "memory", and whether it is bound) in words."""
    if m is None or bound is None:
        return "not recorded"
    policy, nodes, allowed = m.get("policy"), m.get("nodes"), m.get("allowed")
    if not bound:
        return "unbound" + (f" ({policy})" if policy not in (None, "default") else "")
    if policy in _BOUND_BY and nodes:
        return (f"{_BOUND_BY[policy]} " + (_nodes(nodes) if exact else _count(len(nodes), "node") + " each")
                + (" (its CPUs' node)" if nodes == cpu_nodes and len(nodes) == 1 else ""))
    if policy in _BOUND_BY or allowed is None:
        return str(policy)
    # No policy naming nodes: its cpuset allows fewer than the host's.
    return "limited by its cpuset to " + (_nodes(allowed) if exact else _count(len(allowed), "node") + " each")


def _nodes(nodes: list[int]) -> str:
    return f"node{'s' * (len(nodes) != 1)} {format_cpu_list(nodes)}"


def _who(rows: list[dict]) -> str:
    """The ranks of a binding line's group, or their producers' pids where they have no rank."""
    ranked = [r["rank"] for r in rows if has_rank(r["rank"])]
    if len(ranked) == len(rows):
        return f"rank{'s' * (len(ranked) != 1)} {ranks(ranked)}"
    return f"pid{'s' * (len(rows) != 1)} {', '.join(str(r['pid']) for r in rows)}"


def placement(p: dict) -> str:
    """A summary's "placement" in a sentence: the shape of every rank's
    writers where it is alike, else each aspect that differs with the ranks
    of each kind; and the CPUs bound ranks share."""
    differs, shared, alike = [], [], defaultdict(list)
    for host, h in p["hosts"].items():
        for name in h["differs"]:
            kinds = defaultdict(list)
            for r in h["ranks"]:
                kinds[_shape_text(r["shape"], name)].append(r["rank"])
            differs.append(f"{host}: " + " vs ".join(f"{text} on {_ranks_text(rs)}" for text, rs in kinds.items()))
        shared += [f"{_ranks_text(s['ranks'])} on {host} share CPU {format_cpu_list(s['cpus'])}" for s in h["shared"]]
        if not h["differs"]:
            alike[", ".join(_shape_text(h["ranks"][0]["shape"], name) for name in ASPECTS)].append(host)
    parts = ["DIFFERS between ranks: " + "; ".join(differs)] if differs else []
    if shared:
        parts.append("CPUs SHARED: " + "; ".join(shared))
    if not differs and alike:
        shapes = [text if len(alike) == 1 else f"{host_names(hosts)}: {text}" for text, hosts in alike.items()]
        parts.append(f"{'otherwise ' * bool(shared)}the same on every rank of each host: " + "; ".join(shapes))
    if not p["hosts_alike"]:
        parts.append("the hosts' topologies differ")
    return "; ".join(parts) or "no writer seen"


def _shape_text(shape: dict, aspect: str) -> str:
    """One of analysis.binding.ASPECTS of a rank's shape, as words."""
    if aspect == "binding":
        if not shape["bound"]:
            return f"unbound (all {shape['cpus']} CPUs)"
        return (f"bound to {_count(shape['cpus'], 'CPU')} ({_count(shape['cores'], 'core')}, "
                f"{_count(shape['nodes'], 'node')})")
    return f"{aspect} {shape[aspect]}" if shape[aspect] else f"{aspect}' node not measured"


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' * (n != 1)}"


def _ranks_text(values) -> str:
    known = {v for v in values if has_rank(v)}
    return f"rank{'s' * (len(known) != 1)} {ranks(known)}" if known else "the processes without a rank"


def host_names(hosts: list[str]) -> str:
    """Hosts of one kind: the one, or how many and the first and last."""
    return hosts[0] if len(hosts) == 1 else f"{len(hosts)} hosts ({hosts[0]} ... {hosts[-1]})"
