"""The run directory: its layout, its writer (directory) and its loader.

The loader (writerprof.run.loader: Run, load) imports numpy (~0.1 CPU s):
it is imported when first asked for, so that what only writes a run
(record before CMD starts, a host's sampler agent) goes without it."""

from writerprof.run.meta import RunDirectoryError

__all__ = ["Run", "RunDirectoryError", "load"]


def __getattr__(name: str):
    if name in ("Run", "load"):
        from writerprof.run import loader

        return getattr(loader, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
