"""writerprof's probe bootstrap. `writerprof record` puts this directory first
on PYTHONPATH, so every Python process of the recorded command runs this at
start-up. It does nothing unless WRITERPROF_RUN is set (then it brings the
probe up, and puts the directory last on sys.path), and always runs the
sitecustomize it shadows."""

import os
import sys
import time


_PACKAGE = "writerprof_probe"
_HERE = os.path.dirname(os.path.abspath(__file__))


def _install_bytecode():
    """A finder of the probe's own modules (the package beside this file)
    that loads each straight from its bytecode, where that is current as
    the import system judges it (its magic number, its source's mtime and
    size): the import system's own search and checks cost ~30 us of each of
    the ~15 modules a probed process loads. Bytecode missing or stale, or
    any other module: None, and the import system does as always (and
    writes the bytecode). Made here, not at import: an inert process pays
    nothing for it."""
    try:
        import marshal
        from _frozen_importlib import ModuleSpec
        from _frozen_importlib_external import MAGIC_NUMBER, SourceFileLoader, cache_from_source
    except ImportError:  # not CPython
        return
    if sys.implementation.cache_tag is None or getattr(sys, "pycache_prefix", None) is not None:
        return  # bytecode elsewhere, or none: the import system knows
    package = os.path.join(_HERE, _PACKAGE)
    # Bound now, and no os.path.join: a call the probe hooks later (a --probe
    # spec on posixpath:join) must not count the probe's own imports.
    stat, read = os.stat, open

    class Loader(SourceFileLoader):  # the import system's, for bytecode already read and checked
        def exec_module(self, module):
            exec(marshal.loads(memoryview(self.bytecode)[16:]), module.__dict__)

    class Finder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name != _PACKAGE and not name.startswith(_PACKAGE + "."):
                return None
            leaf = name[len(_PACKAGE) + 1:] or "__init__"
            source = "%s/%s.py" % (package, leaf)
            cached = cache_from_source(source)  # (the import system's own, as bytecode.py names it too)
            try:
                status = stat(source)
                with read(cached, "rb") as f:
                    data = f.read()
            except OSError:
                return None
            if (data[:4] != MAGIC_NUMBER or int.from_bytes(data[4:8], "little")  # (flags: a hash-based one)
                    or int.from_bytes(data[8:12], "little") != int(status.st_mtime) & 0xFFFFFFFF
                    or int.from_bytes(data[12:16], "little") != status.st_size & 0xFFFFFFFF):
                return None
            loader = Loader(name, source)
            loader.bytecode = data
            spec = ModuleSpec(name, loader, origin=source, is_package=leaf == "__init__")
            spec.cached, spec.has_location = cached, True
            if leaf == "__init__":
                spec.submodule_search_locations = [package]
            return spec

    sys.meta_path.insert(0, Finder)


def _activate():
    started_ns = time.monotonic_ns()
    try:
        _install_bytecode()
        from writerprof_probe import activate

        if sys.dont_write_bytecode:  # so that the next process need not compile the probe
            from writerprof_probe import bytecode

            bytecode.ensure()  # before any hook: a --probe spec may time what it calls
        activate(started_ns)
    except Exception as exc:  # the target runs on, unprobed
        sys.stderr.write("writerprof: probe off in pid %d: %s: %s\n"
                         % (os.getpid(), type(exc).__name__, exc))


def _ours(entry):
    """Whether a sys.path entry is this file's directory."""
    return os.path.abspath(entry or os.curdir) == _HERE


def _last_on_path():
    """This directory moved to the end of sys.path once the probe is loaded:
    first, it was searched in vain for every top-level module the target
    imports (a stat and the import system's Python each: 1.6M instructions
    of `import multiprocessing`, 5.1M of numpy's and matplotlib's). Kept,
    not removed: a child given a PYTHONPATH made of sys.path still finds
    the probe."""
    try:
        ours = [p for p in sys.path if _ours(p)]
        sys.path[:] = [p for p in sys.path if p not in ours] + ours
    except Exception:  # an entry that is no path: sys.path left as it was
        pass


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

    path = [p for p in sys.path if not _ours(p)]
    spec = PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get("WRITERPROF_RUN"):
    _activate()
    _last_on_path()
_chain()
