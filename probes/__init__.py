"""In-process probes (standard library only, Python 3.9-3.13).

Filled by the recording issue: this code runs inside the profiled processes,
never imports writerprof, and is not installed as a top-level package.
"""
