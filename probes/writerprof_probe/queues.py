"""Generic hooks on multiprocessing's queues and connections, in every probed
process, without any spec: the producer's put and the writer's get, timed as
the `put` and `get` phases whatever the writer's own names are.

Hooked: Queue.put / get and JoinableQueue.put (multiprocessing.queues),
SimpleQueue.put / get, and Connection send / send_bytes (put) and recv /
recv_bytes / recv_bytes_into (get), the two ends of multiprocessing.Pipe().

The rule for what is the writer's work: a call is timed only when the code
that made it is not multiprocessing's own (nor concurrent.futures', which
drives multiprocessing queues from its own threads), but for a pool's
worker loop: a worker's wait for its next task is its get. So the Queue feeder
thread's send_bytes, the recv_bytes inside Queue.get, a Pool's task and
result handlers and a manager's proxies are never a put or get of their
own: the wait they serve is the target's Queue.put or Queue.get, timed once,
around it. A spec hook on the target's own function that wraps the same
call (the reproducer's _Save._put) times it instead: calls.timed skips a
call nested in a call of the same phase."""

import sys

from . import calls, imports
from .format import PHASES

_PROBE = __name__.rpartition(".")[0]
# Packages whose calls on queues and connections are plumbing, not the target's.
_PLUMBING = ("multiprocessing", "concurrent.futures")


def _package(names):
    """(the names, their dotted prefixes): what `_within` tests a module against."""
    return frozenset(names), tuple(name + "." for name in names)


_PLUMBING_IN, _PROBE_IN = _package(_PLUMBING), _package((_PROBE,))


def _within(module, package):
    """Whether module is one of the packages, or inside one (hot path: no allocation)."""
    names, dotted = package
    return module in names or module.startswith(dotted)


# A pool's worker loop: its wait for the next task and its hand-back of the
# result are the worker's own (a pool of writers waiting for files to write).
_WORKER_LOOPS = frozenset((("concurrent.futures.process", "_process_worker"), ("multiprocessing.pool", "worker")))


def caller(frame):
    """The first frame, from `frame` outwards, that is not the probe's own
    (its wrappers sit between the caller and the hooked call), and its module."""
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if not _within(module, _PROBE_IN):
            return frame, module
        frame = frame.f_back
    return None, ""


def from_target(args):
    """A hook's `accept`: true when the call was made by the target's code,
    or by a pool's worker loop."""
    frame, module = caller(sys._getframe(1))
    return not _within(module, _PLUMBING_IN) or (module, frame.f_code.co_name) in _WORKER_LOOPS


def waiting_from_target(args):
    """A get's `accept`: from_target's test, and a get the target makes
    starts with the journal's queued records written, since a process may be
    killed while it waits (a pool's worker, terminated once the map is done,
    would lose the tasks it took: a write per get, not per record)."""
    if not from_target(args):
        return False
    try:
        if calls.journal is not None and calls.journal.records:
            calls.journal.flush()
    except Exception:
        pass
    return True


def _describe_none(args, result):
    return -1, -1


def _describe_sent(args, result):
    """send_bytes(buf): its buffer (a view of a shared-memory buffer has an
    index) and size; send(obj): the same when obj is bytes-like."""
    return calls.describe_args(args[1:2], None)


def _describe_received(args, result):
    """recv_bytes: the size of what came; recv_bytes_into(buf): buf and the
    count it returns; recv: -1 (an object, its size unknown)."""
    if isinstance(result, (bytes, bytearray)):
        return -1, len(result)
    return calls.describe_args(args[1:2], result)


# module -> [(class, method, phase, describe)]
_HOOKED = {
    "multiprocessing.queues": (
        ("Queue", "put", "put", _describe_none),
        ("Queue", "get", "get", _describe_none),
        ("JoinableQueue", "put", "put", _describe_none),
        ("SimpleQueue", "put", "put", _describe_none),
        ("SimpleQueue", "get", "get", _describe_none),
    ),
    "multiprocessing.connection": (
        ("_ConnectionBase", "send", "put", _describe_sent),
        ("_ConnectionBase", "send_bytes", "put", _describe_sent),
        ("_ConnectionBase", "recv", "get", _describe_received),
        ("_ConnectionBase", "recv_bytes", "get", _describe_received),
        ("_ConnectionBase", "recv_bytes_into", "get", _describe_received),
    ),
}


def hook_name(module, cls, method, phase):
    return "%s:%s.%s=%s" % (module, cls, method, phase)


def install(hook_status):
    """Hook each module when it is imported (or at once if it is);
    `hook_status(name, status, reason)` journals each hook's outcome."""
    for module_name, hooked in _HOOKED.items():
        imports.when_imported(module_name, _applier(module_name, hooked, hook_status))


def _applier(module_name, hooked, hook_status):
    def apply(module):
        for cls_name, method, phase, describe in hooked:
            name = hook_name(module_name, cls_name, method, phase)
            try:
                status, reason = apply_one(module, cls_name, method, phase, describe, name)
            except Exception as exc:  # inside the target's import: never its problem
                status, reason = "failed", "%s: %s" % (type(exc).__name__, exc)
            hook_status(name, status, reason)
    return apply


def apply_one(module, cls_name, method, phase, describe, name):
    """Wrap cls.method in place, where the class defines it itself (a
    subclass that inherits it is covered by its base's hook)."""
    cls = getattr(module, cls_name, None)
    fn = cls.__dict__.get(method) if isinstance(cls, type) else None
    if fn is None:
        return "unavailable", "this CPython has no %s.%s" % (cls_name, method)
    accept = waiting_from_target if phase == "get" else from_target
    setattr(cls, method, calls.timed(fn, calls.Hook(name, PHASES[phase], describe, accept)))
    return "applied", None
