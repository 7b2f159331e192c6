"""The analysis: pure functions from a loaded run to findings (processes,
saves, their decomposition, diagnoses, groups per host and role and per save
index, and the plots' data: affinity, buffer placement, chunk timeline) and
from findings to comparisons. summary.summarize(run) gathers them; the
renderers take that summary (or a comparison) and never a run, and only
format it."""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def collector_paused():
    """Loading and summarising a large run makes millions of small dicts and
    tuples, none of them in cycles; Python's cyclic collector would walk them
    over and over (about 40% of the time of a report on 1M chunks). Paused
    for the block, and set back as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
