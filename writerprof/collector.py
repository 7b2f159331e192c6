"""The cyclic garbage collector paused while a run is loaded and analysed,
and a run's objects left unfreed by a process that leaves without its
teardown (cli.entry)."""

from __future__ import annotations

import gc
from contextlib import contextmanager

_kept: list | None = None  # a list only in a process that leaves by os._exit (cli.entry)


@contextmanager
def collector_paused():
    """Loading and summarising a large run makes millions of small dicts and
    tuples, none of them in cycles; Python's cyclic collector would walk them
    over and over (a third of the JSON parsing of a 1M-chunk run's load,
    about 40% of its report). Paused for the block, and set back as it was.
    What the block made is moved to the oldest generation on the way out
    (freeze, then unfreeze: no walk), not left in the youngest, whose first
    collection after would walk it all (0.45 s after a 1M-chunk run's
    report, for nothing)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def keep_until_exit(*objects) -> None:
    """Keep objects (a loaded run, its summary) alive to the end of a
    process that leaves by os._exit (cli.entry), where freeing them one by
    one (0.4 s of a 1M-chunk run's report) is work for nothing; elsewhere (a
    notebook, a test calling cli.main) nothing is kept."""
    if _kept is not None:
        _kept.extend(objects)


def leaving_without_teardown() -> None:
    """Said by cli.entry, before the command runs, where the process will leave by os._exit."""
    global _kept
    _kept = []
