"""Tables as terminal text: each column as wide as its widest cell (its
header's included), labels left-aligned and numbers right-aligned, fitted to
a width without ever misaligning a row: the columns that matter least are
dropped first, then the cells of the columns that may wrap are wrapped onto
more lines. Below the table, the key of each column shown."""

from __future__ import annotations

import os
import sys
import textwrap
from dataclasses import dataclass

WIDTH = 100  # the widest a report is, on a wider terminal or none
NARROWEST = 60  # on a narrower terminal, wrapping would leave fragments: this wide, the terminal folds it
GAP = 2  # spaces between columns
MIN_WRAPPED = 12  # a wrapped column keeps this many characters a line


@dataclass(frozen=True)
class Column:
    header: str
    left: bool = False  # a label (left-aligned); else a number (right-aligned)
    drop: int = 0  # dropped to fit the width, the highest first; 0: always shown
    wrap: bool = False  # its cells may wrap onto more lines to fit the width
    key: str = ""  # what the column is, said below the table while it is shown


def table(columns: list[Column], rows: list[list[str]], width: int = WIDTH, indent: str = "  ",
          gap: int = GAP) -> list[str]:
    """The header, the rows and the key of the columns shown, each line at
    most `width` long where dropping and wrapping can make it so; `gap`
    spaces between columns."""
    shown = list(range(len(columns)))
    widths = [max(len(r[i]) for r in [[c.header for c in columns], *rows]) for i in shown]

    def length(kept: list[int], w: list[int]) -> int:
        return len(indent) + sum(w[i] for i in kept) + gap * (len(kept) - 1)

    for i in sorted((i for i in shown if columns[i].drop), key=lambda i: -columns[i].drop):
        if length(shown, widths) <= width:
            break
        shown.remove(i)
    wrapping = [i for i in shown if columns[i].wrap]
    while length(shown, widths) > width and wrapping:
        widest = max(wrapping, key=lambda i: widths[i])
        if widths[widest] <= MIN_WRAPPED:
            break
        widths[widest] -= 1
    lines = []
    for row in [[c.header for c in columns], *rows]:
        cells = {i: _lines(row[i], widths[i]) if columns[i].wrap else [row[i]] for i in shown}
        for n in range(max(len(c) for c in cells.values())):
            lines.append(indent + (" " * gap).join(
                _align(cells[i][n] if n < len(cells[i]) else "", widths[i], columns[i].left) for i in shown).rstrip())
    keys = "; ".join(columns[i].key for i in shown if columns[i].key)
    if keys:
        lines += textwrap.wrap(keys, width, initial_indent=indent, subsequent_indent=indent + "  ",
                               break_on_hyphens=False)
    return lines


def _lines(text: str, width: int) -> list[str]:
    """A cell wrapped to its column: at spaces, a word longer than the column cut (it must not overflow)."""
    return textwrap.wrap(text, width, break_on_hyphens=False) or [""]


def _align(text: str, width: int, left: bool) -> str:
    return text.ljust(width) if left else text.rjust(width)


def terminal_width() -> int:
    """The width to print to stdout: the terminal's where it is narrower than
    WIDTH (no narrower than NARROWEST), else WIDTH (a file, a pipe)."""
    try:
        if not sys.stdout.isatty():
            return WIDTH
        columns = os.get_terminal_size(sys.stdout.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return WIDTH
    return max(NARROWEST, min(WIDTH, columns))
