"""Numbers and names as text, the same in every renderer (terminal, HTML,
plots)."""

from __future__ import annotations

import shlex

from writerprof.units import format_cpu_list


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
