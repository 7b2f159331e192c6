"""The cyclic garbage collector paused while a run is loaded and analysed."""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def collector_paused():
    """Loading and summarising a large run makes millions of small dicts and
    tuples, none of them in cycles; Python's cyclic collector would walk them
    over and over (a third of the JSON parsing of a 1M-chunk run's load,
    about 40% of its report). Paused for the block, and set back as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
