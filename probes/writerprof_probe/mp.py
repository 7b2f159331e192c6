"""multiprocessing, from both sides. In the parent: each Process.start()
(method, target, child pid, call start and end, the seconds and bytes it
pickled: pickling.py). In the child: the re-run of the parent's __main__
(spawn and forkserver), the unpickling that imports the target's module, the
target's first and last line. In a forkserver daemon that preloads __main__
(CPython 3.13.8 and 3.14.1 on), that preload, as its re-run. In both, the put
and get of its queues and pipes, whatever the target's names (queues.py), and
the count of what they pickled (pickling.py). In every process, its
resource tracker's registrations and the unlinks (tracker.py). And the
what-if switches:
WRITERPROF_FORCE_START_METHOD=METHOD starts every writer with METHOD;
WRITERPROF_MITIGATE=pin,preload applies those mitigations (mitigate.py): pin,
the writer takes its starting thread's affinity; preload, the forkserver
starts with the advised preload list; guard, the children's re-run of
__main__ defers the advised modules' imports to their first use."""

import sys
import time

from . import calls, imports, lifecycle, pickling, queues, stacks, tasks, tracker

_now = time.monotonic_ns
_POPEN_METHODS = {
    "multiprocessing.popen_fork": "fork",
    "multiprocessing.popen_forkserver": "forkserver",
    "multiprocessing.popen_spawn_posix": "spawn",
}

journal = None
_hook_status = None
_prepare_end = [None]  # when spawn.prepare() finished in this child
mitigate = None  # mitigate.py, imported only where a mitigation is asked for (~0.15 ms of a start-up)


def install(journal_, hook_status, forced, mitigations=""):
    global journal, _hook_status, mitigate
    journal, _hook_status = journal_, hook_status
    lifecycle.on_fork_in_child(reset_after_fork)
    if mitigations.strip():
        from . import mitigate

        mitigate.install(journal_, hook_status, mitigations)  # before the hooks that consult it
    imports.when_imported("multiprocessing.process", _guard("multiprocessing.process", _process))
    imports.when_imported("multiprocessing.spawn", _guard("multiprocessing.spawn", _spawn))
    queues.install(hook_status)  # put and get on any queue or pipe, without a spec
    tracker.install(journal_, hook_status)  # the resource tracker's registrations, unlinks, and what it printed
    imports.when_imported("multiprocessing.reduction",
                          lambda module: pickling.install(journal_, hook_status, module))
    if forced:
        imports.when_imported("multiprocessing.context",
                              _guard("multiprocessing.context", lambda m: _force(m, forced)))


def _guard(name, apply):
    def guarded(module):
        try:
            missing = apply(module)
        except Exception as exc:
            _hook_status(name, "failed", "%s: %s" % (type(exc).__name__, exc))
            return
        if missing:
            _hook_status(name, "unavailable", "this CPython has no " + ", ".join(missing))
        else:
            _hook_status(name, "applied", None)
    return guarded


def _target_name(process):
    target = getattr(process, "_target", None)
    if target is None:
        return "%s.%s.run" % (type(process).__module__, type(process).__qualname__)
    return "%s.%s" % (getattr(target, "__module__", "?"),
                      getattr(target, "__qualname__", getattr(target, "__name__", repr(target))))


def _process(module):
    base = getattr(module, "BaseProcess", None)
    missing = [n for n in ("start", "_bootstrap") if not hasattr(base, n)]
    if missing:
        return ["BaseProcess." + n for n in missing]
    start, bootstrap = base.start, base._bootstrap

    def start_wrapper(self, *args, **kwargs):
        t0 = _now()
        target = _target_name(self)  # start() drops _target once the child has it
        if mitigate:
            mitigate.before_start(self)  # turns itself off on failure, never raises
        outer = pickling.start_began()
        try:
            return start(self, *args, **kwargs)
        finally:
            t1 = _now()
            pickled = pickling.start_ended(outer)  # (never raises)
            if mitigate:
                mitigate.after_start(self)
            try:
                popen = getattr(self, "_popen", None)
                method = _POPEN_METHODS.get(type(popen).__module__, type(popen).__module__)
                seq = calls.writer_seq + 1 if popen is not None else calls.writer_seq
                calls.writer_seq = seq
                # The threads a fork would have carried (a fork's own event lists them under fork).
                threads = tasks.census() if popen is not None and method != "fork" else {}
                journal.event("process_start", t_ns=t0, start_ns=t0, end_ns=t1, method=method,
                              target=target, child_pid=getattr(popen, "pid", None),
                              name=self.name, writer_seq=seq, started=popen is not None, **threads, **pickled)
            except Exception as exc:
                _hook_status("multiprocessing.process", "failed", repr(exc))

    def bootstrap_wrapper(self, *args, **kwargs):
        try:
            t0 = _now()
            if _prepare_end[0] is not None:  # spawn/forkserver: Process object just unpickled
                journal.event("unpickle", t_ns=_prepare_end[0], start_ns=_prepare_end[0], end_ns=t0)
            journal.event("bootstrap", t_ns=t0, target=_target_name(self), name=self.name)
            restore = _at_run()
            if mitigate:
                mitigate.at_bootstrap(self)
        except Exception as exc:
            restore = None
            _hook_status("multiprocessing.process", "failed", repr(exc))
        try:
            return bootstrap(self, *args, **kwargs)
        finally:
            try:
                if restore is not None:
                    restore()
                journal.event("target_end")
            except Exception:
                pass

    start_wrapper.__wrapped__, bootstrap_wrapper.__wrapped__ = start, bootstrap
    base.start, base._bootstrap = start_wrapper, bootstrap_wrapper
    return []


# What _bootstrap logs just before it calls self.run(), on 3.9-3.14.
_CALLING_RUN = "child process calling self.run()"


def _at_run():
    """Journal target_start when _bootstrap calls the target's run(): at its
    util.info line just before, so that nothing of the probe's is between
    _bootstrap and run() (a wrapped run() would be a frame in every
    traceback the target prints). util.info is itself again from then on;
    the function returned puts it back where that line never came."""
    from multiprocessing import util  # _bootstrap's own import, a moment early

    info = util.info

    def info_wrapper(msg, *args):
        if msg == _CALLING_RUN:
            util.info = info
            try:
                journal.event("target_start")
                stacks.target_started()
            except Exception:
                pass
        return info(msg, *args)

    util.info = calls.disguised(info_wrapper, info)

    def restore():
        if util.info is not info:
            util.info = info

    return restore


def _spawn(module):
    missing = []
    for name, key in (("_fixup_main_from_path", "path"), ("_fixup_main_from_name", "module")):
        fn = getattr(module, name, None)
        if fn is None:
            missing.append("spawn." + name)
            continue
        setattr(module, name, _main_rerun(fn, key))
    prepare = getattr(module, "prepare", None)
    if prepare is None:
        missing.append("spawn.prepare")
    else:
        def prepare_wrapper(*args, **kwargs):
            try:
                return prepare(*args, **kwargs)
            finally:
                _prepare_end[0] = _now()
        prepare_wrapper.__wrapped__ = prepare
        module.prepare = prepare_wrapper
    return missing


def _main_rerun(fn, key):
    def wrapper(where, *args, **kwargs):
        t0 = _now()
        try:
            if mitigate and "guard" in mitigate.active:
                return mitigate.guarded_rerun(fn, where, *args, **kwargs)
            return fn(where, *args, **kwargs)
        finally:
            journal.event("main_rerun", t_ns=t0, start_ns=t0, end_ns=_now(), **{key: where})
    wrapper.__wrapped__ = fn
    return wrapper


def _force(module, forced):
    """Every way of choosing a start method now chooses `forced`."""
    contexts = getattr(module, "_concrete_contexts", {})
    default = getattr(module, "DefaultContext", None)
    base = getattr(module, "BaseContext", None)
    if forced not in contexts or default is None or base is None:
        journal.event("forced_start_method", forced=forced, applied=False,
                      reason="%r is not a start method here (%s)" % (forced, ", ".join(contexts)))
        return []
    noted = set()

    def note(requested, via):
        if (requested, via) not in noted:
            noted.add((requested, via))
            journal.event("forced_start_method", requested=requested, forced=forced, via=via,
                          applied=True)

    base_get, default_get, default_set = base.get_context, default.get_context, default.set_start_method

    def base_get_context(self, method=None):
        note(method, "get_context")
        return base_get(self, forced)

    def default_get_context(self, method=None):
        note(method, "get_context")
        return default_get(self, forced)

    def default_set_start_method(self, method, force=False):
        note(method, "set_start_method")
        return default_set(self, forced, force=True)

    base.get_context, default.get_context = base_get_context, default_get_context
    default.set_start_method = default_set_start_method
    # The default context, for multiprocessing.Process with no method chosen.
    module._default_context._actual_context = contexts[forced]
    note(None, "default")
    package = sys.modules.get("multiprocessing")
    if package is not None and hasattr(package, "get_context"):  # imported before us
        package.get_context = module._default_context.get_context
        package.set_start_method = module._default_context.set_start_method
    return []


def reset_after_fork():
    _prepare_end[0] = None
    if mitigate:
        mitigate.reset_after_fork()
