"""Reports as one self-contained HTML file: the plots embedded as base64
images (PNG, or SVG), the style inline, no script, no external reference,
readable offline. They format what the analysis found and compute nothing of
their own; many processes or saves (MPI runs) are shown as the summary's rows
per (host, role) and per save index (summary["process_groups"],
summary["save_indices"]), with mean, min and max.

Every string that comes from the data (commands, paths, host names,
messages, evidence) goes through html.escape.
"""

from __future__ import annotations

from collections import defaultdict

from writerprof.analysis.groups import stats
from writerprof.analysis.handoffs import BETWEEN
from writerprof.analysis.compare import OWN
from writerprof.analysis.ending import complete
from writerprof.analysis.saves import COMPONENTS, STARTUP_PHASES
from writerprof.render.format import has_rank as _has_rank, placement_value as _placement_value
from writerprof.render.format import command as _command, rank as _rank, ranks as _ranks, rate as _rate
from writerprof.render.format import binding, placement, recording_notes, seconds as _s, shares
from writerprof.analysis.fixes import recovery_text, told_from_none
from writerprof.render.format import ending, left_out, save_cut, save_status, slurm_job
from writerprof.render.format import UPLOADS_TITLE, upload_rows
from writerprof.render.format import interval_kind as _interval_kind
from writerprof.render.format import host_bindings
from writerprof.render import plots  # the package: no matplotlib until a plot is drawn
from writerprof.render import world as world_text
from writerprof.render.evidence import value as evidence_value
from writerprof.render.fix_once import once_per_process
from writerprof.units import format_cpu_list, format_size

MAX_ROWS = 40  # beyond this many processes or saves, one row per group
MAX_INSTANCES = 20  # a diagnosis's instances listed before "... and N more"
FULL_INSTANCES = 3  # instances of one diagnosis shown with their evidence (else the costliest, and a table)
MIN_S = 0.0005  # a component below this on both sides is shown dimmed

# figure_data_uri and CAPTIONS are part of this module's interface; the rest builds its pages.
from writerprof.render.markup import CAPTIONS, _Html, _e, _figures, _flames, _kv, _page, _table  # noqa: F401
from writerprof.render.markup import figure_data_uri  # noqa: F401


def _signed(value) -> str:
    if value is None:
        return "-"
    return "0.000" if abs(value) < 0.0005 else f"{value:+.3f}"


def _pct(value) -> str:
    if value is None:
        return "-"
    return "0%" if abs(value) < 0.005 else f"{value:.0%}"


def _num(value) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if isinstance(value, float) else f"{value:,}" if isinstance(value, int) else str(value)


def _shares(share: dict, limit: int = 3) -> str:
    return shares(share, limit)


def _mmm_of(stats: dict | None, digits: int = 3) -> str:
    """The analysis's {"mean", "min", "max"} as 'mean (min–max)'."""
    if not stats or stats["mean"] is None:
        return "-"
    return f"{stats['mean']:.{digits}f} ({stats['min']:.{digits}f}–{stats['max']:.{digits}f})"


# --- diagnoses ---------------------------------------------------------------------------------

_SEVERITY = {"warning": 0, "info": 1}


def _where(d: dict, run: str | None = None) -> str:
    parts = [f"host {d['host']}" if d.get("host") else "", f"rank {d['rank']}" if _has_rank(d.get("rank")) else "",
             f"pid {d['pid']}" if d.get("pid") else "", f"run {run}" if run else ""]
    return " · ".join(p for p in parts if p)


def _instance(d: dict, run: str | None, fix: tuple[list[dict], str | None, int]) -> str:
    """One diagnosis in full; fix: its actions not shown before for its process (fix_once)."""
    cost = f" · cost {d['cost_s']:.3f} s" if d.get("cost_s") is not None else ""
    evidence = _kv([(k, evidence_value(k, v)) for k, v in (d.get("evidence") or {}).items()])
    return (f'<div class="instance"><div class="where">{_e(_where(d, run))}{_e(cost)}</div>'
            f"<div>{_e(d['message'])}</div>{evidence}{_fix(*fix)}</div>")


def _fix(fix: list[dict] | None, shown_under: str | None = None, shown: int = 0, head: str = "fix") -> str:
    """A fix's actions: what to change, where, and the recovery, estimated or
    measured; then, where `shown` more of its actions were listed under an
    earlier diagnosis (`shown_under`), a pointer to them."""
    if not fix and not shown:
        return ""
    same = (f'<li class="same">{"and " if fix else ""}the {shown} action{"s" * (shown != 1)} under '
            f"<code>{_e(shown_under)}</code> above</li>" if shown else "")
    items = "".join(
        f"<li>{_e(a['what'])}; <b>where</b>: <code>{_e(a['where'])}</code>"
        + (f" · {_e(recovery_text(a))}" if recovery_text(a) else "") + "</li>"
        for a in fix or []) + same
    return f'<div class="fix"><b>{_e(head)}</b><ul>{items}</ul></div>'


def _pm(c: dict) -> str:
    """An interval as ± half its width, after the value it belongs to."""
    ci = c.get("ci95_s")
    if not ci:
        return ""
    half = (ci[1] - ci[0]) / 2
    return f" ±{half:.2f}" if half >= 0.01 else f" ±{half:.3f}"


def diagnoses_html(diagnoses: list[dict], runs: list[str | None] | None = None) -> str:
    """The diagnoses grouped by code, most costly first, each with its
    evidence; many instances of one code: the first few in full, then a table."""
    if not diagnoses:
        return '<p class="note">No diagnosis applies to this run.</p>'
    runs = runs or [None] * len(diagnoses)
    groups: dict = defaultdict(list)
    for d, run in zip(diagnoses, runs):
        groups[d["code"]].append((d, run))
    def cost(items):
        return sum(d.get("cost_s") or 0 for d, _ in items)
    order = sorted(groups, key=lambda code: (-cost(groups[code]), min(_SEVERITY.get(d["severity"], 2)
                                                                        for d, _ in groups[code]), code))
    ordered = {code: sorted(groups[code], key=lambda x: (-(x[0].get("cost_s") or 0),
                                                        _SEVERITY.get(x[0]["severity"], 2))) for code in order}
    full_of = {code: FULL_INSTANCES if len(items) <= FULL_INSTANCES else 1 for code, items in ordered.items()}
    fixes = iter(once_per_process([x for code in order for x in ordered[code][:full_of[code]]]))
    out = []
    for code in order:
        items = ordered[code]
        severity = min((d["severity"] for d, _ in items), key=lambda s: _SEVERITY.get(s, 2))
        costs = [d["cost_s"] for d, _ in items if d.get("cost_s") is not None]
        head = (f'<span class="badge {_e(severity)}">{_e(severity)}</span><code>{_e(code)}</code>'
                + (f" ×{len(items)}" if len(items) > 1 else ""))
        if len(costs) == 1:
            head += f" · cost {costs[0]:.3f} s"
        elif costs:
            head += f" · cost {_mmm_of(stats(costs))} s each"
        if len(items) > 1:
            hosts = sorted({d["host"] for d, _ in items if d.get("host")})
            head += _e(f" · ranks {_ranks(d.get('rank') for d, _ in items)}" if any(
                _has_rank(d.get("rank")) for d, _ in items) else "") + _e(
                f" · hosts {', '.join(hosts)}" if len(hosts) > 1 else "")
        body = [f'<div class="diagnosis {_e(severity)}"><h3>{head}</h3>']
        full = full_of[code]
        body += [_instance(d, run, next(fixes)) for d, run in items[:full]]
        rest = items[full:]
        if rest:
            rows = [[_where(d, run), _s(d.get("cost_s")), d["message"]] for d, run in rest[:MAX_INSTANCES]]
            body.append(f'<p class="note">{len(rest)} more of the same kind:</p>')
            body.append(_table(["where", "cost s", "message"], rows, numeric={1}))
            if len(rest) > MAX_INSTANCES:
                body.append(f'<p class="note">… and {len(rest) - MAX_INSTANCES} more.</p>')
        body.append("</div>")
        out.append("".join(body))
    return "\n".join(out)


# --- one run -----------------------------------------------------------------------------------

def _header(summary: dict) -> str:
    run, t = summary["run"], summary["throughput"]
    rows = [("command", _Html(f'<code>{_e(_command(run.get("command")))}</code>')),
            ("ended", ending(run)),
            ("start methods", ", ".join(run.get("start_methods") or []) or "-"),
            ("Python", ", ".join(run.get("python") or []) or "-")]
    left = left_out(run["ending"]["saves"])
    if t.get("saves"):
        rows += [("saves", f"{t['saves']}{' complete' * bool(left)} of {format_size(t['bytes'] // t['saves'])}"
                  + (f"; {left}" if left else "")),
                 ("mean save", f"{_s(t['mean_save_s'])} s"),
                 ("throughput", f"{_rate(t['gib_s'])} GiB/s (bytes saved over time saving)"
                  + (f"; {over}" if (over := world_text.seen_only(summary["world"])) else ""))]
    else:
        rows.append(("saves", f"none complete; {left}" if left
                     else "none found (no writer started by a probed process)"))
    for host, topo in summary.get("topology", {}).items():
        nodes = "; ".join(f"node {n}: CPUs {format_cpu_list(c)}" for n, c in topo.get("nodes", {}).items())
        rows.append((f"host {host}", f"{topo.get('cpus')} CPUs, {len(topo.get('nodes', {}))} NUMA node(s) "
                                     f"({nodes}){', ' + topo['cpu_model'] if topo.get('cpu_model') else ''}"))
    rows += [(f"binding {hosts}", bound) for hosts, bound in host_bindings(summary.get("host_binding") or [])]
    if (job := slurm_job(run)) is not None:
        rows.append(("Slurm", job))
    out = [_kv(rows)]
    if run.get("synthetic"):
        out.append('<p class="notice">SYNTHETIC run: generated, not measured.</p>')
    notes = recording_notes(run)
    if notes:
        out.append('<div class="notice"><b>The recording says</b>:<ul>'
                   + "".join(f"<li>{_e(note)}</li>" for note in notes) + "</ul></div>")
    if run.get("losses"):
        out.append('<div class="notice"><b>Data lost</b> (the rest is complete and used):<ul>'
                   + "".join(f"<li>{_e(loss)}</li>" for loss in run["losses"]) + "</ul></div>")
    return "\n".join(out)


def _processes(summary: dict) -> str:
    procs = summary["processes"]
    if len(procs) <= MAX_ROWS:
        rows = [[p["id"], p["host"], _rank(p["rank"]), p["pid"], p["role"], p.get("start_method") or "-",
                 format_cpu_list(p["allowed_cpus"]) or "-", _shares(p["worked_nodes"]),
                 _shares(p["buffer_nodes"]), _num(p.get("minflt")), _num(p.get("nonvoluntary_switches")),
                 _s(p.get("cpu_s"), 2), p.get("samples")] for p in procs]
        return (f"<h2>Processes ({len(procs)})</h2>"
                + _table(["id", "host", "rank", "pid", "role", "method", "allowed CPUs", "ran on node",
                          "buffers on node", "minor faults", "invol. switches", "CPU s", "samples"],
                         rows, numeric={0, 3, 9, 10, 11, 12}))
    rows = [[g["host"], g["role"], g["count"], _ranks(g["ranks"]), ", ".join(g["start_methods"]) or "-",
             format_cpu_list(g["allowed_cpus"]) if g["masks"] == 1 else f"{g['masks']} different",
             _shares(g["worked_nodes"]), _shares(g["buffer_nodes"]), _mmm_of(g["minflt"], 0),
             _mmm_of(g["nonvoluntary_switches"], 0), _mmm_of(g["cpu_s"], 2)]
            for g in summary["process_groups"]]
    return (f"<h2>Processes ({len(procs)}, one row per host and role)</h2>"
            '<p class="note">Counts as mean (min–max) over the group.</p>'
            + _table(["host", "role", "count", "ranks", "methods", "allowed CPUs", "ran on node (mean)",
                      "buffers on node (mean)", "minor faults", "invol. switches", "CPU s"],
                     rows, numeric={2}))


_SAVE_COLUMNS = (("startup_s", "start-up"), ("gen_s", "gen"), ("put_wait_s", "put-wait"),
                 ("get_wait_s", "get-wait"), ("write_s", "write"), ("fsync_s", "fsync"), ("duration_s", "total"))


def _saves(summary: dict) -> str:
    saves = summary["saves"]
    if not saves:
        return "<h2>Saves</h2><p class=\"note\">No saves found.</p>"
    note = ('<p class="note">Seconds. start-up = Process.start() to the writer\'s first unit of work (the first '
            'chunk it took, the first byte it wrote or sent), less its wait for the first chunk; re-run = the writer '
            're-running the parent\'s __main__; put-wait = producer blocked on the full queue; get-wait = writer '
            'waiting for a chunk; bound by = the component with the most seconds on the save\'s critical path, and '
            'those seconds (a column\'s own duration can be larger: start-up overlapped by generation held the '
            'save up only for its critical-path share); ~gen = the producer\'s time between its hand-offs, where '
            'its fill is no hooked call.</p>')
    if len(saves) <= MAX_ROWS:
        rows = [[s["save"], s["host"], _rank(s["rank"]), s.get("writer_pid") or "-", s.get("start_method") or "-",
                 _s(s["startup_s"]), _s((s["startup"] or {}).get("main_rerun") or None),  # no re-run: "-"
                 ("~" if s.get("gen_from") == BETWEEN else "") + _s(s["gen_s"]),
                 *[_s(s[k]) for k, _ in _SAVE_COLUMNS[2:]], _rate(s.get("gib_s")),
                 save_status(s) or f"{s['bottleneck']} {_s(s['bottleneck_s'])}"]
                for s in saves]
        table = _table(["save", "host", "rank", "writer pid", "method", "start-up", "re-run",
                        *[h for _, h in _SAVE_COLUMNS[1:]], "GiB/s", "bound by"], rows,
                       numeric=set(range(5, 14)) | {0, 3})
        title = f"<h2>Saves ({len(saves)})</h2>"
    else:
        rows = [[row["save"], row["ranks"], *[_mmm_of(row[k]) for k, _ in _SAVE_COLUMNS], _mmm_of(row["gib_s"], 2),
                 f"rank {_rank(row['slowest']['rank'])} on {row['slowest']['host']}",
                 f"{row['bottleneck']} {_mmm_of(row['bottleneck_s'])}"]
                for row in summary["save_indices"]]
        producers = len(summary["ranks"])
        table = _table(["save", "ranks", *[h for _, h in _SAVE_COLUMNS], "GiB/s", "slowest", "bound by"], rows,
                       numeric={0, 1})
        title = (f"<h2>Saves ({len(saves)} over {producers} producers, one row per save index)</h2>"
                 '<p class="note">Mean (min–max) over the ranks.</p>')
    cut = [s for s in saves if save_status(s)]
    if cut:
        table += ('<div class="notice"><b>Cut short</b>, not in the figures:<ul>' + "".join(
            f"<li>{_e(save_cut(s))}</li>" for s in cut[:MAX_ROWS]) + "</ul>"
            + (f'<p class="note">… and {len(cut) - MAX_ROWS} more.</p>' if len(cut) > MAX_ROWS else "") + "</div>")
    saves = complete(saves)
    if not saves:
        return title + note + table
    mean = {c: sum(s["critical_path"][c] for s in saves) / len(saves) for c in COMPONENTS}
    mean["unexplained"] = sum(s["unexplained_s"] for s in saves) / len(saves)
    duration = sum(s["duration_s"] for s in saves) / len(saves)
    path_rows = [[c, _s(v), _pct(v / duration if duration else None)] for c, v in mean.items() if v >= MIN_S
                 or c == "unexplained"]
    path_rows.append(["total (mean save)", _s(duration), _pct(1.0)])
    path = ("<h3>Where the time of a save goes (critical path, mean per save)</h3>"
            + _table(["component", "seconds", "share"], path_rows, numeric={1, 2},
                     row_classes={len(path_rows) - 1: "total"}))
    return title + note + table + path


def _uploads(saves: list[dict]) -> str:
    """The saves that were uploads: each one's key, parts, size and times ("": none)."""
    rows, notes = upload_rows(saves)
    if not rows:
        return ""
    return (f"<h3>Uploads ({len(rows)})</h3><p class=\"note\">{_e(UPLOADS_TITLE)}; ~: inferred, the peer.</p>"
            + _table(["save", "rank", "writer pid", "key", "parts", "size", "write", "threads", "status"], rows,
                     numeric={0, 4, 5, 6, 7})
            + ("<ul>" + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul>" if notes else ""))


def report_html(summary: dict, figures: dict | None = None, image_format: str = "png",
                flames: dict[str, str] | None = None) -> str:
    """One run's report: the run and its throughput, the diagnoses (most
    costly first, with evidence), the process table, placement across ranks
    and the launcher's binding, the save table, the plots, and the
    flamegraphs (name -> SVG) when there are stacks."""
    run, world = summary["run"], summary["world"]
    partial = " (PARTIAL job)" if world["partial"] else ""
    body = [f"<h1>writerprof report{partial}</h1><p class=\"mono\">{_e(run.get('path'))}</p>", _world(world, run),
            _header(summary),
            f"<h2>Diagnoses ({sum(d['severity'] == 'warning' for d in summary['diagnoses'])} warnings, "
            f"{len(summary['diagnoses'])} in all; most costly first)</h2>",
            diagnoses_html(summary["diagnoses"]), _processes(summary), _ranks_placement(summary),
            _bindings(summary), _saves(summary), _uploads(summary["saves"]),
            _figures(figures or {}, image_format, plots.left_out(summary)), _flames(flames or {})]
    return _page(f"writerprof report {run.get('path')}{partial}", body)


def _world(world: dict, run: dict) -> str:
    """The job's ranks and hosts, first on the page: a partial job's as a notice, with how to get the rest."""
    line = world_text.headline(world)
    if line is None:
        return ""
    if not world["partial"]:
        return f"<p><b>World</b>: {_e(line)}</p>"
    return (f'<div class="notice"><b>{_e(line)}</b><p>Every figure below is over what was recorded, not the '
            f"job's. {_e(world_text.to_complete(run.get('path')))}</p></div>")


def _ranks_placement(summary: dict) -> str:
    if len(summary["ranks"]) <= 1:
        return ""
    return f"<h2>Placement across ranks</h2><p>{_e(placement(summary['placement']))}</p>"


def _bindings(summary: dict) -> str:
    bound = summary.get("binding") or []
    if not bound:
        return ""
    return ("<h2>The launcher's binding</h2><ul>" + "".join(f"<li>{_e(binding(b))}</li>" for b in bound)
            + "</ul>")


# --- a comparison ------------------------------------------------------------------------------

def _side_label(side: dict, default: str) -> str:
    return side.get("name") or "/".join(side.get("start_methods") or []) or default


def _part_row(c: dict) -> list:
    """A component's row; a side where none of its calls was recorded (a
    phase no hook saw) has "-", and so have the difference and its share."""
    own = (f"; its own calls {c['a_own_s']:.3f} → {c['b_own_s']:.3f} s"
           if c.get("a_own_s") is not None and c.get("b_own_s") is not None else "")
    unmeasured = {side for side in ("a", "b") if c["name"] in OWN and c.get(f"{side}_own_s") is None}
    if unmeasured:
        return [c.get("label") or c["name"], c.get("description", "") + "; not measured: no hooked call",
                *("-" if side in unmeasured else _s(c[f"{side}_s"]) for side in ("a", "b")), "-", "-"]
    share = "noise" if c.get("significant") is False else _pct(c.get("share"))
    return [c.get("label") or c["name"], c.get("description", "") + own, _s(c["a_s"]), _s(c["b_s"]),
            _signed(c["diff_s"]) + _pm(c), share]


def _components(comparison: dict, name_a: str, name_b: str) -> str:
    a, b = comparison["a"], comparison["b"]
    rows, classes = [], {}
    difference = comparison["difference_s"]
    for c in comparison["components"]:
        if max(abs(c["a_s"]), abs(c["b_s"])) < MIN_S:
            classes[len(rows)] = "dim"
        rows.append(_part_row(c))
    unexplained = comparison["unexplained_s"]
    rows.append(["unexplained", "no recorded activity on the critical path", _s(a["unexplained_s"]),
                 _s(b["unexplained_s"]), _signed(unexplained), _pct(unexplained / difference if difference else None)])
    total = sum(c["diff_s"] for c in comparison["components"]) + unexplained
    classes[len(rows)] = "total"
    rows.append(["total", "= the difference in mean save time", _s(a["mean_save_s"]), _s(b["mean_save_s"]),
                 _signed(total) + _pm(comparison.get("total") or {}), _pct(1.0 if difference else None)])
    startup = comparison.get("writer_startup")
    if startup and max(abs(startup["a_s"]), abs(startup["b_s"])) >= MIN_S:
        rows.append(_part_row(startup))
    return ("<h2>Where the difference goes (critical path, mean per save)</h2>"
            f'<p class="note">B − A with ± half its 95% {_interval_kind(comparison)}; share "noise" where the '
            "interval includes zero; own calls: the component's own duration, on the critical path or not.</p>"
            + _table(["component", "what it is", f"A {name_a} s", f"B {name_b} s", "B − A s", "share"], rows,
                     numeric={2, 3, 4, 5}, row_classes=classes))


def _startup(comparison: dict, name_a: str, name_b: str) -> str:
    a, b = comparison["a"], comparison["b"]
    rows = [[p, _s(a["startup"].get(p)), _s(b["startup"].get(p)),
             _signed(None if a["startup"].get(p) is None or b["startup"].get(p) is None
                     else b["startup"][p] - a["startup"][p])]
            for p in STARTUP_PHASES if max(a["startup"].get(p) or 0, b["startup"].get(p) or 0) >= MIN_S]
    if not rows:
        return ""
    return ("<h2>Start-up phases (mean per writer)</h2>"
            + _table(["phase", f"A {name_a} s", f"B {name_b} s", "B − A s"], rows, numeric={1, 2, 3}))


def _placement(comparison: dict, name_a: str, name_b: str) -> str:
    a, b = comparison["a"], comparison["b"]
    rows, classes = [], {}
    for key in ("writer_cpus", "producer_cpus", "writer_parent", "writer_nodes", "buffer_nodes"):
        va, vb = _placement_value(a["placement"].get(key)), _placement_value(b["placement"].get(key))
        if va != vb:
            classes[len(rows)] = "differs"
        rows.append([key.replace("_", " "), va, vb])
    placement = ("<h2>Placement</h2><p class=\"note\">Rows that differ are highlighted.</p>"
                 + _table(["", f"A {name_a}", f"B {name_b}"], rows, row_classes=classes))
    rows, classes = [], {}
    for key, va in a["kernel"].items():
        vb = b["kernel"].get(key)
        ratio = vb / va if va and vb is not None else None
        if ratio is not None and not 0.8 <= ratio <= 1.25:
            classes[len(rows)] = "differs"
        rows.append([key.replace("_", " "), _num(va), _num(vb), f"{ratio:.2f}×" if ratio is not None else "-"])
    kernel = ("<h2>Kernel counts</h2><p class=\"note\">Highlighted: B differs from A by more than 25%.</p>"
              + _table(["", f"A {name_a}", f"B {name_b}", "B / A"], rows, numeric={1, 2, 3}, row_classes=classes))
    warnings = _kv([(f"A {name_a}", ", ".join(a.get("diagnoses") or []) or "none"),
                    (f"B {name_b}", ", ".join(b.get("diagnoses") or []) or "none")])
    return placement + kernel + "<h3>Warnings on each side</h3>" + warnings


def _per_save(comparison: dict, name_a: str, name_b: str) -> str:
    per_save = comparison.get("per_save") or []
    if not per_save:
        return ""
    rows = []
    for s in per_save[:MAX_ROWS]:
        top = max(COMPONENTS, key=lambda c: abs(s["components"][c]))
        rows.append([s["save"], _s(s["a_s"]), _s(s["b_s"]), _signed(s["diff_s"]),
                     f"{top} {s['components'][top]:+.3f}"])
    more = (f'<p class="note">… and {len(per_save) - MAX_ROWS} more save indices.</p>'
            if len(per_save) > MAX_ROWS else "")
    return ("<h2>Per save (matched by their order within each producer; mean over ranks and runs)</h2>"
            + _table(["save", f"A {name_a} s", f"B {name_b} s", "B − A s", "largest part of the difference"],
                     rows, numeric={0, 1, 2, 3}) + more)


def _what_ifs(contrast: dict | None) -> str:
    if not contrast or not contrast.get("what_ifs"):
        return ""
    rows = []
    for w in contrast["what_ifs"]:
        if not w.get("ran"):
            rows.append([w["method"], "not run: " + str(w.get("reason") or ""), "-", "-"])
        else:
            ci = w.get("recovered_ci95_s")
            rows.append([w["method"], "ran" + (f" with {w['modules']!r}" if w.get("modules") else ""),
                         _rate(w.get("gib_s")),
                         ("" if told_from_none(ci) else "maybe ")
                         + f"{_s(w.get('recovered_s'))} s ({_pct(w.get('recovered_share'))})"
                         + (f", 95% interval {_s(ci[0])} to {_s(ci[1])} s" if ci else "")
                         + ("" if told_from_none(ci) else ", not told apart from none")
                         if w.get("recovered_s") is not None else "-"])
    return ("<h2>What-ifs</h2>" + _table(["method", "", "GiB/s", "recovers of what forkserver lost"], rows,
                                         numeric={2}))


def verdict_html(verdict: str) -> str:
    """A comparison's verdict (analysis.compare.verdict), a line each."""
    return "<br>".join(_e(line) for line in verdict.split("\n"))


def contrast_html(comparison: dict, sides: dict[str, list[dict]], figures: dict | None = None,
                  contrast: dict | None = None, image_format: str = "png",
                  flames: dict[str, str] | None = None) -> str:
    """A comparison's report: the verdict, the component table (adding up to
    the difference with the unexplained), throughput, placement and kernel
    differences, the per-save table, each side's diagnoses and the plots.
    `contrast` (writerprof contrast's result) adds its what-ifs."""
    a, b = comparison["a"], comparison["b"]
    name_a, name_b = _side_label(a, "A"), _side_label(b, "B")
    t = comparison["throughput"]
    change = f"{t['change']:+.1%}" if t.get("change") is not None else "-"
    # A contrast's verdict and fix: the first comparison's, with what its what-ifs measured of the fix.
    verdict = contrast["verdict"] if contrast and "verdict" in contrast else comparison["verdict"]
    body = [f"<h1>writerprof contrast: {_e(name_a)} vs {_e(name_b)}</h1>",
            world_text.of_runs_html((contrast or {}).get("runs") or []),
            f'<div class="verdict" id="verdict">{verdict_html(verdict)}</div>']
    body += [f'<p class="note"><b>{_e(d["heading"])}:</b> ' + "<br>".join(_e(line) for line in d["lines"]) + "</p>"
             for d in comparison.get("details") or []]
    fix = contrast["fix"] if contrast and "fix" in contrast else comparison.get("fix")
    body.append(_fix(fix, head="What to do"))
    if contrast and contrast.get("command"):
        body.append(_kv([("command", _Html(f"<code>{_e(_command(contrast['command']))}</code>")),
                         ("methods", ", ".join(contrast.get("methods") or [])),
                         ("repeats", contrast.get("repeat"))]))
    body.append(_kv([(f"A {name_a}", ", ".join(map(str, a.get("runs") or [])) or "-"),
                     (f"B {name_b}", ", ".join(map(str, b.get("runs") or [])) or "-")]))
    body.append("<h2>Throughput</h2>" + _table(
        ["", f"A {name_a}", f"B {name_b}", "B − A"],
        [["saves", a["saves"], b["saves"], ""],
         ["bytes per save", format_size(int(a["bytes_per_save"])), format_size(int(b["bytes_per_save"])), ""],
         ["throughput GiB/s", _rate(t.get("a_gib_s")), _rate(t.get("b_gib_s")), change],
         ["mean save s", _s(a["mean_save_s"]), _s(b["mean_save_s"]), _signed(comparison["difference_s"])]],
        numeric={1, 2, 3}))
    body += [_components(comparison, name_a, name_b), _startup(comparison, name_a, name_b),
             _placement(comparison, name_a, name_b), _per_save(comparison, name_a, name_b), _what_ifs(contrast)]
    body.append("<h2>Diagnoses of each side</h2>")
    for label, summaries in sides.items():
        diagnoses = [d for s in summaries for d in s["diagnoses"]]
        runs = [s["run"]["path"] if len(summaries) > 1 else None for s in summaries for _ in s["diagnoses"]]
        saves = sum(len(s["saves"]) for s in summaries)
        body.append(f"<h3>{_e(label)} ({len(summaries)} run{'s' * (len(summaries) != 1)}, {saves} saves)</h3>")
        body.append(diagnoses_html(diagnoses, runs))
    body.append(_figures(figures or {}, image_format))
    body.append(_flames(flames or {}))
    return _page(f"writerprof contrast {name_a} vs {name_b}", body)
