"""A run's world (analysis.world) as text, the same in every output that
states it first: record's summary, report (text and HTML), contrast. A run
without ranks has no line; a partial job's line starts with PARTIAL, names
the missing ranks, and its figures say they are the ranks seen's."""

from __future__ import annotations

from writerprof.render.markup import _e
from writerprof.units import format_cpu_list

HOSTS_NAMED = 8  # hosts named one by one; beyond, the first ones and how many more
RANKS_CHARS = 60  # a list of ranks cut past this many characters, with how many in all


def rank_list(ranks: list[int]) -> str:
    """'rank 3', 'ranks 0-3,8': cut short on many scattered ranks, with their count."""
    text = format_cpu_list(ranks)
    if len(text) > RANKS_CHARS:
        text = text[:text.rindex(",", 0, RANKS_CHARS)] + f",... ({len(ranks)} in all)"
    return f"rank{'s' * (len(ranks) != 1)} {text}"


def headline(world: dict) -> str | None:
    """The ranks and hosts line; None for a run without ranks (record inside a
    rank has none: a batch script's own rank variables are no MPI job's) and
    for a whole world of one rank (as plain a run as one without MPI)."""
    if world["launched_by"]:
        return (f"PARTIAL: no rank recorded, though CMD ran {', '.join(world['launched_by'])}; hosts seen: "
                f"{_hosts(world)}")
    if world["ranks_seen"] <= 1 and not world["partial"]:
        return None
    if not world["partial"]:
        return f"{_count(world)}{', all recorded' * bool(world['ranks_expected'])}; hosts: {_hosts(world)}"
    lines = [f"PARTIAL: {_count(world)} recorded"]
    if world["missing_ranks"]:
        lines.append(f"{rank_list(world['missing_ranks'])} missing")
    if world["missing_hosts"]:
        lines.append(f"{world['missing_hosts']} of {world['hosts_expected']} hosts missing (by "
                     f"{world['hosts_expected_from']}; their names not known here)")
    return "; ".join(lines + [f"hosts seen: {_hosts(world)}"])


def _count(world: dict) -> str:
    """'2 of 4 ranks', or the ranks seen where no world size was journaled."""
    if world["ranks_expected"] is None:
        return f"{world['ranks_seen']} ranks (no world size journaled)"
    return f"{world['ranks_seen']} of {world['ranks_expected']} ranks"


def _hosts(world: dict) -> str:
    """'vm (ranks 0-1), hostb (no rank)'; past HOSTS_NAMED hosts, the first ones and how many more."""
    by_host = world["ranks_by_host"]
    named = [f"{host} ({rank_list(by_host[host]) if by_host.get(host) else 'no rank'})"
             for host in world["hosts"][:HOSTS_NAMED]]
    more = len(world["hosts"]) - HOSTS_NAMED
    return ", ".join(named) + (f" and {more} more" if more > 0 else "")


def seen_only(world: dict) -> str:
    """What a figure over the ranks is over, for a partial job: '' for a whole one."""
    if not world["partial"]:
        return ""
    if not world["ranks_seen"]:
        return "no rank recorded (PARTIAL: not the job's)"
    return f"over the {_count(world)} recorded (PARTIAL: not the job's)"


def to_complete(run: str, where: str = "this run directory's path") -> str:
    """How to get the missing ranks of a partial job into run (where: the
    path the other hosts recorded into, where known)."""
    return (f"without shared storage each other host keeps its part at {where} there: copy those here, "
            f"`writerprof merge {run} PART... -o MERGED` and report MERGED; a rank its launcher gave none of "
            f"record's variables was never probed (docs/mpi.md)")


def of_runs(runs: list[dict]) -> str | None:
    """A contrast's line on its recordings' worlds (runs: contrast.json's, each
    with its "world"), first in its text: the partial ones named, else the
    job's ranks and hosts; None without ranks."""
    partial = [r for r in runs if r["world"]["partial"]]
    if partial:
        named = "; ".join(f"{r['method']} repeat {r['repeat']}: {headline(r['world'])}" for r in partial)
        return (f"PARTIAL: {len(partial)} of {len(runs)} recordings lack ranks of the job ({named}): their figures "
                f"are over the ranks recorded, not the job's")
    line = next((found for r in runs if (found := headline(r["world"]))), None)  # every recording's whole
    return f"World: {line}" if line else None


def of_runs_html(runs: list[dict]) -> str:
    """of_runs as a contrast page's first paragraph: a notice where a recording is partial."""
    line = of_runs(runs)
    if line is None:
        return ""
    return f'<p class="{"notice" if any(r["world"]["partial"] for r in runs) else "note"}">{_e(line)}</p>'
