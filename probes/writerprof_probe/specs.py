"""Hook specs, `module:qualname=phase`: which callables are timed as which
phase. Built-in ones cover the reproducer, the benchmark's streaming
checkpoint and its storage writers (mlpstorage_py, and mlpstorage before it)
and dgen-py; `writerprof record --probe` adds more. What needs no name (a
multiprocessing queue's put and get, os writes and fsync) is hooked
generically (queues.py, osio.py)."""

from . import calls, imports
from .format import FIRST_ADDED_PHASE, PHASES

# The benchmark's checkpoint code, under its package's current name and the
# older one: the streaming checkpoint's two sides, and each storage writer's
# write_chunk and close (module, class). Its queue's put and get need no
# spec (queues.py); a close's fsync is timed as fsync inside it (osio.py).
BENCHMARK_PACKAGES = ("mlpstorage_py", "mlpstorage")
STORAGE_WRITERS = (
    ("file_writer", "FileStorageWriter"),
    ("s3dlio_writer", "S3DLIOStorageWriter"),
    ("minio_writer", "MinIOStorageWriter"),
    ("s3torch_writer", "S3TorchConnectorWriter"),
)


def _benchmark(package):
    checkpointing = package + ".checkpointing"
    streaming = checkpointing + ".streaming_checkpoint:StreamingCheckpointing."
    specs = [streaming + "_writer_process=writer", streaming + "_run_producer=producer"]
    for module, cls in STORAGE_WRITERS:
        where = "%s.storage_writers.%s:%s." % (checkpointing, module, cls)
        specs += [where + "write_chunk=write", where + "close=close"]
    return tuple(specs)


BUILT_IN = (
    # writerprof's reproducer
    "writerprof.repro.generators:FastGenerator.fill=gen",
    "writerprof.repro.generators:RandomGenerator.fill=gen",
    "writerprof.repro.generators:DgenGenerator.fill=gen",
    "writerprof.repro.save:_Save._put=put",
    "writerprof.repro.save:run_save=save",
    "writerprof.repro.writer:next_chunk=get",
    "writerprof.repro.writer:run_writer=writer",
) + tuple(spec for package in BENCHMARK_PACKAGES for spec in _benchmark(package)) + (
    # dgen-py's Generator is an extension type: its objects are wrapped
    "dgen_py:Generator.fill_chunk=gen",
)


class SpecError(ValueError):
    pass


def parse(spec):
    """'module:qualname=phase' -> (module, qualname, phase)."""
    target, sep, phase = spec.partition("=")
    module, colon, qualname = target.partition(":")
    if not (sep and colon and module and qualname and phase.strip()):
        raise SpecError("%r is not MODULE:QUALNAME=PHASE" % spec)
    if not all(part.isidentifier() for part in module.split(".") + qualname.split(".")):
        raise SpecError("%r: module and qualname must be dotted names" % spec)
    if not phase.replace("_", "").replace("-", "").isalnum():
        raise SpecError("%r: the phase must be a word" % spec)
    return module, qualname, phase


class Phases:
    """Phase name -> code; codes of added phases are journaled."""

    def __init__(self, journal):
        self.codes = dict(PHASES)
        self.journal = journal

    def code(self, name):
        code = self.codes.get(name)
        if code is None:
            code = self.codes[name] = FIRST_ADDED_PHASE + len(self.codes) - len(PHASES)
            self.journal.event("phase", code=code, name=name)
        return code


def register(spec, phases, journal_hook):
    module_name, qualname, phase = parse(spec)
    if module_name in ("__main__", "__mp_main__"):  # defined after the probe starts: observed (entry.py)
        from . import entry

        entry.watch(spec, qualname, phases.code(phase), phases.journal, journal_hook)
        return

    def apply(module):
        try:
            status, reason = _apply(module, qualname, spec, phases.code(phase))
        except Exception as exc:  # never the target's problem
            status, reason = "failed", "%s: %s" % (type(exc).__name__, exc)
        journal_hook(spec, status, reason)

    imports.when_imported(module_name, apply)


def _apply(module, qualname, spec, code):
    *path, name = qualname.split(".")
    owner = module
    for part in path:
        owner = getattr(owner, part, None)
        if owner is None:
            return "unavailable", "%s has no %s" % (module.__name__, ".".join(path))
    if isinstance(owner, type):
        raw = owner.__dict__.get(name)
        for klass in owner.__mro__ if raw is None else ():
            raw = klass.__dict__.get(name)
            if raw is not None:
                break
        if raw is None:
            return "unavailable", "%s has no attribute %s" % (owner.__qualname__, name)
        hook = calls.Hook(spec, code, calls.describe_args)
        if isinstance(raw, staticmethod):
            wrapped = staticmethod(calls.timed(raw.__func__, hook))
        elif isinstance(raw, classmethod):
            wrapped = classmethod(calls.timed(raw.__func__, hook))
        else:
            wrapped = calls.timed(raw, hook)
        try:
            setattr(owner, name, wrapped)
        except TypeError:  # an extension type: wrap each object instead
            if len(path) != 1:
                return "unavailable", "cannot wrap a nested extension type"
            setattr(module, path[0], _object_wrapper(owner, name, hook))
            return "applied", "objects of an extension type are wrapped"
        return "applied", None
    target = getattr(owner, name, None)
    if not callable(target):
        return "unavailable", "%s has no callable %s" % (module.__name__, qualname)
    setattr(owner, name, calls.timed(target, calls.Hook(spec, code, calls.describe_args)))
    return "applied", None


def _object_wrapper(cls, method, hook):
    """A stand-in for `cls` whose objects delegate to a real one, with
    `method` timed (an extension type's methods cannot be replaced)."""

    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "_writerprof_wrapped", cls(*args, **kwargs))

    def __getattr__(self, attr):
        return getattr(object.__getattribute__(self, "_writerprof_wrapped"), attr)

    def __setattr__(self, attr, value):
        setattr(object.__getattribute__(self, "_writerprof_wrapped"), attr, value)

    def timed_method(self, *args, **kwargs):
        return getattr(self._writerprof_wrapped, method)(*args, **kwargs)

    timed_method.__name__ = timed_method.__qualname__ = method
    namespace = {
        "__init__": __init__, "__getattr__": __getattr__, "__setattr__": __setattr__,
        "__doc__": cls.__doc__, "__module__": cls.__module__, "__slots__": ("_writerprof_wrapped",),
        method: calls.timed(timed_method, hook),
    }
    return type(cls.__name__, (), namespace)
