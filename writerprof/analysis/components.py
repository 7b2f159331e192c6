"""The names a save's start-up and critical path are told in: one
definition for the saves, their critical paths and every view of them."""

# Start-up phases, in order: Process.start() until the child exists; the
# child's own start until the parent's __main__ is re-run (interpreter start
# under spawn, after-fork handlers otherwise); the re-run; unpickling the
# Process (imports the target's module); multiprocessing's bootstrap; the
# target's code until its first wait for a chunk; that wait, until it took the
# chunk (the start-up ends at its first unit of work: analysis.firstwork).
STARTUP_PHASES = ("start", "interpreter", "main_rerun", "unpickle", "bootstrap", "target_setup",
                  "first_chunk")
# Critical-path components. "unexplained" is not one: it is what is left.
COMPONENTS = ("setup",) + tuple(f"startup:{p}" for p in STARTUP_PHASES[:-1]) + (
    "generation", "queue", "write", "fadvise", "fsync", "close", "teardown")
UNEXPLAINED = len(COMPONENTS)
CODE = {name: i for i, name in enumerate(COMPONENTS)}
# The writer's hooked calls and the component a save waits on while in them.
_WRITER_PHASES = {"get": "queue", "write": "write", "fadvise": "fadvise", "fsync": "fsync",
                  "close": "close"}


def loop_components(codes) -> dict[int, int]:
    """Phase code of a writer's loop call -> the component a save waits on in it."""
    return {codes[p]: CODE[c] for p, c in _WRITER_PHASES.items() if p in codes}
