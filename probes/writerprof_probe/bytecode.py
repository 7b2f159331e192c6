"""The probe's own bytecode, under PYTHONDONTWRITEBYTECODE.

With that flag set (as some sites and containers do) and no bytecode
installed (an editable install, or an interpreter other than the one pip
compiled for), every probed process would compile the probe from source:
~6 ms of its start-up, ~10 ms more once it imports multiprocessing. So the
first probed process that finds the probe's bytecode missing or older than
its sources writes it, as pip does at install; later ones only load it. Only
the probe's own files, where the import system itself would look for them;
the flag still holds for everything else. Nothing here may fail the target.
"""

import os
import sys

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_BOOTSTRAP = os.path.join(os.path.dirname(_PACKAGE), "sitecustomize.py")


def cached(source):
    """Where this interpreter looks for `source`'s bytecode: importlib's
    cache_from_source, from the import system itself (importlib.util's
    imports cost ~1-2 ms of a start-up)."""
    from _frozen_importlib_external import cache_from_source

    return cache_from_source(source)


def _stale(source):
    try:
        return os.stat(cached(source)).st_mtime < os.stat(source).st_mtime
    except OSError:
        return True


def sources():
    return [_BOOTSTRAP] + sorted(os.path.join(_PACKAGE, name) for name in os.listdir(_PACKAGE)
                                 if name.endswith(".py"))


def ensure():
    """Write the probe's missing or stale bytecode, if the interpreter would
    not and the directory takes it."""
    try:
        if (not sys.dont_write_bytecode or getattr(sys, "pycache_prefix", None) is not None
                or sys.implementation.cache_tag is None):
            return  # the import system writes it, or looks for it elsewhere
        stale = [source for source in sources() if _stale(source)]
        if not stale or not all(os.access(os.path.dirname(s), os.W_OK) for s in stale):
            return
        import py_compile  # once per interpreter version and probe version

        for source in stale:
            py_compile.compile(source, cfile=cached(source), doraise=True, quiet=2)
    except Exception:  # read-only, full, racing: the next process tries again
        pass
