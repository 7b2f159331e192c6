"""The chunk timeline (summary["chunk_timeline"])."""

from __future__ import annotations

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from writerprof.analysis.saves import COMPONENTS, STARTUP_PHASES
from writerprof.analysis.timeline import PRODUCER_PHASES, WRITER_PHASES
from writerprof.render.format import rank_label
from writerprof.render.plots.style import (ALIASES, COLOURS, MIN_VISIBLE_SHARE, Uncrowded, colour, empty, figure,
                                           name, title)

# At most this many "save N" labels are offered; of those, the ones that fit are drawn (Uncrowded).
MAX_SAVE_LABELS = 200


def chunk_timeline(summary: dict) -> Figure:
    """Per producer/writer pair, on one time axis: the producer's setup, gen
    and put-wait; the writer's start-up phases, then get-wait, write, fadvise,
    fsync and close. Many producers: the slowest, the median and the fastest
    by mean save time, as the title says."""
    found = summary.get("chunk_timeline")
    if not summary["saves"] or not found or not found["pairs"]:
        return empty("Chunk timeline", "no saves in this run")
    multi_host = len(summary["run"]["hosts"]) > 1
    lanes = []  # (label, {colour key: [(x, width)]})
    save_marks = []  # (lane, t, text)
    for pair in found["pairs"]:
        proc = summary["processes"][pair["producer"]]
        save_marks += [(len(lanes), t, f"save {save}") for t, save in pair["saves"]]
        who = _who(proc)
        where = f" ({proc['host']})" if multi_host else ""
        # A producer whose fill no hook sees has no gen bars: its row says so rather than look idle.
        unhooked = "" if "gen" in pair["producer_spans"] else "\ngen not hooked"
        lanes.append((f"producer {who}{where}{unhooked}", pair["producer_spans"]))
        lanes.append((f"writers of {who}{where}", pair["writer_spans"]))
    n = len(lanes)
    fig = figure(12, 1.5 + 0.55 * n)
    ax = fig.add_subplot()
    # The legend names the phases one can see: all their spans in a lane together a pixel or two wide.
    every = [x for _, bars in lanes for spans in bars.values() for x in spans]
    least = MIN_VISIBLE_SHARE * (max(a + w for a, w in every) - min(a for a, _ in every)) if every else 0.0
    used = set()
    for i, (_, bars) in enumerate(lanes):
        y = n - 1 - i
        for key in ["setup", *STARTUP_PHASES, *PRODUCER_PHASES, *WRITER_PHASES]:
            spans = bars.get(key)
            if spans:
                ax.broken_barh(spans, (y - 0.38, 0.76), facecolors=colour(key), edgecolor="none")
                if sum(w for _, w in spans) >= least:
                    used.add(ALIASES.get(key, key))
    step = max(1, -(-len(save_marks) // MAX_SAVE_LABELS))  # a long run's every step-th: each is measured
    Uncrowded(ax, [(t, n - 1 - lane + 0.42, text) for lane, t, text in save_marks[::step]], fontsize=7,
              va="bottom", color="#333333")
    ax.set_yticks([n - 1 - i for i in range(n)], [label for label, _ in lanes], fontsize=8)
    ax.set_ylim(-0.6, n - 0.1 + 0.35)
    ax.set_xlabel("seconds since the recording started")
    ax.grid(axis="x", color="#eeeeee", lw=0.5)
    ax.set_axisbelow(True)
    head = ("Chunk timeline: " + _picked(summary, found)) if found["picked"] else (
        f"Chunk timeline ({len(summary['saves'])} saves): producer and writer of each save")
    title(ax, head + "; start-up phases before the writer's first chunk")
    order = [k for k in ["setup", *COMPONENTS, "put-wait", "get-wait"] if k in used]
    order = [k for k in COLOURS if k in order]
    ax.legend(handles=[Patch(facecolor=COLOURS[k], label=name(k)) for k in order], fontsize=7,
              loc="upper left", bbox_to_anchor=(1.0, 1.0), framealpha=0.9)
    return fig


def _who(proc: dict) -> str:
    return rank_label(proc["rank"]) or f"pid {proc['pid']}"


def _picked(summary: dict, found: dict) -> str:
    said = [f"{p['what']} {_who(summary['processes'][p['producer']])} ({p['mean_save_s']:.2f} s)"
            for p in found["picked"]]
    return f"{len(found['picked'])} of {found['producers']} producers by mean save time: " + ", ".join(said)
