"""Plots of a run and of a comparison, as matplotlib Figures. They draw what
the summary (or the comparison) holds, the plots' data included
(summary["affinity"], ["buffer_placement"], ["chunk_timeline"]), and take
no run: nothing here computes a finding.

Figures are made with matplotlib.figure.Figure, never pyplot: no display is
needed and a caller's pyplot state is left alone. Saving picks the Agg (PNG)
or SVG canvas by the file's format.

One colour per critical-path component or hooked phase (COLOURS) in every
plot, and one per NUMA node (node_colour). With many processes or saves
(MPI runs) each plot aggregates, per (host, role), per save index, or to a
few representative ranks, and says so in its title.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from writerprof.render.plots.affinity import affinity_timeline
from writerprof.render.plots.chunks import chunk_timeline
from writerprof.render.plots.placement import buffer_placement
from writerprof.render.plots.saves import compare_waterfall, save_decomposition
from writerprof.render.plots.style import COLOURS, NAMES, NO_NODE, NODE_COLOURS, colour, empty, node_colour

_empty = empty  # the name the tests of pyplot's absence use

__all__ = ["COLOURS", "NAMES", "NODE_COLOURS", "NO_NODE", "affinity_timeline", "buffer_placement", "chunk_timeline",
           "colour", "compare_waterfall", "node_colour", "FILE_DPI", "REPORT_FIGURES", "report_figures", "save_decomposition", "save_figures"]


FILE_DPI = 110  # the plots saved as files (save_figures)


def _run_save_decomposition(summary: dict) -> Figure:
    label = "/".join(summary["run"]["start_methods"]) or Path(summary["run"]["path"]).name
    return save_decomposition({label: [summary]})


# The plots of one run, by file name: name -> make(summary) -> Figure.
REPORT_FIGURES = {
    "affinity_timeline": affinity_timeline,
    "buffer_placement": buffer_placement,
    "chunk_timeline": chunk_timeline,
    "save_decomposition": _run_save_decomposition,
}


def report_figures(summary: dict) -> dict[str, Figure]:
    """The plots of one run, by file name."""
    return {name: make(summary) for name, make in REPORT_FIGURES.items()}


def save_figures(figures: dict[str, Figure], out_dir, dpi: int = FILE_DPI) -> list[Path]:
    """NAME.png and NAME.svg for each figure; the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in figures.items():
        for fmt in ("png", "svg"):
            path = out / f"{name}.{fmt}"
            # No date in the files: the same run gives the same bytes.
            metadata = {"Date": None} if fmt == "svg" else {}
            fig.savefig(path, format=fmt, dpi=dpi, metadata=metadata)
            written.append(path)
    return written
