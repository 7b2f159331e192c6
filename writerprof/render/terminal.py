"""Reports as text for a terminal, 100 columns or the terminal's width where
it is narrower (render.table): they format what the analysis found and
compute nothing of their own. Every table is render.table's. Many processes or saves (MPI runs)
are shown as the summary's rows per host and role (summary["process_groups"])
and per save index (summary["save_indices"])."""

from __future__ import annotations

import textwrap
from collections import defaultdict
from pathlib import Path

from writerprof.analysis.handoffs import BETWEEN
from writerprof.analysis.saves import COMPONENTS
from writerprof.render.format import command as _command, placement_value, rank as _rank, rate as _rate
from writerprof.render.format import binding, host_names, placement, recording_notes, seconds as _sec, shares
from writerprof.render.format import host_bindings
from writerprof.analysis.fixes import recovery_text, told_from_none
from writerprof.render.format import ending, interval_kind, left_out, save_cut, save_status, slurm_job
from writerprof.render.format import UPLOADS_TITLE, upload_rows
from writerprof.render.stalls import stall_lines
from writerprof.render import world as world_text
from writerprof.render.fix_once import once_per_process
from writerprof.render.table import WIDTH, Column, table
from writerprof.units import format_cpu_list, format_size

MAX_ROWS = 40  # beyond this many processes or saves, one row per group
SAME_CODE_SHOWN = 3  # diagnoses of one code shown in full; the rest are listed by who


def report_text(summary: dict, width: int = WIDTH) -> str:
    out = [_header(summary, width)]
    if summary["run"]["losses"]:
        out.append("\nData lost (the rest is complete and used):")
        out += [f"  - {loss}" for loss in summary["run"]["losses"]]
    out += ["", _processes(summary, width), "", _saves(summary, width)]
    out += _uploads(summary["saves"], width)
    if len(summary["ranks"]) > 1:
        out += ["", _ranks(summary, width)]
    out += stall_lines(summary, width)
    out += ["", _diagnoses(summary["diagnoses"], width)]
    return "\n".join(out).rstrip() + "\n"


def _header(summary: dict, width: int) -> str:
    run, t = summary["run"], summary["throughput"]
    command = _command(run["command"])

    def field(name: str, text: str) -> list[str]:
        return _field(name, text, width)

    world = summary["world"]
    # PARTIAL before the path: a long path wraps, and the first line still says it.
    lines = textwrap.wrap(f"writerprof report {'(PARTIAL job) ' * world['partial']}{run['path']}", width,
                          subsequent_indent=" " * 18, break_long_words=False, break_on_hyphens=False)  # a path whole
    if (ranks := world_text.headline(world)) is not None:  # before anything else: what the rest is of
        lines += field("world", ranks)
    if world["partial"]:
        lines += field("the rest", world_text.to_complete(run["path"]))
    lines.append(_cut(f"  command   {command}", width))
    lines += field("ended", ending(run) + ("   (SYNTHETIC run: generated, not measured)" if run["synthetic"] else ""))
    left = left_out(run["ending"]["saves"])
    if t["saves"]:
        methods = ", ".join(run["start_methods"]) or "no writer process started"
        lines += field("saves", f"{t['saves']}{' complete' * bool(left)} of "
                                 f"{format_size(t['bytes'] // t['saves'])}, mean {t['mean_save_s']:.3f} s, "
                                 f"{t['gib_s']:.2f} GiB/s ({methods}; Python {', '.join(run['python'])})"
                        + (f"; {left}" if left else "")
                        + (f"; {over}" if (over := world_text.seen_only(world)) else ""))
    elif left:
        lines += field("saves", f"none complete; {left}")
    else:
        lines.append("  saves     none found (no checkpoint file written, no object uploaded: see "
                     "`record --save-files`)")
    alike = defaultdict(list)  # hosts of one shape on one line
    for host, topo in summary["topology"].items():
        nodes = ", ".join(f"node {n}: CPUs {format_cpu_list(c)}" for n, c in topo["nodes"].items())
        alike[f"{topo['cpus']} CPUs, {len(topo['nodes'])} node(s) ({nodes})"].append(host)
    for shape, hosts in alike.items():
        lines.append(_cut(f"  host      {host_names(hosts)}: {shape}", width))
    for hosts, bound in host_bindings(summary.get("host_binding") or []):  # (#201: is each rank bound?)
        lines += field("binding", f"{hosts}: {bound}")
    if (job := slurm_job(run)) is not None:
        lines += field("slurm", job)
    for note in recording_notes(run):  # wrapped, not clipped: a note ends with what to do
        lines += field("note", note)
    off = [(h, c) for h, c in summary.get("clocks", {}).items() if c["offset_ns"]]
    if off:
        worst = max((c["spread_ns"] or 0) for _, c in off) / 1e6
        lines.append(_cut(f"  clocks    {len(off)} other host(s) put on this host's time line by their wall-clock "
                          f"anchors; their anchors agree within {worst:.1f} ms", width))
    return "\n".join(lines)


def _field(name: str, text: str, width: int) -> list[str]:
    """A header field's lines: wrapped, not clipped (its end says the most)."""
    return textwrap.wrap(text, width, initial_indent=f"  {name:<10}", subsequent_indent=" " * 12,
                         break_long_words=False, break_on_hyphens=False)


def _shares(share: dict, limit: int = 2) -> str:
    return shares(share, limit)


def _processes(summary: dict, width: int) -> str:
    procs = summary["processes"]
    rows = [f"Processes ({len(procs)})"]
    if len(procs) <= MAX_ROWS:
        columns = [Column("host", left=True, wrap=True), Column("rank"), Column("pid"), Column("role", left=True),
                   Column("method", left=True), Column("allowed", left=True, wrap=True),
                   Column("ran on", left=True, drop=1), Column("buffers", left=True, drop=2),
                   Column("faults", drop=3), Column("invol.", drop=4)]
        cells = [[p["host"], _rank(p["rank"]), str(p["pid"]), p["role"], p["start_method"] or "-",
                  format_cpu_list(p["allowed_cpus"]) or "-", _shares(p["worked_nodes"]),
                  _shares(p["buffer_nodes"], 1), _num(p["minflt"]), _num(p["nonvoluntary_switches"])] for p in procs]
        return "\n".join(rows + table(columns, cells, width, indent="", gap=1))
    columns = [Column("host", left=True, wrap=True), Column("role", left=True), Column("count"),
               Column("methods", left=True, wrap=True), Column("allowed masks", left=True, wrap=True),
               Column("ran on node", left=True, drop=1), Column("buffers", left=True, drop=2),
               Column("faults/proc", drop=3)]
    cells = []
    for g in summary["process_groups"]:
        faults = g["minflt"]
        mask = format_cpu_list(g["allowed_cpus"]) if g["masks"] == 1 else f"{g['masks']} different"
        cells.append([g["host"], g["role"], str(g["count"]), ",".join(g["start_methods"]) or "-", mask,
                      _shares(g["worked_nodes"]), _shares(g["buffer_nodes"]),
                      _num(int(faults["mean"]) if faults else None)])
    return "\n".join(rows + table(columns, cells, width, indent="", gap=1))


# The keys of the save tables' columns: the queue's waits, and the last column, the label
# (analysis.saves.bound_by) and the seconds it is taken from.
_PUT_W = "put-w: producer waiting on the queue"
_GET_W = "get-w: writer waiting on the queue"
_BOUND_BY = "bound by: most critical-path seconds"


def _saves(summary: dict, width: int) -> str:
    saves = summary["saves"]
    if len(saves) > MAX_ROWS:
        return _save_indices(summary, width)
    between = any(s.get("gen_from") == BETWEEN for s in saves)
    # Narrower than 100 columns: the rate first (the header's mean says it), the writer's wait, the re-run
    # (start-up holds it).
    columns = [Column("save"), Column("rank"), Column("writer"), Column("start-up"), Column("re-run", drop=1),
               Column("gen", key="~gen: the producer's time between its hand-offs (its fill is no hooked call)"
                      if between else ""),
               Column("put-w", key=_PUT_W), Column("get-w", key=_GET_W, drop=2), Column("write"), Column("fsync"),
               Column("total"), Column("GiB/s", drop=3), Column("bound by", left=True, wrap=True, key=_BOUND_BY)]
    cells = [[str(s["save"]), _rank(s["rank"]), str(s["writer_pid"] or "-"), _sec(s["startup_s"]),
              _sec(s["startup"].get("main_rerun") or None),
              ("~" if s.get("gen_from") == BETWEEN else "") + _sec(s["gen_s"]), _sec(s["put_wait_s"]),
              _sec(s["get_wait_s"]), _sec(s["write_s"]), _sec(s["fsync_s"]), _sec(s["duration_s"]),
              _rate(s["gib_s"]), save_status(s) or s["bottleneck"] + " " + _sec(s["bottleneck_s"])] for s in saves]
    rows = _wrap(f"Saves ({len(saves)}; seconds; start-up: Process.start() to the writer's first chunk or byte "
                 f"out, less its wait for it; re-run: of __main__)", "", width)
    return "\n".join(rows + table(columns, cells, width, indent="", gap=1) + _cut_saves(saves, width))


def _uploads(saves: list[dict], width: int) -> list[str]:
    """The saves that were uploads: each one's key, parts, size and times (none: no lines)."""
    cells, notes = upload_rows(saves)
    if not cells:
        return []
    rows = ["", *_wrap(f"Uploads ({len(cells)}; {UPLOADS_TITLE}; ~: inferred, the peer)", "", width)]
    rows += table([Column("save"), Column("rank"), Column("writer"), Column("key", left=True, wrap=True),
                   Column("parts"), Column("size"), Column("write"), Column("threads"),
                   Column("status", left=True, wrap=True)], cells[:MAX_ROWS], width, indent="", gap=1)
    if len(cells) > MAX_ROWS:
        rows.append(f"  ... {len(cells) - MAX_ROWS} more (all in --json)")
    return rows + [_cut(f"  {note}", width) for note in notes[:MAX_ROWS]]


def _save_indices(summary: dict, width: int) -> str:
    """The saves of many producers, a row per save index: their means, and the slowest rank's."""
    saves = summary["saves"]
    rows = _wrap(f"Saves ({len(saves)} over {len(summary['ranks'])} producers; seconds, "
                 f"mean over ranks; slowest: the rank whose save took longest)", "", width)
    columns = [Column("save"), Column("ranks"), Column("start-up"), Column("re-run", drop=1), Column("gen"),
               Column("put-w", key=_PUT_W), Column("write"), Column("fsync"), Column("mean"), Column("max"),
               Column("slowest", left=True, wrap=True),
               Column("bound by", left=True, wrap=True, key="bound by: most ranks' label, its critical-path mean")]
    cells = []
    for row in summary["save_indices"]:
        slowest = row["slowest"]
        cells.append([str(row["save"]), str(row["ranks"]), _sec(_mean(row["startup_s"])),
                      _sec(_mean(row["main_rerun_s"]) or None), _sec(_mean(row["gen_s"])),
                      _sec(_mean(row["put_wait_s"])), _sec(_mean(row["write_s"])), _sec(_mean(row["fsync_s"])),
                      _sec(_mean(row["duration_s"])), _sec(slowest["duration_s"]),
                      f"rank {_rank(slowest['rank'])} {slowest['host']}",
                      f"{row['bottleneck']} {_sec(_mean(row['bottleneck_s']))}"])
    return "\n".join(rows + table(columns, cells, width, indent="", gap=1) + _cut_saves(saves, width))


def _cut_saves(saves: list[dict], width: int) -> list[str]:
    """The saves of a run cut short that are not complete, each with what became of it."""
    cut = [s for s in saves if save_status(s)]
    if not cut:
        return []
    rows = [f"Cut short, not in the figures ({len(cut)}):"]
    rows += [_cut(f"  {save_cut(s)}", width) for s in cut[:MAX_ROWS]]
    if len(cut) > MAX_ROWS:
        rows.append(f"  ... {len(cut) - MAX_ROWS} more (all in --json)")
    return rows


def _ranks(summary: dict, width: int) -> str:
    ranks, agg = summary["ranks"], summary["aggregate"]
    over = world_text.seen_only(summary["world"])
    rows = _wrap(f"Ranks ({len(ranks)}; seconds)" + (f": {over}" if over else ""), "", width)
    if len(ranks) <= MAX_ROWS:
        rows += table([Column("host", left=True, wrap=True), Column("rank"), Column("pid"), Column("saves"),
                       Column("mean save"), Column("slowest"), Column("GiB/s")],
                      [[r["host"], _rank(r["rank"]), str(r["producer_pid"]), str(r["saves"]),
                        f"{r['mean_save_s']:.3f}", f"{r['slowest_save_s']:.3f}", _rate(r["gib_s"])] for r in ranks],
                      width, indent="", gap=1)
    else:
        rows += table([Column("host", left=True, wrap=True), Column("ranks"), Column("mean save"),
                       Column("slowest"), Column("slowest rank")],
                      [[h["host"], str(h["ranks"]), f"{h['mean_save_s']:.3f}", f"{h['slowest_save_s']:.3f}",
                        _rank(h["slowest_rank"])] for h in summary["ranks_per_host"]], width, indent="", gap=1)
    rows += ["", *_wrap("Aggregate, as the benchmark reports it: the size summed over ranks / rank 0's save time"
                        + (f"; {over}" if over else ""), "", width)]
    rows += table([Column("save"), Column("ranks"), Column("size"), Column("rank 0 s"), Column("GiB/s"),
                   Column("span s", key="span: first rank's start to last rank's end"), Column("GiB/s")],
                  [[str(a["save"]), str(a["ranks"]), format_size(a["bytes"]), f"{a['rank0_s']:.3f}",
                    _rate(a["gib_s"]), f"{a['span_s']:.3f}", _rate(a["span_gib_s"])] for a in agg["saves"]],
                  width, indent="", gap=1)
    if agg["mean_gib_s"] is not None:
        rows += _wrap(f"mean of the per-save rates: {agg['mean_gib_s']:.2f} GiB/s" + (f" {over}" if over else ""),
                      "  ", width)
    if summary["stragglers"]:
        rows += ["", *_wrap("Stragglers (the rank whose save took longest, against the median rank)", "", width)]
        for st in summary["stragglers"]:
            rows += _wrap(f"save {st['save']:<3} rank {_rank(st['rank'])} on {st['host']}: "
                          f"{st['duration_s']:.3f} s, +{st['excess_s']:.3f} s over the median; most of it "
                          f"{st['component']} (+{st['component_excess_s']:.3f} s)", "  ", width)
    rows += ["", *_wrap("Placement: " + placement(summary["placement"]), "", width)]
    for b in summary.get("binding") or []:  # wrapped, not clipped: its end says whether the writers inherit it
        rows += _wrap(binding(b), "  ", width)
    return "\n".join(rows)


def _diagnoses(diagnoses: list[dict], width: int) -> str:
    if not diagnoses:
        return "Diagnoses: none. No warning applies to this run."
    warnings = sum(d["severity"] == "warning" for d in diagnoses)
    rows = [f"Diagnoses ({warnings} warning{'s' * (warnings != 1)}, most costly first)"]
    shown: dict = defaultdict(int)
    alike: dict = defaultdict(list)
    in_full = []
    for d in diagnoses:
        key = (d["code"], d["severity"])
        shown[key] += 1
        if shown[key] > SAME_CODE_SHOWN:  # many ranks, one finding: the costliest in full, then who else
            alike[key].append(d)
        else:
            in_full.append(d)
    # Each action once per process: writer-startup's fix begins with main-reimport's.
    for d, (fix, earlier, count) in zip(in_full, once_per_process([(d, None) for d in in_full])):
        where = " ".join(x for x in (f"host {d['host']}" if d["host"] else "",
                                     f"rank {d['rank']}" if d["rank"] is not None and d["rank"] >= 0 else "",
                                     f"pid {d['pid']}" if d["pid"] else "") if x)
        # cost_s: the critical-path seconds of all the saves it is about, not of one.
        cost = f"  cost {d['cost_s']:.2f} s over its saves" if d.get("cost_s") is not None else ""
        rows += _wrap(f"{d['severity'].upper():<7} {d['code']:<22} {where}{cost}", "  ", width)
        rows += _wrap(d["message"], "      ", width)
        rows += _wrap("evidence: " + _evidence(d["evidence"]), "      ", width)
        if earlier:
            rows += _wrap(f"fix: the {count} action{'s' * (count != 1)} under {earlier} above"
                          + (", and:" if fix else ""), "      ", width)
            rows += _fix_lines(fix, "      ", width)[1:]  # its own actions, under that line
        else:
            rows += _fix_lines(fix, "      ", width)
    for (code, severity), more in alike.items():
        by_host = defaultdict(set)
        for d in more:
            by_host[d["host"] or "-"].add(d["rank"] if d["rank"] is not None else -1)
        # Ranks as ranges (the kernel's list format reads as well for them as for CPUs).
        who = "; ".join(f"{host} ranks {format_cpu_list(r for r in ranks if r >= 0) or '-'}"
                        for host, ranks in sorted(by_host.items()))
        rows += _wrap(f"... and {len(more)} more {severity} {code} alike ({who}; all in --json)", "  ", width)
    return "\n".join(rows)


def _fix_lines(fix: list[dict] | None, indent: str, width: int) -> list[str]:
    """A fix's actions, one bullet each: what, where, and the recovery, estimated or measured."""
    if not fix:
        return []
    rows = _wrap("fix:", indent, width)
    for action in fix:
        recovers = recovery_text(action)
        rows += _wrap(f"- {action['what']}; where: {action['where']}" + (f"; {recovers}" if recovers else ""),
                      indent + "  ", width)
    return rows


def _pm(c: dict) -> str:
    """A part's interval as ±half its width (blank without one)."""
    ci = c.get("ci95_s")
    if ci is None:
        return ""
    half = (ci[1] - ci[0]) / 2
    return f"±{half:.2f}" if half >= 0.01 else f"±{half:.3f}"


def _part_row(c: dict, total: dict) -> list[str]:
    """total: the difference's own; a share of a difference that is noise is none."""
    share = ("noise" if c["significant"] is False else "-" if total["significant"] is False or c["share"] is None
             else f"{c['share']:.0%}")
    own = f"{c['own_diff_s']:+.3f}" if c["own_diff_s"] is not None else "-"
    return [c["label"], f"{c['a_s']:.3f}", f"{c['b_s']:.3f}", f"{c['diff_s']:+.3f}", _pm(c), share, own]


def compare_text(comparison: dict, width: int = WIDTH) -> str:
    """A comparison (writerprof.compare/1): its tables, then its verdict, the verdict's details and the fix."""
    a, b = comparison["a"], comparison["b"]
    t = comparison["throughput"]
    named = max(len(a["name"]), len(b["name"]))
    rows = [*_runs_lines("A", a, named, width), *_runs_lines("B", b, named, width), ""]
    rows += table([Column("", left=True), Column("A"), Column("B"), Column("B - A"), Column("±95%")], [
        ["saves", str(a["saves"]), str(b["saves"]), "", ""],
        ["throughput (GiB/s)", _rate(t["a_gib_s"]), _rate(t["b_gib_s"]),
         format(t["change"], "+.1%") if t["change"] is not None else "-", ""],
        ["mean save (s)", f"{a['mean_save_s']:.3f}", f"{b['mean_save_s']:.3f}", f"{comparison['difference_s']:+.3f}",
         _pm(comparison["total"])]], width, indent="")
    rows += ["", "Where the time of a save goes (critical path, mean per save; seconds)"]
    parts = [_part_row(c, comparison["total"]) for c in comparison["components"]
             if max(abs(c["a_s"]), abs(c["b_s"])) >= 0.0005]
    unexplained = comparison["unexplained_s"]
    share = (f"{unexplained / comparison['difference_s']:.0%}"
             if comparison["difference_s"] and comparison["total"]["significant"] is not False else "-")
    parts.append(["unexplained (no recorded activity)", f"{a['unexplained_s']:.3f}", f"{b['unexplained_s']:.3f}",
                  f"{unexplained:+.3f}", "", share, ""])
    total = sum(c["diff_s"] for c in comparison["components"]) + unexplained
    parts.append(["total: the mean save", f"{a['mean_save_s']:.3f}", f"{b['mean_save_s']:.3f}", f"{total:+.3f}",
                  _pm(comparison["total"]), "", ""])
    startup = comparison["writer_startup"]
    if max(abs(startup["a_s"]), abs(startup["b_s"])) >= 0.0005:
        parts.append(_part_row(startup, comparison["total"]))
    rows += table([Column("part", left=True, wrap=True), Column("A"), Column("B"), Column("B - A"),
                   Column("±95%", key=f"±95%: {interval_kind(comparison)} of B - A, half its width"),
                   Column("share", key="share: of the difference, 'noise' where the interval includes zero (or the "
                                       "part is negligible), over 100% where other parts went the other way, '-' "
                                       "where the difference is noise"),
                   Column("own B - A", drop=1, key="own: the part's own calls' duration, critical path or not")],
                  parts, width)
    rows += ["", "Start-up phases (mean per writer, seconds)"]
    rows += table([Column("phase", left=True), Column("A"), Column("B"), Column("B - A")],
                  [[phase, f"{a['startup'][phase]:.3f}", f"{b['startup'][phase]:.3f}",
                    f"{b['startup'][phase] - a['startup'][phase]:+.3f}"]
                   for phase in a["startup"] if max(a["startup"][phase], b["startup"][phase]) >= 0.0005], width)
    rows += ["", "Placement (each side's writers and producers)"]
    place = [[key.replace("_", " "), placement_value(a["placement"][key]), placement_value(b["placement"][key])]
             for key in ("writer_cpus", "producer_cpus", "writer_parent", "writer_nodes", "buffer_nodes")]
    place.append(["warnings", ", ".join(a["diagnoses"]) or "none", ", ".join(b["diagnoses"]) or "none"])
    rows += table([Column("", left=True), Column("A", left=True, wrap=True), Column("B", left=True, wrap=True)],
                  place, width)
    rows += ["", "Kernel counts"]
    rows += table([Column("", left=True), Column("A"), Column("B")],
                  [[key.replace("_", " "), _num(value), _num(b["kernel"][key])] for key, value in a["kernel"].items()],
                  width)
    labels = {c["name"]: c["label"] for c in comparison["components"]}
    per = [Column("", left=True), Column("A"), Column("B"), Column("B - A"), Column("largest part", left=True, wrap=True)]
    if comparison["per_save"] and len(comparison["per_save"]) > 1:
        rows += ["", "Per save (matched by order; seconds)"]
        saves = []
        for s in comparison["per_save"]:
            top = max(COMPONENTS, key=lambda c: abs(s["components"][c]))
            saves.append([f"save {s['save']}", f"{s['a_s']:.3f}", f"{s['b_s']:.3f}", f"{s['diff_s']:+.3f}",
                          f"{labels[top]} {s['components'][top]:+.3f}"])
        rows += table(per, saves, width)
    if len(comparison["per_rank"]) > 1:
        rows += ["", "Per rank (mean save; seconds)"]
        shown = sorted(comparison["per_rank"], key=lambda r: -abs(r["diff_s"]))[:MAX_ROWS]
        rows += table(per, [[f"rank {r['rank']}", f"{r['a_s']:.3f}", f"{r['b_s']:.3f}", f"{r['diff_s']:+.3f}",
                             f"{labels[r['top']]} {r['top_s']:+.3f}"] for r in sorted(shown, key=lambda r: r["rank"])],
                      width)
        if len(comparison["per_rank"]) > len(shown):
            rows.append(f"  ... {len(comparison['per_rank']) - len(shown)} more ranks (all in --json)")
    if a.get("aggregate_gib_s") and b.get("aggregate_gib_s"):
        rows += [""] + _wrap(f"Aggregate as the benchmark reports it (mean of per-save rates): "
                             f"A {a['aggregate_gib_s']:.2f} GiB/s, B {b['aggregate_gib_s']:.2f} GiB/s "
                             f"({b['aggregate_gib_s'] / a['aggregate_gib_s'] - 1:+.1%})", "", width)
    return "\n".join(rows + [""] + _verdict_lines(comparison, width)) + "\n"


def _verdict_lines(comparison: dict, width: int) -> list[str]:
    """The verdict's lines, then its details under their headings, then the fix in full."""
    lines = comparison["verdict"].split("\n")
    rows = [row for i, line in enumerate(lines) for row in _wrap(("Verdict: " if i == 0 else "") + line, "", width)]
    for section in comparison["details"]:
        rows.append(section["heading"] + ":")
        rows += [row for line in section["lines"] for row in _wrap(line, "  ", width)]
    return rows + _fix_lines(comparison["fix"], "", width)


def _runs_lines(letter: str, side: dict, named: int, width: int) -> list[str]:
    """A side's runs, whole: the run directories' names under their one parent, else their paths."""
    runs = [Path(r) for r in side["runs"]]
    parents = {r.parent for r in runs}
    said = (f"{len(runs)} runs in {parents.pop()}: " + ", ".join(r.name for r in runs)
            if len(runs) > 1 and len(parents) == 1 else ", ".join(map(str, runs)))
    return textwrap.wrap(said, width, initial_indent=f"{letter}  {side['name']:<{named}}  ",
                         subsequent_indent=" " * (named + 5), break_long_words=False, break_on_hyphens=False)


def _evidence(evidence: dict) -> str:
    parts = []
    for key, value in evidence.items():
        if isinstance(value, float):
            value = f"{value:.3f}"
        elif isinstance(value, dict):
            value = "{" + ", ".join(f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}"
                                    for k, v in value.items()) + "}"
        elif isinstance(value, list) and value and all(isinstance(v, int) for v in value):
            value = format_cpu_list(value)
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):  # the threads
            value = "[" + "; ".join(_evidence(v) for v in value) + "]"
        parts.append(f"{key}={value}")
    return ", ".join(parts)


def _wrap(text: str, indent: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False) or [indent]


def _mean(stats: dict | None):
    return stats["mean"] if stats else None


def _num(value) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if isinstance(value, float) else str(value)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def contrast_text(result: dict, report, width: int = WIDTH) -> str:
    """A contrast (writerprof.contrast/1): each comparison against the
    reference (the first with the contrast's verdict: its fix as the
    what-ifs measured it), what each what-if recovered, and where its HTML
    report is."""
    reference = result["methods"][0]
    parts = [line + "\n" for line in _wrap(world, "", width)] if (world := world_text.of_runs(result["runs"])) else []
    for i, (method, comparison) in enumerate(result["comparisons"].items()):
        parts.append(f"\n=== {reference} vs {method} ===\n")
        if i == 0:
            comparison = {**comparison, "verdict": result["verdict"], "fix": result["fix"]}
        parts.append(compare_text(comparison, width))
    lines = []
    for entry in result["what_ifs"]:
        if not entry["ran"]:
            lines += _wrap(f"{entry['method']}: not run: {entry['reason']}", "", width)
        elif entry.get("recovered_share") is not None:
            ci = entry.get("recovered_ci95_s")
            verb = "recovers" if told_from_none(ci) else "may recover"
            lines += _wrap(f"{entry['method']}: {verb} {entry['recovered_s']:.3f} s per save"
                           + (f" (95% interval {ci[0]:.3f} to {ci[1]:.3f} s)" if ci else "")
                           + ("" if told_from_none(ci) else ", not told apart from none")
                           + f", {entry['recovered_share']:.0%} of what forkserver lost against {reference}"
                           + (f"; ran with {entry['modules']!r}" if entry.get("modules") else ""), "", width)
    parts += [line + "\n" for line in lines]
    parts.append(f"\nReport: {report}\n")
    return "".join(parts)
