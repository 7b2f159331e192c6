"""Reports as text for a terminal, 100 columns: they format what the analysis
found and compute nothing of their own. Many processes or saves (MPI runs)
are shown as the summary's rows per host and role (summary["process_groups"])
and per save index (summary["save_indices"])."""

from __future__ import annotations

import textwrap
from collections import defaultdict

from writerprof.analysis.handoffs import BETWEEN
from writerprof.analysis.saves import COMPONENTS
from writerprof.render.format import command as _command, placement_value, rank as _rank, rate as _rate
from writerprof.render.format import binding, host_names, placement, recording_notes, seconds as _sec, shares
from writerprof.render.format import ending, interval_kind, left_out, recovery, save_cut, save_status, slurm_job
from writerprof.units import format_cpu_list, format_size

WIDTH = 100
MAX_ROWS = 40  # beyond this many processes or saves, one row per group
SAME_CODE_SHOWN = 3  # diagnoses of one code shown in full; the rest are listed by who


def report_text(summary: dict) -> str:
    out = [_header(summary)]
    if summary["run"]["losses"]:
        out.append("\nData lost (the rest is complete and used):")
        out += [f"  - {loss}" for loss in summary["run"]["losses"]]
    out += ["", _processes(summary), "", _saves(summary)]
    if len(summary["ranks"]) > 1:
        out += ["", _ranks(summary)]
    out += ["", _diagnoses(summary["diagnoses"])]
    return "\n".join(out).rstrip() + "\n"


def _header(summary: dict) -> str:
    run, t = summary["run"], summary["throughput"]
    command = _command(run["command"])
    lines = [_clip(f"writerprof report {run['path']}"), _clip(f"  command   {command}")]
    lines += _field("ended", ending(run)
                    + ("   (SYNTHETIC run: generated, not measured)" if run["synthetic"] else ""))
    left = left_out(run["ending"]["saves"])
    if t["saves"]:
        methods = ", ".join(run["start_methods"]) or "no writer process started"
        lines += _field("saves", f"{t['saves']}{' complete' * bool(left)} of "
                                 f"{format_size(t['bytes'] // t['saves'])}, mean {t['mean_save_s']:.3f} s, "
                                 f"{t['gib_s']:.2f} GiB/s ({methods}; Python {', '.join(run['python'])})"
                        + (f"; {left}" if left else ""))
    elif left:
        lines += _field("saves", f"none complete; {left}")
    else:
        lines.append("  saves     none found (no checkpoint file written: see `record --save-files`)")
    alike = defaultdict(list)  # hosts of one shape on one line
    for host, topo in summary["topology"].items():
        nodes = ", ".join(f"node {n}: CPUs {format_cpu_list(c)}" for n, c in topo["nodes"].items())
        alike[f"{topo['cpus']} CPUs, {len(topo['nodes'])} node(s) ({nodes})"].append(host)
    for shape, hosts in alike.items():
        lines.append(_clip(f"  host      {host_names(hosts)}: {shape}"))
    if (job := slurm_job(run)) is not None:
        lines += _field("slurm", job)
    for note in recording_notes(run):  # wrapped, not clipped: a note ends with what to do
        lines += _field("note", note)
    off = [(h, c) for h, c in summary.get("clocks", {}).items() if c["offset_ns"]]
    if off:
        worst = max((c["spread_ns"] or 0) for _, c in off) / 1e6
        lines.append(_clip(f"  clocks    {len(off)} other host(s) put on this host's time line by their wall-clock "
                           f"anchors; their anchors agree within {worst:.1f} ms"))
    return "\n".join(lines)


def _field(name: str, text: str) -> list[str]:
    """A header field's lines: wrapped, not clipped (its end says the most)."""
    return textwrap.wrap(text, WIDTH, initial_indent=f"  {name:<10}", subsequent_indent=" " * 12,
                         break_long_words=False, break_on_hyphens=False)


def _shares(share: dict, limit: int = 2) -> str:
    return shares(share, limit)


def _processes(summary: dict) -> str:
    procs = summary["processes"]
    head = (f"{'host':<10} {'rank':>4} {'pid':>7} {'role':<16} {'method':<10} {'allowed':<9} "
            f"{'ran on':<11} {'buffers':<8} {'faults':>8} {'invol.':>7}")
    rows = [f"Processes ({len(procs)})", head]
    if len(procs) <= MAX_ROWS:
        for p in procs:
            rows.append(
                f"{_cut(p['host'], 10):<10} {_rank(p['rank']):>4} {p['pid']:>7} {p['role']:<16} "
                f"{p['start_method'] or '-':<10.10} {format_cpu_list(p['allowed_cpus']) or '-':<9.9} "
                f"{_shares(p['worked_nodes']):<11.11} {_shares(p['buffer_nodes'], 1):<8.8} "
                f"{_num(p['minflt']):>8} {_num(p['nonvoluntary_switches']):>7}")
        return "\n".join(rows)
    rows[1] = (f"{'host':<10} {'role':<16} {'count':>6} {'methods':<12} {'allowed masks':<16} "
               f"{'ran on node':<12} {'buffers':<10} {'faults/proc':>11}")
    for g in summary["process_groups"]:
        faults = g["minflt"]
        mask = format_cpu_list(g["allowed_cpus"]) if g["masks"] == 1 else f"{g['masks']} different"
        rows.append(
            f"{_cut(g['host'], 10):<10} {g['role']:<16} {g['count']:>6} {','.join(g['start_methods']) or '-':<12.12} "
            f"{mask:<16.16} {_shares(g['worked_nodes']):<12.12} {_shares(g['buffer_nodes']):<10.10} "
            f"{_num(int(faults['mean']) if faults else None):>11}")
    return "\n".join(rows)


# What the save tables' last column is: the label (analysis.saves.bound_by) and the seconds it is taken from.
_BOUND_BY = "put-w/get-w: producer/writer waiting on the queue; bound by: most critical-path seconds"


def _saves(summary: dict) -> str:
    saves = summary["saves"]
    head = (f"{'save':>4} {'rank':>4} {'writer':>7} {'start-up':>8} {'re-run':>6} {'gen':>6} "
            f"{'put-w':>5} {'get-w':>5} {'write':>6} {'fsync':>6} {'total':>6} {'GiB/s':>5} bound by")
    rows = [f"Saves ({len(saves)}; seconds; start-up: Process.start() to first write; re-run: of __main__)",
            _BOUND_BY, head]
    if any(s.get("gen_from") == BETWEEN for s in saves):
        rows.insert(2, "~gen: the producer's time between its hand-offs (its fill is no hooked call)")
    if len(saves) <= MAX_ROWS:
        for s in saves:
            gen = ("~" if s.get("gen_from") == BETWEEN else "") + _sec(s["gen_s"])
            rows.append(
                f"{s['save']:>4} {_rank(s['rank']):>4} {s['writer_pid'] or '-':>7} {_sec(s['startup_s']):>8} "
                f"{_sec(s['startup'].get('main_rerun') or None):>6} {gen:>6} {_sec(s['put_wait_s']):>5} "
                f"{_sec(s['get_wait_s']):>5} {_sec(s['write_s']):>6} {_sec(s['fsync_s']):>6} "
                f"{_sec(s['duration_s']):>6} {_rate(s['gib_s']):>5} "
                f"{save_status(s) or s['bottleneck'] + ' ' + _sec(s['bottleneck_s'])}")
        return "\n".join(rows + _cut_saves(saves))
    rows[0] = (f"Saves ({len(saves)} over {len(summary['ranks'])} producers; seconds, "
               f"mean over ranks; slowest: the rank whose save took longest)")
    rows[1] = "put-w: producer waiting on the queue; bound by: most ranks' label, its critical-path mean"
    rows[2] = (f"{'save':>4} {'ranks':>5} {'start-up':>8} {'re-run':>6} {'gen':>6} {'put-w':>5} "
               f"{'write':>6} {'fsync':>6} {'mean':>6} {'max':>6} {'slowest':<14} bound by")
    for row in summary["save_indices"]:
        slowest = row["slowest"]
        rows.append(
            f"{row['save']:>4} {row['ranks']:>5} {_sec(_mean(row['startup_s'])):>8} "
            f"{_sec(_mean(row['main_rerun_s']) or None):>6} "
            f"{_sec(_mean(row['gen_s'])):>6} {_sec(_mean(row['put_wait_s'])):>5} "
            f"{_sec(_mean(row['write_s'])):>6} {_sec(_mean(row['fsync_s'])):>6} "
            f"{_sec(_mean(row['duration_s'])):>6} {_sec(slowest['duration_s']):>6} "
            f"{_cut('rank ' + _rank(slowest['rank']) + ' ' + slowest['host'], 14):<14} "
            f"{row['bottleneck']} {_sec(_mean(row['bottleneck_s']))}")
    return "\n".join(rows + _cut_saves(saves))


def _cut_saves(saves: list[dict]) -> list[str]:
    """The saves of a run cut short that are not complete, each with what became of it."""
    cut = [s for s in saves if save_status(s)]
    if not cut:
        return []
    rows = [f"Cut short, not in the figures ({len(cut)}):"]
    rows += [_clip(f"  {save_cut(s)}") for s in cut[:MAX_ROWS]]
    if len(cut) > MAX_ROWS:
        rows.append(f"  ... {len(cut) - MAX_ROWS} more (all in --json)")
    return rows


def _ranks(summary: dict) -> str:
    ranks, agg = summary["ranks"], summary["aggregate"]
    rows = [f"Ranks ({len(ranks)}; seconds)"]
    if len(ranks) <= MAX_ROWS:
        rows.append(f"{'host':<12} {'rank':>5} {'pid':>7} {'saves':>5} {'mean save':>9} {'slowest':>8} {'GiB/s':>6}")
        for r in ranks:
            rows.append(f"{_cut(r['host'], 12):<12} {_rank(r['rank']):>5} {r['producer_pid']:>7} {r['saves']:>5} "
                        f"{r['mean_save_s']:>9.3f} {r['slowest_save_s']:>8.3f} {_rate(r['gib_s']):>6}")
    else:
        rows.append(f"{'host':<12} {'ranks':>5} {'mean save':>9} {'slowest':>8} {'slowest rank':>12}")
        for h in summary["ranks_per_host"]:
            rows.append(f"{_cut(h['host'], 12):<12} {h['ranks']:>5} {h['mean_save_s']:>9.3f} "
                        f"{h['slowest_save_s']:>8.3f} {_rank(h['slowest_rank']):>12}")
    rows += ["", "Aggregate, as the benchmark reports it: the size summed over ranks / rank 0's save time",
             f"{'save':>4} {'ranks':>5} {'size':>10} {'rank 0 s':>9} {'GiB/s':>7} {'span s':>8} {'GiB/s':>7}  "
             f"(span: first rank's start to last rank's end)"]
    for a in agg["saves"]:
        rows.append(f"{a['save']:>4} {a['ranks']:>5} {format_size(a['bytes']):>10} {a['rank0_s']:>9.3f} "
                    f"{_rate(a['gib_s']):>7} {a['span_s']:>8.3f} {_rate(a['span_gib_s']):>7}")
    if agg["mean_gib_s"] is not None:
        rows.append(f"  mean of the per-save rates: {agg['mean_gib_s']:.2f} GiB/s")
    if summary["stragglers"]:
        rows += ["", "Stragglers (the rank whose save took longest, against the median rank)"]
        for st in summary["stragglers"]:
            rows.append(_clip(f"  save {st['save']:<3} rank {_rank(st['rank'])} on {st['host']}: "
                              f"{st['duration_s']:.3f} s, +{st['excess_s']:.3f} s over the median; most of it "
                              f"{st['component']} (+{st['component_excess_s']:.3f} s)"))
    rows += ["", *_wrap("Placement: " + placement(summary["placement"]), "")]
    for b in summary.get("binding") or []:  # wrapped, not clipped: its end says whether the writers inherit it
        rows += _wrap(binding(b), "  ")
    return "\n".join(_clip(r) for r in rows)


def _diagnoses(diagnoses: list[dict]) -> str:
    if not diagnoses:
        return "Diagnoses: none. No warning applies to this run."
    warnings = sum(d["severity"] == "warning" for d in diagnoses)
    rows = [f"Diagnoses ({warnings} warning{'s' * (warnings != 1)}, most costly first)"]
    shown: dict = defaultdict(int)
    alike: dict = defaultdict(list)
    fixed: dict = {}  # a fix printed in full -> the code it was printed under
    for d in diagnoses:
        key = (d["code"], d["severity"])
        shown[key] += 1
        if shown[key] > SAME_CODE_SHOWN:  # many ranks, one finding: the costliest in full, then who else
            alike[key].append(d)
            continue
        where = " ".join(x for x in (f"host {d['host']}" if d["host"] else "",
                                     f"rank {d['rank']}" if d["rank"] is not None and d["rank"] >= 0 else "",
                                     f"pid {d['pid']}" if d["pid"] else "") if x)
        cost = f"  cost {d['cost_s']:.2f} s" if d.get("cost_s") is not None else ""
        rows.append(f"  {d['severity'].upper():<7} {d['code']:<22} {where}{cost}")
        rows += _wrap(d["message"], "      ")
        rows += _wrap("evidence: " + _evidence(d["evidence"]), "      ")
        key = tuple((a["what"], a["where"]) for a in d.get("fix") or [])
        if key and key in fixed:  # the start-up's fix is the re-run's: once in full
            rows += _wrap(f"fix: as for {fixed[key]} above", "      ")
        else:
            fixed.setdefault(key, d["code"])
            rows += _fix_lines(d.get("fix"), "      ")
    for (code, severity), more in alike.items():
        by_host = defaultdict(set)
        for d in more:
            by_host[d["host"] or "-"].add(d["rank"] if d["rank"] is not None else -1)
        # Ranks as ranges (the kernel's list format reads as well for them as for CPUs).
        who = "; ".join(f"{host} ranks {format_cpu_list(r for r in ranks if r >= 0) or '-'}"
                        for host, ranks in sorted(by_host.items()))
        rows += _wrap(f"... and {len(more)} more {severity} {code} alike ({who}; all in --json)", "  ")
    return "\n".join(rows)


def _fix_lines(fix: list[dict] | None, indent: str) -> list[str]:
    """A fix's actions, one bullet each: what, where, and the recovery, estimated or measured."""
    if not fix:
        return []
    rows = _wrap("fix:", indent)
    for action in fix:
        recovers = recovery(action)
        rows += _wrap(f"- {action['what']}; where: {action['where']}" + (f"; {recovers}" if recovers else ""),
                      indent + "  ")
    return rows


def _pm(c: dict) -> str:
    """A component's interval as ±half its width (blank without one)."""
    ci = c.get("ci95_s")
    if ci is None:
        return ""
    half = (ci[1] - ci[0]) / 2
    return f"±{half:.2f}" if half >= 0.01 else f"±{half:.3f}"


def _part_row(c: dict) -> str:
    share = f"{c['share']:.0%}" if c["share"] is not None and c["significant"] is not False else "noise"
    own = f"{c['own_diff_s']:+.3f}" if c["own_diff_s"] is not None else "-"
    return (f"  {c['label']:<32} {c['a_s']:>9.3f} {c['b_s']:>9.3f} {c['diff_s']:>+9.3f} {_pm(c):<7} "
            f"{share:>5}  {own:>9}")


def compare_text(comparison: dict, fix: list[dict] | None = None) -> str:
    """fix: the verdict's fix (default: the comparison's; contrast gives its measured one)."""
    a, b = comparison["a"], comparison["b"]
    name_a, name_b = a["name"], b["name"]
    t = comparison["throughput"]
    rows = [
        _clip(f"A  {name_a:<12} {', '.join(a['runs'])}"),
        _clip(f"B  {name_b:<12} {', '.join(b['runs'])}"),
        "",
        f"{'':<44} {'A':>9} {'B':>9} {'B - A':>9}",
        f"{'saves':<44} {a['saves']:>9} {b['saves']:>9}",
        f"{'throughput (GiB/s)':<44} {_rate(t['a_gib_s']):>9} {_rate(t['b_gib_s']):>9} "
        f"{format(t['change'], '+.1%') if t['change'] is not None else '-':>9}",
        f"{'mean save (s)':<44} {a['mean_save_s']:>9.3f} {b['mean_save_s']:>9.3f} {comparison['difference_s']:>+9.3f}"
        f" {_pm(comparison['total'])}".rstrip(),
        "",
        f"Where the time of a save goes (critical path, mean per save; seconds) {'95%':>6} {'share':>5}  own B - A",
    ]
    rows += [_part_row(c) for c in comparison["components"] if max(abs(c["a_s"]), abs(c["b_s"])) >= 0.0005]
    unexplained = comparison["unexplained_s"]
    share = f"{unexplained / comparison['difference_s']:.0%}" if comparison["difference_s"] else "-"
    rows.append(f"  {'unexplained (no recorded activity)':<32} {a['unexplained_s']:>9.3f} "
                f"{b['unexplained_s']:>9.3f} {unexplained:>+9.3f} {'':<7} {share:>5}")
    total = sum(c["diff_s"] for c in comparison["components"]) + unexplained
    # Its interval before the sum, which ends the line.
    rows.append(f"  {'total (= the difference in mean save)':<32} {'':>9} {_pm(comparison['total']):>9} "
                f"{total:>+9.3f}")
    startup = comparison["writer_startup"]
    if max(abs(startup["a_s"]), abs(startup["b_s"])) >= 0.0005:
        rows.append(_part_row(startup))
    rows += _wrap(f"95%: {interval_kind(comparison)} of B - A, ± half its width; share: of the difference, "
                  "'noise' where the interval includes zero; own: the component's own calls' duration (B - A), "
                  "critical path or not", "  ")
    rows += ["", "Start-up phases (mean per writer, seconds)"]
    for phase in a["startup"]:
        if max(a["startup"][phase], b["startup"][phase]) >= 0.0005:
            rows.append(f"  {phase:<42} {a['startup'][phase]:>9.3f} {b['startup'][phase]:>9.3f} "
                        f"{b['startup'][phase] - a['startup'][phase]:>+9.3f}")
    rows += ["", "Placement and kernel"]
    for key in ("writer_cpus", "producer_cpus", "writer_parent", "writer_nodes", "buffer_nodes"):
        rows.append(f"  {key.replace('_', ' '):<20} A {_cut(placement_value(a['placement'][key]), 33):<34} "
                    f"B {_cut(placement_value(b['placement'][key]), 33)}")
    for key, value in a["kernel"].items():
        rows.append(f"  {key.replace('_', ' '):<32} {_num(value):>9} {_num(b['kernel'][key]):>9}")
    rows.append(f"  {'warnings':<20} A {_cut(', '.join(a['diagnoses']) or 'none', 33):<34} "
                f"B {_cut(', '.join(b['diagnoses']) or 'none', 33)}")
    if comparison["per_save"] and len(comparison["per_save"]) > 1:
        rows += ["", f"{'Per save (matched by order; seconds)':<38} {'A':>8} {'B':>8} {'B - A':>8}  largest part"]
        for s in comparison["per_save"]:
            top = max(COMPONENTS, key=lambda c: abs(s["components"][c]))
            rows.append(_clip(f"  save {s['save']:<31} {s['a_s']:>8.3f} {s['b_s']:>8.3f} {s['diff_s']:>+8.3f}  "
                              f"{top} {s['components'][top]:+.3f}"))
    if len(comparison["per_rank"]) > 1:
        rows += ["", f"{'Per rank (mean save; seconds)':<38} {'A':>8} {'B':>8} {'B - A':>8}  largest part"]
        shown = sorted(comparison["per_rank"], key=lambda r: -abs(r["diff_s"]))[:MAX_ROWS]
        for r in sorted(shown, key=lambda r: r["rank"]):
            rows.append(_clip(f"  rank {r['rank']:<31} {r['a_s']:>8.3f} {r['b_s']:>8.3f} {r['diff_s']:>+8.3f}  "
                              f"{r['top']} {r['top_s']:+.3f}"))
        if len(comparison["per_rank"]) > len(shown):
            rows.append(f"  ... {len(comparison['per_rank']) - len(shown)} more ranks (all in --json)")
    if a.get("aggregate_gib_s") and b.get("aggregate_gib_s"):
        rows += ["", f"Aggregate as the benchmark reports it (mean of per-save rates): "
                     f"A {a['aggregate_gib_s']:.2f} GiB/s, B {b['aggregate_gib_s']:.2f} GiB/s "
                     f"({b['aggregate_gib_s'] / a['aggregate_gib_s'] - 1:+.1%})"]
    noise = comparison["noise"]
    if noise["hides"] and noise["message"] not in comparison["verdict"]:
        rows += [""] + _wrap("Noise: " + noise["message"], "")
    rows += [""] + _wrap("Verdict: " + comparison["verdict"], "")
    rows += _fix_lines(comparison["fix"] if fix is None else fix, "")
    return "\n".join(rows) + "\n"


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


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ") or [indent]


def _mean(stats: dict | None):
    return stats["mean"] if stats else None


def _num(value) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if isinstance(value, float) else str(value)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _clip(line: str) -> str:
    return _cut(line, WIDTH)


def contrast_text(result: dict, report) -> str:
    """A contrast (writerprof.contrast/1): each comparison against the
    reference, what each what-if recovered, and where its HTML report is."""
    reference = result["methods"][0]
    parts = []
    for i, (method, comparison) in enumerate(result["comparisons"].items()):
        parts.append(f"\n=== {reference} vs {method} ===\n")
        parts.append(compare_text(comparison, result["fix"] if i == 0 else None))
    for entry in result["what_ifs"]:
        if not entry["ran"]:
            parts.append(f"{entry['method']}: not run: {entry['reason']}\n")
        elif entry.get("recovered_share") is not None:
            ci = entry.get("recovered_ci95_s")
            parts.append(f"{entry['method']}: recovers {entry['recovered_s']:.3f} s per save"
                         + (f" (95% interval {ci[0]:.3f} to {ci[1]:.3f})" if ci else "")
                         + f", {entry['recovered_share']:.0%} of what forkserver lost against {reference}"
                         + (f"; ran with {entry['modules']!r}" if entry.get("modules") else "") + "\n")
    for warning in result["noise"]["warnings"]:
        parts.append("\n".join(_wrap(f"Noise, {warning}", "")) + "\n")
    parts.append(f"\nReport: {report}\n")
    return "".join(parts)
