"""writerprof's probe bootstrap. `writerprof record` puts this directory first
on PYTHONPATH, so every Python process of the recorded command runs this at
start-up. It does nothing unless WRITERPROF_RUN is set, and always runs the
sitecustomize it shadows."""

import os
import sys
import time


def _activate():
    started_ns = time.monotonic_ns()
    try:
        from writerprof_probe import activate

        if sys.dont_write_bytecode:  # so that the next process need not compile the probe
            from writerprof_probe import bytecode

            bytecode.ensure()  # before any hook: a --probe spec may time what it calls
        activate(started_ns)
    except Exception as exc:  # the target runs on, unprobed
        sys.stderr.write("writerprof: probe off in pid %d: %s: %s\n"
                         % (os.getpid(), type(exc).__name__, exc))


def _chain():
    """Run the next sitecustomize on sys.path, as if ours were not there."""
    try:
        # What importlib.machinery and importlib.util export, without their
        # imports (contextlib, warnings ...): ~1-2 ms of every start-up.
        from _frozen_importlib import module_from_spec
        from _frozen_importlib_external import PathFinder
    except ImportError:  # not CPython
        from importlib.machinery import PathFinder
        from importlib.util import module_from_spec

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get("WRITERPROF_RUN"):
    _activate()
_chain()
