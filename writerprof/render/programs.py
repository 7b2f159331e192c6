"""A contrast of a program without checkpoint saves (analysis.program_contrast),
on the terminal and as HTML: the verdict's lines first, then the wall time's
parts, the children's start-up phases, the tasks, and the fix."""

from __future__ import annotations

import textwrap

from writerprof.analysis.program import STARTUP
from writerprof.render import world as world_text
from writerprof.render.markup import _e, _kv, _page, _table
from writerprof.render.table import WIDTH, Column, table


def contrast_text(result: dict, report, width: int = WIDTH) -> str:
    out = _wrap(world, "", width) if (world := world_text.of_runs(result["runs"])) else []
    for method, c in result["comparisons"].items():
        a, b = c["a"]["name"], c["b"]["name"]
        out.append(f"\n=== {a} vs {b}: CMD's wall time ===\n")
        out += [line for text in c["verdict"] for line in _wrap(text, "", width)]
        out.append("")
        out += _parts(c, width)
        out.append("")
        out += _children(c, width)
        out += _fix(c["fix"], width)
    for entry in result["what_ifs"]:
        out += _wrap(f"{entry['method']}: not run: {entry['reason']}", "", width)
    out.append(f"\nReport: {report}")
    return "\n".join(out) + "\n"


def _parts(c: dict, width: int) -> list[str]:
    a, b = c["a"]["name"], c["b"]["name"]
    columns = [Column("wall time, by part (s)", left=True, wrap=True), Column(a), Column(b), Column(f"{b} - {a}"),
               Column("95% interval", left=True), Column("share")]
    rows = []
    for p in c["parts"]:
        if p["a_s"] or p["b_s"]:
            rows.append(_cells(p["label"], p["a_s"], p["b_s"], p["diff_s"], p["ci95_s"],
                               f"{p['share']:.0%}" if p["significant"] and p["share"] is not None else ""))
    w = c["wall"]
    rows.append(_cells("total: CMD's wall time", w["a_s"], w["b_s"], w["diff_s"], w["ci95_s"], ""))
    return table(columns, rows, width)


def _cells(label, a, b, diff, ci, share) -> list[str]:
    interval = f"{ci[0]:+.3f} to {ci[1]:+.3f}" if ci is not None else "-"
    return [label, f"{a:.3f}", f"{b:.3f}", f"{diff:+.3f}", interval, share]


def _children(c: dict, width: int = WIDTH) -> list[str]:
    a, b = c["a"], c["b"]
    rows = []

    def row(label, x, y, fmt="{:.3f}"):
        rows.append([label, _fmt(x, fmt), _fmt(y, fmt)])

    row("children started", a["children"]["started"], b["children"]["started"], "{:.1f}")
    row("tasks taken per child", a["children"]["tasks_per_child"], b["children"]["tasks_per_child"], "{:.1f}")
    for p in STARTUP:
        row(f"start-up: {p} (s)", a["children"]["phases"][p], b["children"]["phases"][p])
    row("start-up, all phases (s)", a["children"]["startup_s"], b["children"]["startup_s"])
    row("wait for its first task (s)", a["children"]["first_task_s"], b["children"]["first_task_s"])
    row("Process.start() call (s)", a["children"]["start_call_s"], b["children"]["start_call_s"])
    row("  of which pickling (s)", a["children"]["pickle_s"], b["children"]["pickle_s"])
    row("  pickled (MiB)", _mib(a["children"]["pickle_bytes"]), _mib(b["children"]["pickle_bytes"]), "{:.2f}")
    rows.append(["per task (mean)", "", ""])
    row("task gets", a["tasks"]["gets"], b["tasks"]["gets"], "{:.0f}")
    row("wait + unpickle, child (s)", a["tasks"]["get_s"], b["tasks"]["get_s"], "{:.4f}")
    row("pickling calls", a["tasks"]["pickled_calls"], b["tasks"]["pickled_calls"], "{:.0f}")
    row("pickling one (s)", a["tasks"]["pickle_s"], b["tasks"]["pickle_s"], "{:.5f}")
    return table([Column("per child (mean)", left=True, wrap=True), Column(a["name"]), Column(b["name"])], rows, width)


def _fix(fix: list[dict], width: int) -> list[str]:
    if not fix:
        return []
    out = ["", "fix:"]
    for action in fix:
        rec = (f"; recovers about {action['recovery_s']:.2f} s of the wall time ({action['recovery']})"
               if action.get("recovery_s") is not None else "")
        out += _wrap(f"- {action['what']}; where: {action['where']}{rec}", "  ", width)
    return out


def _fmt(value, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _mib(value):
    return value / 2**20 if value is not None else None


def _wrap(text: str, indent: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False) or [indent]


def contrast_html(result: dict) -> str:
    body = [f"<h1>writerprof contrast: {_e(' vs '.join(result['methods']))}</h1>",
            world_text.of_runs_html(result["runs"]),
            _kv([("command", " ".join(result["command"])), ("runs", f"{result['repeat']} of each, interleaved"),
                 ("metric", result["metric"] or "CMD's wall time")])]
    for c in result["comparisons"].values():
        a, b = c["a"]["name"], c["b"]["name"]
        body.append(f"<h2>{_e(a)} vs {_e(b)}</h2>")
        body.append('<div class="verdict">' + "<br>".join(_e(line) for line in c["verdict"]) + "</div>")
        rows = [[p["label"], f"{p['a_s']:.3f}", f"{p['b_s']:.3f}", f"{p['diff_s']:+.3f}",
                 f"{p['ci95_s'][0]:+.3f} to {p['ci95_s'][1]:+.3f}" if p["ci95_s"] else "-",
                 f"{p['share']:.0%}" if p["significant"] and p["share"] is not None else ""]
                for p in c["parts"] if p["a_s"] or p["b_s"]]
        w = c["wall"]
        rows.append(["total: CMD's wall time", f"{w['a_s']:.3f}", f"{w['b_s']:.3f}", f"{w['diff_s']:+.3f}",
                     f"{w['ci95_s'][0]:+.3f} to {w['ci95_s'][1]:+.3f}" if w["ci95_s"] else "-", ""])
        body.append("<h3>The wall time, by part (seconds, mean of the runs)</h3>")
        body.append(_table(["part", a, b, f"{b} - {a}", "95% interval", "share"], rows, numeric={1, 2, 3},
                           row_classes={len(rows) - 1: "total"}))
        body.append("<h3>Per child and per task</h3><pre>" + _e("\n".join(_children(c))) + "</pre>")
        if c["fix"]:
            body.append("<h3>Fix</h3><ul>" + "".join(
                f"<li>{_e(f['what'])}; <span class=\"where\">where: {_e(f['where'])}</span></li>" for f in c["fix"])
                + "</ul>")
    for entry in result["what_ifs"]:
        body.append(f'<p class="note">{_e(entry["method"])}: not run: {_e(entry["reason"])}</p>')
    return _page("writerprof contrast", body)
