"""Apply hooks when their module is imported, or at once if it already is:
so a hook works whether the target imported its module before or after the
probe came up."""

import sys

_pending = {}  # module name -> [apply(module)]
_finder = None


def when_imported(name, apply):
    module = sys.modules.get(name)
    if module is not None:
        _run(apply, module)
        return
    _pending.setdefault(name, []).append(apply)
    _install()


def _run(apply, module):
    """A hook's failure is never the target's: each apply journals its own
    outcome, and anything it lets through stops here, not in an import."""
    try:
        apply(module)
    except Exception:
        pass


def _install():
    global _finder
    if _finder is None:
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)


class _Finder:
    """Finds nothing itself: lets the other finders find a hooked module and
    wraps its loader so that the hooks run right after the module executes,
    before any `from module import name` can copy an unwrapped name."""

    def find_spec(self, name, path=None, target=None):
        if name not in _pending:
            return None
        spec = others_spec(self, name, path, target)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader, name)
        return spec


def others_spec(finder, name, path, target):
    """The spec that the finders on sys.meta_path other than finder give
    name (None: none does): for a finder that only wraps a module's loader."""
    for other in sys.meta_path:
        if other is finder or not hasattr(other, "find_spec"):
            continue
        spec = other.find_spec(name, path, target)
        if spec is not None:
            return spec
    return None


class _Loader:
    def __init__(self, loader, name):
        self._loader, self._name = loader, name

    def __getattr__(self, attr):  # resource readers, get_source, is_package ...
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        for apply in _pending.pop(self._name, ()):
            _run(apply, module)
