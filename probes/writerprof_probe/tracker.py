"""multiprocessing's resource tracker, from both sides.

In every process that imports multiprocessing.resource_tracker: each
register and unregister it sends (the module's functions, which
SharedMemory and SemLock call): the resource type, the name, the tracker it
went to (the inode of the tracker's pipe: every process that shares a
tracker writes into the one pipe), who called (the calling frame's module
and function and, for SharedMemory.__init__, whether it created the segment
or attached it by name) and the first frame outside multiprocessing (the
target's line that led to it). Each unlink with its outcome: a SemLock's
sem_unlink here, SharedMemory.unlink() in shm.py (unlinked()).

In the tracker process itself (role resource_tracker, started as `python -c
"from multiprocessing.resource_tracker import main;main(FD)"`): its pipe,
each unlink of its clean-up at shutdown with its outcome, and what it
printed on stderr: its warnings ("There appear to be N leaked
shared_memory objects to clean up at shutdown", one per name it could not
unlink) and the tracebacks of the messages it could not apply (an
UNREGISTER of a name it no longer holds is a KeyError). Each still goes to
the original warnings._showwarnmsg and sys.excepthook: the tracker prints
exactly what it would have. Only there: the target's own warnings and
hooks are never touched.

A wrapper here is a frame in a traceback of the call it wraps when that
call raises (a tracker that died: BrokenPipeError; sem_unlink's
FileNotFoundError), as shm.py's are: an error path only."""

import os
import re
import sys
import time

from . import calls, identity, imports, queues

_now = time.monotonic_ns

journal = None
_hook_status = None
_tracker = None  # multiprocessing.resource_tracker, once imported
# The tracker process's command line, and the fd of its pipe's read end in it.
_TRACKER_MAIN = re.compile(r"multiprocessing\.resource_tracker import main;\s*main\((\d+)\)")
HOOK = "multiprocessing.resource_tracker"
SEM_HOOK = "multiprocessing.synchronize:sem_unlink"
TRACKER_SIDE = "multiprocessing.resource_tracker:main"
# A site is the target's frame: not multiprocessing's, nor the probe's (shm.py's wrappers sit in between).
_NOT_SITES_IN = ("multiprocessing", __package__)
_NOT_SITES = tuple(name + "." for name in _NOT_SITES_IN)


def install(journal_, hook_status):
    global journal, _hook_status
    journal, _hook_status = journal_, hook_status
    imports.when_imported("multiprocessing.resource_tracker", _apply)
    imports.when_imported("multiprocessing.synchronize", _synchronize)


def _apply(module):
    global _tracker
    _tracker = module
    try:
        missing = [name for name in ("register", "unregister", "_resource_tracker") if not hasattr(module, name)]
        if missing:
            _hook_status(HOOK, "unavailable", "this CPython has no resource_tracker." + ", ".join(missing))
        else:
            for op in ("register", "unregister"):
                fn = getattr(module, op)
                setattr(module, op, calls.disguised(_sending(op, fn), fn))
            _hook_status(HOOK, "applied", None)
    except Exception as exc:  # inside the target's import: never its problem
        _hook_status(HOOK, "failed", "%s: %s" % (type(exc).__name__, exc))
    fd = _tracker_fd()
    if fd is not None:
        try:
            _in_tracker(module, fd)
            _hook_status(TRACKER_SIDE, "applied", None)
        except Exception as exc:
            _hook_status(TRACKER_SIDE, "failed", "%s: %s" % (type(exc).__name__, exc))


def _sending(op, fn):
    """register or unregister (name, rtype), journaled once sent (the tracker
    is known then: the call starts it where none runs), as a span: its start
    comes before anything the tracker does with the message."""
    def wrapper(*args, **kwargs):
        start = _now()
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            _sent(op, args, kwargs, exc, start)
            raise
        _sent(op, args, kwargs, None, start)
        return result
    return wrapper


def _sent(op, args, kwargs, exc, start):
    try:
        name = args[0] if args else kwargs.get("name")
        rtype = args[1] if len(args) > 1 else kwargs.get("rtype")
        frame, module = queues.caller(sys._getframe(1))
        fields = dict(op=op, rtype=str(rtype), name=str(name), tracker=_pipe(), **_who(frame, module))
        if frame is not None and module == "multiprocessing.shared_memory" and frame.f_code.co_name == "__init__":
            # SharedMemory(name=..., create=...): its own argument says which
            # (read, not changed: the frame's locals as a snapshot or a view).
            fields["opened"] = "create" if frame.f_locals.get("create") else "attach"
        if exc is not None:
            fields["error"] = "%s: %s" % (type(exc).__name__, exc)
        journal.event("tracker_call", t_ns=start, start_ns=start, end_ns=_now(), **fields)
    except Exception:  # never the target's problem
        pass


def _pipe():
    """The inode of the pipe this process sends to its tracker on, or None."""
    fd = getattr(getattr(_tracker, "_resource_tracker", None), "_fd", None)
    try:
        return os.fstat(fd).st_ino if fd is not None else None
    except OSError:  # closed since (the program's own doing): no tracker to name
        return None


def _who(frame, module):
    """caller: module:function of the frame that called; site: the first
    frame outside multiprocessing from there (the target's code), as
    module:function:line."""
    out = {"caller": _named(frame, module), "site": None}
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if not module.startswith(_NOT_SITES) and module not in _NOT_SITES_IN:
            out["site"] = "%s:%d" % (_named(frame, module), frame.f_lineno)
            break
        frame = frame.f_back
    return out


def _named(frame, module):
    if frame is None:
        return None
    code = frame.f_code
    return "%s:%s" % (module, getattr(code, "co_qualname", code.co_name))  # (co_qualname: 3.11 on)


def unlinked(rtype, name, via, exc, start):
    """Journal an unlink of a named resource that began at `start`: via what,
    and its outcome ("ok", or the exception's type and errno). Never raises."""
    try:
        end = _now()
        frame, module = queues.caller(sys._getframe(1))
        journal.event("resource_unlink", t_ns=start, start_ns=start, end_ns=end, rtype=rtype, name=str(name), via=via,
                      outcome="ok" if exc is None else type(exc).__name__,
                      errno=getattr(exc, "errno", None), **_who(frame, module))
    except Exception:
        pass


def _unlinking(fn, rtype, via):
    """fn(name), an unlink, with its outcome journaled."""
    def wrapper(*args, **kwargs):
        name = args[0] if args else kwargs.get("name")
        start = _now()
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            unlinked(rtype, name, via, exc, start)
            raise
        unlinked(rtype, name, via, None, start)
        return result
    return calls.disguised(wrapper, fn)


def _synchronize(module):
    """SemLock._cleanup's sem_unlink (a module global of synchronize's, the
    C function's own name left alone: the tracker holds it too)."""
    try:
        fn = getattr(module, "sem_unlink", None)
        if fn is None:
            _hook_status(SEM_HOOK, "unavailable", "this Python has no named semaphores (no sem_unlink)")
            return
        module.sem_unlink = _unlinking(fn, "semaphore", "sem_unlink")
        _hook_status(SEM_HOOK, "applied", None)
    except Exception as exc:
        _hook_status(SEM_HOOK, "failed", "%s: %s" % (type(exc).__name__, exc))


# The tracker process

def _tracker_fd():
    """The fd of the tracker's pipe, where this process is the tracker; else None."""
    found = _TRACKER_MAIN.search(" ".join(identity.cmdline()))
    return int(found.group(1)) if found else None


def _in_tracker(module, fd):
    journal.event("tracker_start", pipe=os.fstat(fd).st_ino, fd=fd)
    cleanup = module._CLEANUP_FUNCS  # rtype -> what unlinks it, read by main() at shutdown
    for rtype in ("shared_memory", "semaphore"):
        if rtype in cleanup:
            cleanup[rtype] = _unlinking(cleanup[rtype], rtype, "tracker")
    import warnings  # (imported already: site imports it)

    show = warnings._showwarnmsg  # what warn() calls to print, in 3.9-3.14

    def showwarnmsg(msg):
        try:
            text = str(msg.message)
            if text.startswith("resource_tracker"):
                journal.event("tracker_output", via="warning", category=msg.category.__name__, message=text)
        except Exception:
            pass
        return show(msg)

    warnings._showwarnmsg = calls.disguised(showwarnmsg, show)
    hook = sys.excepthook  # what main() prints a message it could not apply with

    def excepthook(kind, value, tb):
        try:
            fields = dict(via="excepthook", category=kind.__name__, message=str(value))
            if issubclass(kind, KeyError) and value.args and isinstance(value.args[0], str):
                fields["name"] = value.args[0]  # an UNREGISTER of a name it does not hold
            journal.event("tracker_output", **fields)
        except Exception:
            pass
        return hook(kind, value, tb)

    sys.excepthook = calls.disguised(excepthook, hook)
