"""The plots of saves over one or many runs: each save's critical path
(save_decomposition) and a comparison's waterfall (compare_waterfall)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from writerprof.analysis.ending import complete
from writerprof.analysis.saves import COMPONENTS
from writerprof.render.plots.style import COLOURS, MIN_VISIBLE_SHARE, SIDE_COLOUR, empty, figure, name, title

MAX_SAVE_BARS = 12  # save decomposition: one bar per save, per side, up to this many
MAX_INDEX_BARS = 30  # ... and at most this many save-index bars (consecutive indices pooled beyond)
# The waterfall lumps components whose difference is below this share of the total difference.
WATERFALL_MIN_SHARE = 0.01
WATERFALL_MIN_S = 0.0005


def _bars_of(summaries: list[dict], max_bars: int) -> tuple[list[str], list[dict], str]:
    """The bars of one side: labels, {component: seconds} with 'unexplained', and how they were made."""
    saves = [(i, s) for i, summary in enumerate(summaries) for s in complete(summary["saves"])]
    producers = {(i, s["producer"]) for i, s in saves}

    def parts(group):
        out = {c: float(np.mean([s["critical_path"][c] for _, s in group])) for c in COMPONENTS}
        out["unexplained"] = float(np.mean([s["unexplained_s"] for _, s in group]))
        return out

    if len(saves) <= max_bars:
        labels = []
        for i, s in saves:
            label = f"{s['save']}"
            if len(summaries) > 1:
                label = f"#{i + 1}.{label}"
            if len(producers) > len(summaries) and s["rank"] >= 0:
                label = f"r{s['rank']}.{label}"
            labels.append(label)
        return labels, [parts([x]) for x in saves], "one bar per save (run#.save)" if len(summaries) > 1 else \
            "one bar per save"
    by_index: dict = defaultdict(list)
    for x in saves:
        by_index[x[1]["save"]].append(x)
    indices = sorted(by_index)
    step = -(-len(indices) // MAX_INDEX_BARS)
    labels, values = [], []
    for k in range(0, len(indices), step):
        chunk = indices[k:k + step]
        group = [x for i in chunk for x in by_index[i]]
        labels.append(f"{chunk[0]}" if len(chunk) == 1 else f"{chunk[0]}-{chunk[-1]}")
        values.append(parts(group))
    how = f"mean per save index over {len(producers)} producers" + (f" and {len(summaries)} runs"
                                                                      if len(summaries) > 1 else "")
    return labels, values, how


def save_decomposition(sides: dict[str, list[dict]], max_bars: int = MAX_SAVE_BARS) -> Figure:
    """Stacked bars of the critical-path components of each save (and the
    unexplained remainder) for each labelled side; more than max_bars saves
    on a side: the mean per save index."""
    heading = "Where each save's time goes (critical path)"
    made = {label: _bars_of(summaries, max_bars) for label, summaries in sides.items()}
    made = {label: m for label, m in made.items() if m[0]}
    if not made:
        return empty(heading, "no saves")
    keys, legend = visible_parts([v for m in made.values() for v in m[1]])
    widths = [max(3, len(m[0])) for m in made.values()]
    width = max(8.0, 1.5 + 0.5 * sum(widths))
    fig = figure(width, 5.4)
    axes = fig.subplots(1, len(made), sharey=True, squeeze=False, width_ratios=widths)[0]
    hows = set()
    for ax, (label, (labels, values, how)) in zip(axes, made.items()):
        x = np.arange(len(labels))
        bottom = np.zeros(len(labels))
        for key in keys:
            heights = np.array([v[key] for v in values])
            if heights.any():
                ax.bar(x, heights, bottom=bottom, color=COLOURS[key], width=0.75, label=legend[key], gid=key)
            bottom += heights
        for xi, total in zip(x, bottom):
            ax.text(xi, total, f"{total:.2f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(x, labels, fontsize=8)
        mean = float(np.mean([s["duration_s"] for summary in sides[label] for s in complete(summary["saves"])]))
        ax.set_title(f"{label}\nmean save {mean:.3f} s", fontsize=9)
        hows.add(how)
        ax.set_xlabel("save")
        ax.margins(y=0.12)
    axes[0].set_ylabel("seconds")
    fig.suptitle(f"{heading}: {'; '.join(sorted(hows))}", fontsize=10)
    fig.legend(handles=[Patch(facecolor=COLOURS[k], label=legend[k]) for k in keys], loc="outside lower center",
               fontsize=8, ncols=max(1, min(len(keys), int(width / 2.0))))
    return fig


def visible_parts(bars: list[dict]) -> tuple[list[str], dict[str, str]]:
    """The parts to draw, in stacking order, and their legend labels: each
    part a pixel or two high somewhere (MIN_VISIBLE_SHARE of the tallest
    bar), then "other" for the rest that are not zero, each bar's "other"
    their sum (added to the bars here). Parts zero in every bar are left out."""
    tallest = max((sum(v.values()) for v in bars), default=0.0)
    parts = [c for c in (*COMPONENTS, "unexplained") if any(v[c] > 0 for v in bars)]
    thin = [c for c in parts if max(v[c] for v in bars) < MIN_VISIBLE_SHARE * tallest]
    for v in bars:
        v["other"] = sum(v[c] for c in thin)
    keys = [c for c in parts if c not in thin] + (["other"] if thin else [])
    labels = {k: name(k) for k in keys}
    if thin:
        labels["other"] = f"other ({', '.join(name(c) for c in thin)}: each too thin to see)" if len(thin) <= 2 \
            else f"other ({len(thin)} parts, each too thin to see)"
    return keys, labels


# --- comparison waterfall ----------------------------------------------------------------------

def _side_name(side: dict, default: str) -> str:
    return side.get("name") or "/".join(side.get("start_methods") or []) or default


def compare_waterfall(comparison: dict) -> Figure:
    """From A's mean save time to B's through each component's difference
    (largest first; the near-zero ones pooled as 'other'), then the
    unexplained; every step labelled in seconds. It closes: the last bar is
    B's mean save time."""
    a, b = comparison["a"], comparison["b"]
    name_a, name_b = _side_name(a, "A"), _side_name(b, "B")
    difference = comparison["difference_s"]
    cutoff = max(WATERFALL_MIN_S, WATERFALL_MIN_SHARE * abs(difference))
    shown = sorted((c for c in comparison["components"] if abs(c["diff_s"]) >= cutoff),
                   key=lambda c: -abs(c["diff_s"]))
    rest = [c for c in comparison["components"] if abs(c["diff_s"]) < cutoff]
    steps = [(c["name"], c.get("label") or name(c["name"]), c["diff_s"], COLOURS.get(c["name"], "#999999"))
             for c in shown]
    if rest:
        steps.append(("other", f"other ({len(rest)} components < {cutoff * 1000:.1f} ms)",
                      sum(c["diff_s"] for c in rest), COLOURS["other"]))
    steps.append(("unexplained", "unexplained", comparison["unexplained_s"], COLOURS["unexplained"]))
    fig = figure(max(7.0, 2.5 + 1.0 * (len(steps) + 2)), 4.8)
    ax = fig.add_subplot()
    labels = [f"{name_a}\nmean save"]
    ax.bar(0, a["mean_save_s"], color=SIDE_COLOUR, edgecolor="#333333", lw=0.8, width=0.7, gid="start")
    ax.text(0, a["mean_save_s"], f"{a['mean_save_s']:.3f} s", ha="center", va="bottom", fontsize=8)
    level = a["mean_save_s"]
    span = max(a["mean_save_s"], b["mean_save_s"]) or 1
    for i, (key, label, diff, fill) in enumerate(steps, start=1):
        ax.bar(i, abs(diff) or span * 1e-4, bottom=min(level, level + diff), color=fill, width=0.7, gid=key,
               edgecolor="#333333" if key == "unexplained" else "none", lw=0.5)
        ax.plot([i - 1.35, i + 0.35], [level, level], color="#555555", lw=0.6, ls=":")
        ax.text(i, max(level, level + diff) + span * 0.01, f"{diff:+.3f} s", ha="center", va="bottom", fontsize=8)
        level += diff
        labels.append(_wrap(label, 14))
    end = len(steps) + 1
    ax.plot([end - 1.35, end + 0.35], [level, level], color="#555555", lw=0.6, ls=":", gid="closing")
    ax.bar(end, b["mean_save_s"], color=SIDE_COLOUR, edgecolor="#333333", lw=0.8, width=0.7, gid="end")
    ax.text(end, b["mean_save_s"], f"{b['mean_save_s']:.3f} s", ha="center", va="bottom", fontsize=8)
    labels.append(f"{name_b}\nmean save")
    ax.set_xticks(range(end + 1), labels, fontsize=8)
    ax.set_ylabel("seconds per save (mean)")
    ax.set_ylim(0, span * 1.18)
    change = comparison["throughput"].get("change")
    rate = f", {change:+.0%} throughput" if change is not None else ""
    title(ax, f"{name_a} → {name_b}: {difference:+.3f} s per save{rate}; "
               f"each bar a component's difference (B − A)")
    ax.axhline(0, color="#333333", lw=0.6)
    return fig


def _wrap(text: str, width: int) -> str:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "\n".join(lines + [line])


