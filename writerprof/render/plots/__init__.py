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
few representative ranks, and says so in its title. A plot that could show
nothing to act on in a run is left out of its plots, saying why (left_out).

Importing this package does not import matplotlib: each plot's module is
imported when the plot is first asked for, so that a report's parent process,
whose figures its workers draw (plots.parallel), never pays for matplotlib.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLOURS", "NAMES", "NODE_COLOURS", "NO_NODE", "affinity_timeline", "buffer_placement", "chunk_timeline",
           "colour", "compare_waterfall", "left_out", "node_colour", "FILE_DPI", "REPORT_FIGURES", "report_figures",
           "save_decomposition", "save_figures"]

FILE_DPI = 110  # the plots saved as files (save_figures)

# The module of this package that holds each name, imported on first use (PEP 562).
_MODULES = {
    "affinity_timeline": "affinity", "buffer_placement": "placement", "chunk_timeline": "chunks",
    "compare_waterfall": "saves", "save_decomposition": "saves",
    **dict.fromkeys(("COLOURS", "NAMES", "NO_NODE", "NODE_COLOURS", "colour", "empty", "node_colour"), "style"),
}


def __getattr__(name: str):
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULES[name]}"), name)


def left_out(summary: dict) -> dict[str, str]:
    """The plots of a run (by file name) that are not drawn for it, and why."""
    out = {}
    topology = summary.get("topology") or {}
    one_node = bool(topology) and all(len(t.get("nodes") or {}) <= 1 for t in topology.values())
    if one_node and summary.get("affinity") and not any(map(affinity_changed, summary["processes"])):
        out["affinity_timeline"] = ("left out: every host has one NUMA node and no process's allowed CPUs "
                                    "changed, so where each process ran costs nothing here")
    return out


def affinity_changed(proc: dict) -> bool:
    """Whether a process's allowed CPUs changed in its life: a pin at its start, or any the sampler saw."""
    masks = {tuple(proc["allowed_cpus"])} | {tuple(c["cpus"]) for c in proc["affinity_changes"]}
    if proc.get("inherited_cpus"):
        masks.add(tuple(proc["inherited_cpus"]))
    return len(masks) > 1


def report_figure(name: str, summary: dict) -> Figure | None:
    """One plot of a run, by its file name (a key of REPORT_FIGURES); None
    where it is left out (left_out)."""
    if name in left_out(summary):
        return None
    make = __getattr__(name)
    if name == "save_decomposition":  # one side: the run, under its start method(s)
        label = "/".join(summary["run"]["start_methods"]) or Path(summary["run"]["path"]).name
        return make({label: [summary]})
    return make(summary)


# The plots of one run, by file name: name -> make(summary) -> Figure.
REPORT_FIGURES = {name: functools.partial(report_figure, name)
                  for name in ("affinity_timeline", "buffer_placement", "chunk_timeline", "save_decomposition")}


def report_figures(summary: dict) -> dict[str, Figure]:
    """The plots of one run, by file name, but those left out (left_out)."""
    return {name: make(summary) for name, make in REPORT_FIGURES.items() if name not in left_out(summary)}


def save_figures(figures: dict[str, Figure], out_dir, dpi: int = FILE_DPI) -> list[Path]:
    """NAME.png and NAME.svg for each figure (None: a figure left out); the paths written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in figures.items():
        if fig is None:
            continue
        for fmt in ("png", "svg"):
            path = out / f"{name}.{fmt}"
            # No date in the files: the same run gives the same bytes.
            metadata = {"Date": None} if fmt == "svg" else {}
            fig.savefig(path, format=fmt, dpi=dpi, metadata=metadata)
            written.append(path)
    return written
