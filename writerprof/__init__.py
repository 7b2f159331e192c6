"""writerprof: profile and diagnose the writer subprocesses of checkpoint benchmarks."""

__version__ = "0.1.0"
