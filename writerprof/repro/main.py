"""The reproducer's main module: the stand-in for a benchmark's entry script.

`writerprof repro` runs this file as `__main__`, so that multiprocessing's
spawn and forkserver children re-run it as `__mp_main__` before their target,
exactly as they re-run a benchmark's script. Its module level imports what
--main-imports names (real modules, in the parent and in every such re-run):
a heavy entry script, modelled without sleeps. Everything else is imported
only under `__main__`, so that the re-run costs only what was asked for.
"""

import importlib
import os

from writerprof.repro.config import MAIN_IMPORTS_ENV

for _name in filter(None, os.environ.get(MAIN_IMPORTS_ENV, "").split(",")):
    importlib.import_module(_name)

if __name__ == "__main__":
    from writerprof.repro.pipeline import run

    # REPRO_CONFIG, and under MPI REPRO_RANKS, are put in this module's globals
    # by `writerprof repro`. Under MPI only this branch, in the rank, ever
    # touches MPI: a writer child that re-runs this file is `__mp_main__`.
    REPRO_EXIT = run(REPRO_CONFIG, globals().get("REPRO_RANKS"))  # noqa: F821
