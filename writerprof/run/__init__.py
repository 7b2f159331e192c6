"""The run directory: its layout, its writer (directory) and its loader."""

from writerprof.run.load import Run, RunDirectoryError, load

__all__ = ["Run", "RunDirectoryError", "load"]
