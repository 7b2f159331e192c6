"""multiprocessing's pickling, measured in the process that pickles.

At a Process.start(): the child's preparation data and the Process object
(its target and arguments), which spawn and forkserver pickle with
multiprocessing.reduction.dump(obj, buf) from their Popen's _launch (3.9 to
3.14); fork pickles nothing. A dump counts for the start the calling thread
is inside (start_began / start_ended, around the call), as its seconds and
bytes (how far it moved the buffer's position).

Per process: every ForkingPickler.dumps, which is what a queue, a pipe and a
pool send with (a task in the parent, a result in the worker): counted, timed
and sized per thread (a few additions a call, no record), and journaled once,
as a "pickling" event just before the process's exit event. A process killed
by a signal (a Pool's worker at terminate()) has none."""

import _thread
import time

from . import calls, lifecycle

_now = time.monotonic_ns
_tls = _thread._local()  # .start: the tally of the start() this thread is in; .dumps: its dumps tally
_tallies = []  # every thread's dumps tally, [calls, ns, bytes]: each thread adds to its own only
journal = None
_hooked = {"dump": False, "dumps": False}

DUMP_HOOK = "multiprocessing.reduction:dump"
DUMPS_HOOK = "multiprocessing.reduction:ForkingPickler.dumps"


def install(journal_, hook_status, module):
    """Hook reduction.dump and ForkingPickler.dumps of `module`
    (multiprocessing.reduction); `hook_status` journals each outcome."""
    global journal
    journal = journal_
    for name, apply in ((DUMP_HOOK, _hook_dump), (DUMPS_HOOK, _hook_dumps)):
        try:
            missing = apply(module)
        except Exception as exc:  # inside the target's import: never its problem
            hook_status(name, "failed", "%s: %s" % (type(exc).__name__, exc))
            continue
        if missing:
            hook_status(name, "unavailable", "this CPython has no " + missing)
        else:
            hook_status(name, "applied", None)
    if _hooked["dumps"]:
        lifecycle.on_exit(_at_exit)
    lifecycle.on_fork_in_child(reset_after_fork)


# A Process.start()

def start_began():
    """Open this thread's tally for the start() it enters; returns the one it
    was in (a start inside a start), for start_ended."""
    outer = getattr(_tls, "start", None)
    _tls.start = [0, 0]
    return outer


def start_ended(outer):
    """The fields of the start() this thread leaves, for its process_start
    event: pickle_ns and pickle_bytes ({} where dump is not hooked)."""
    tally = getattr(_tls, "start", None)
    _tls.start = outer
    if not _hooked["dump"] or tally is None:
        return {}
    return {"pickle_ns": tally[0], "pickle_bytes": tally[1]}


def _hook_dump(module):
    dump = getattr(module, "dump", None)
    if not callable(dump):
        return "reduction.dump"

    def dump_wrapper(*args, **kwargs):
        tally = getattr(_tls, "start", None)
        if tally is None:  # not inside a start(): the target's own, or a queue's
            return dump(*args, **kwargs)
        _tls.start = None  # a dump that a reducer makes inside this one is this one's
        before = _position(args[1] if len(args) > 1 else kwargs.get("file"))
        t0 = _now()
        try:
            return dump(*args, **kwargs)
        finally:
            t1 = _now()
            _tls.start = tally
            try:
                tally[0] += t1 - t0
                if before is not None:
                    tally[1] += _position(args[1] if len(args) > 1 else kwargs.get("file")) - before
            except Exception:  # a file whose position cannot be read: its time still counts
                pass

    calls.stand_in(module, "dump", calls.disguised(dump_wrapper, dump))
    _hooked["dump"] = True
    return None


def _position(file):
    try:
        return file.tell()
    except Exception:
        return None


# Every ForkingPickler.dumps

def _hook_dumps(module):
    pickler = getattr(module, "ForkingPickler", None)
    method = vars(pickler).get("dumps") if isinstance(pickler, type) else None
    if not isinstance(method, classmethod):
        return "reduction.ForkingPickler.dumps"
    dumps = method.__func__

    def dumps_wrapper(*args, **kwargs):
        t0 = _now()
        result = dumps(*args, **kwargs)
        t1 = _now()
        try:
            try:
                tally = _tls.dumps
            except AttributeError:  # this thread's first
                tally = _tls.dumps = [0, 0, 0]
                _tallies.append(tally)
            tally[0] += 1
            tally[1] += t1 - t0
            tally[2] += result.nbytes if type(result) is memoryview else len(result)
        except Exception:
            pass
        return result

    pickler.dumps = classmethod(calls.disguised(dumps_wrapper, dumps))
    _hooked["dumps"] = True
    return None


def _at_exit():
    try:  # (a failure here must not cost the exit event after it)
        count, ns, nbytes = (sum(column) for column in zip(*_tallies)) if _tallies else (0, 0, 0)
        journal.event("pickling", pickled_calls=count, pickled_ns=ns, pickled_bytes=nbytes)
    except Exception:
        pass


def reset_after_fork():
    """A forked child counts its own: its one thread's tally from zero, and
    no start() open (a fork child runs its target inside its parent's
    start(), and never returns from it)."""
    _tls.start = None
    own = getattr(_tls, "dumps", None)
    if own is not None:
        own[:] = [0, 0, 0]
    _tallies[:] = [own] if own is not None else []
