"""The parts of writerprof's HTML reports: the inline style, escaping (every
string from the data goes through html.escape), tables, figures embedded as
data: URIs (base64 PNG or SVG), flamegraphs in frames of their own, and the
page around them: one self-contained file, no script, no external reference."""

from __future__ import annotations

import base64
import html
import io
import re


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif;
       margin: 1.5em auto; max-width: 1250px; padding: 0 1em; color: #222; line-height: 1.4; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; margin-top: 1.8em;
     border-bottom: 1px solid #ddd; padding-bottom: 0.2em; } h3 { font-size: 1.05em; margin: 0.2em 0; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.86em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; vertical-align: top; }
th { background: #f3f3f3; text-align: left; } td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.dim td { color: #999; } tr.total td { font-weight: bold; border-top: 2px solid #999; }
tr.differs td { background: #fff7d6; }
table.kv th { width: 12em; }
code, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.92em; }
.diagnosis { margin: 0.8em 0; padding: 0.5em 0.8em; border-left: 5px solid #999; background: #f7f7f7; }
.diagnosis.warning { border-left-color: #d9822b; background: #fff5ea; }
.diagnosis.info { border-left-color: #3b7dd8; background: #f1f6fd; }
.badge { display: inline-block; padding: 0 0.45em; border-radius: 3px; font-size: 0.8em; font-weight: bold;
         color: #fff; background: #888; margin-right: 0.4em; text-transform: uppercase; }
.badge.warning { background: #c8691a; } .badge.info { background: #2f6fc4; }
.instance { margin: 0.5em 0 0.5em 0.8em; }
.where { color: #555; font-size: 0.9em; }
.verdict { font-size: 1.25em; padding: 0.8em 1em; border: 2px solid #333; background: #fffbe6; margin: 1em 0; }
.notice { padding: 0.5em 0.8em; background: #fdecea; border-left: 5px solid #c62828; }
.note { color: #555; font-size: 0.9em; }
.fix li.same { color: #555; }
figure { margin: 1em 0 2em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.9em; }
"""

# What each plot shows, under it.
CAPTIONS = {
    "affinity_timeline": "Where each process ran over time (sampled CPU, coloured by NUMA node; a grey dot where it "
                         "was idle), against the CPUs it was allowed; at scale the share of the busy readings per "
                         "node by host and role (at most 12 groups: the most spread over nodes).",
    "buffer_placement": "Pages of each shared-memory buffer per NUMA node at the end of the writer's loop, and the "
                        "node the writer ran on.",
    "chunk_timeline": "Each producer/writer pair on one time axis: gen, put-wait, the writer's start-up phases, "
                      "get-wait, write, fsync.",
    "save_decomposition": "The critical path of each save by component (mean per save index at scale).",
    "compare_waterfall": "From A's mean save time to B's, through each component's difference.",
}


class _Html(str):
    """Markup made here: not escaped again."""


def _e(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _cell(value) -> str:
    """A table cell: markup made here as it is, None (not measured) as "-", the rest escaped."""
    if value is None:
        return "-"
    return value if isinstance(value, _Html) else _e(value)


def _table(headers: list[str], rows: list[list], numeric: set[int] = frozenset(), row_classes=None,
           cls: str = "") -> str:
    out = [f'<table class="{cls}">' if cls else "<table>", "<thead><tr>"]
    out += [f'<th class="n">{_cell(h)}</th>' if i in numeric else f"<th>{_cell(h)}</th>"
            for i, h in enumerate(headers)]
    out.append("</tr></thead><tbody>")
    for r, row in enumerate(rows):
        klass = (row_classes or {}).get(r) if isinstance(row_classes, dict) else (
            row_classes[r] if row_classes else None)
        out.append(f'<tr class="{klass}">' if klass else "<tr>")
        out += [f'<td class="n">{_cell(v)}</td>' if i in numeric else f"<td>{_cell(v)}</td>"
                for i, v in enumerate(row)]
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _kv(rows: list[tuple[str, object]]) -> str:
    return ('<table class="kv">' + "".join(f"<tr><th>{_cell(k)}</th><td>{_cell(v)}</td></tr>" for k, v in rows)
            + "</table>")


# --- figures -----------------------------------------------------------------------------------

HTML_DPI = 100  # the plots embedded in a page


def figure_data_uri(figure, image_format: str = "png", dpi: int = HTML_DPI) -> str:
    """A figure as a data: URI (base64 PNG or SVG): an image without a file."""
    buffer = io.BytesIO()
    metadata = {"Date": None} if image_format == "svg" else {}
    figure.savefig(buffer, format=image_format, dpi=dpi, metadata=metadata)
    mime = "image/svg+xml" if image_format == "svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def _figures(figures: dict, image_format: str, left_out: dict[str, str] | None = None) -> str:
    """The plots (a None figure is skipped), then a note for each plot left out (name -> why)."""
    if not figures:
        return ""
    out = ["<h2>Plots</h2>"]
    for name, figure in figures.items():
        if figure is None:
            continue
        out.append(f'<figure id="{_e(name)}"><img alt="{_e(name)}" src="{figure_data_uri(figure, image_format)}">'
                   f"<figcaption><b>{_e(name.replace('_', ' '))}</b>. {_e(CAPTIONS.get(name, ''))}</figcaption>"
                   f"</figure>")
    out += [f'<p class="note" id="{_e(name)}-left-out"><b>{_e(name.replace("_", " "))}</b>: {_e(why)}.</p>'
            for name, why in (left_out or {}).items()]
    return "\n".join(out)


def _flames(flames: dict[str, str]) -> str:
    """Flamegraphs (SVG documents) embedded each in a frame of its own: they
    stay interactive (hover, click to zoom) and their ids cannot collide."""
    if not flames:
        return ""
    out = ["<h2>Flamegraphs</h2>",
           "<p>Python stacks sampled while the run was recorded (by the probe in each process, or by py-spy: "
           "<code>record --stacks-by</code>), blocked threads included: widths are wall-clock time. "
           "Hover a frame for its samples and share; click to zoom.</p>"]
    for name, svg in flames.items():
        tag = re.search(r"<svg[^>]*>", svg)
        width, height = (re.search(rf'\s{attr}="(\d+)', tag.group(0)) if tag else None for attr in ("width", "height"))
        # The graph no wider than its frame (a narrow window scales it down rather than cut its right
        # side off), the frame in the graph's proportions: nothing inside it scrolls or is cut.
        shape = f"aspect-ratio:{width.group(1)}/{height.group(1)}" if width and height else "height:600px"
        out.append(f'<figure><iframe title="{_e(name)}" srcdoc="{_e(_FLAME_STYLE + svg)}" '
                   f'style="width:100%;border:0;{shape}"></iframe>'
                   f"<figcaption><b>{_e(name)}</b></figcaption></figure>")
    return "\n".join(out)


_FLAME_STYLE = "<style>html, body { margin: 0; } svg { display: block; max-width: 100%; height: auto; }</style>"


def _page(title: str, body: list[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{_e(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(body) + "\n</body>\n</html>\n")
