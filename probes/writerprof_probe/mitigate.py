"""What-if mitigations, WRITERPROF_MITIGATE=name[,name...], each journaled as
a "mitigation" event (applied true, or false with a reason):

  pin      the writer takes the affinity of the thread that started it, not
           the forkserver daemon's (frozen when the daemon started): the
           parent stores it on the Process object, which travels to the child,
           and the child sets it before its target runs.
  preload  the advice itself: the forkserver starts with exactly the preload
           list WRITERPROF_PRELOAD names (comma-separated), set at the first
           Process.start() before the daemon exists (the program's own list
           is journaled, and replaced). CPython then does with it what it
           does: '__main__' in it is skipped before CPython 3.13.8 and 3.14.1
           (gh-126631), and a module the daemon cannot import is skipped.
  guard    the children re-run the parent's __main__ as a guarded entry
           script would: the imports it makes of the modules WRITERPROF_DEFER
           names (comma-separated) are deferred to their first use
           (importlib.util.LazyLoader), as if they were inside the functions
           that use them: one the target uses is imported then, one it never
           uses never is. Imported at once even so: a second import of one
           during the re-run, `from M import NAME`, and the packages above a
           dotted name (its __path__ is needed to find it).
  local    the writer runs on the node holding its buffers: the one most of
           the starting process's open buffers' pages are on, or, where none
           is touched yet, the node of the starting thread, which is then
           pinned to that node's CPUs (its fill, and the threads it starts
           from then on, first-touch the buffers there). The child takes that
           node's CPUs before its target runs.
  first-touch  every SharedMemory a process creates is first touched (a zero
           written to each page, which a new segment already holds) by a
           thread pinned to the node a writer started now would run on (the
           CPUs it would inherit: the forkserver daemon's under forkserver,
           else the starting thread's): the kernel puts the pages there. Not
           applied where those CPUs span nodes (the writer has no node of its
           own) or where the machine has one node.

mp.py calls in here; every failure turns the mitigation off (a "hook" event)
and the process goes on as CPython would."""

import _thread
import os
import sys
import types

from . import quiet
from .format import DEFER_ENV, FORCE_ENV, PRELOAD_ENV
from .imports import others_spec

NAMES = ("pin", "preload", "guard", "local", "first-touch")
PIN_ATTR = "_writerprof_pin"  # in the Process's __dict__: pickled with it to the child
LOCAL_ATTR = "_writerprof_local"  # likewise: {"node", "cpus"} the child takes under local
# The modules each of these takes, from its variable.
_MODULES_OF = {"preload": PRELOAD_ENV, "guard": DEFER_ENV}

journal = None
_hook_status = None
active = set()
named_modules = {}  # preload, guard -> the modules named for it
_noted = set()
_preloaded = []  # the forkserver preload list this process set


def install(journal_, hook_status, value):
    global journal, _hook_status
    journal, _hook_status = journal_, hook_status
    for name in filter(None, (n.strip() for n in value.split(","))):
        if name not in NAMES:
            journal.event("mitigation", name=name, applied=False,
                          reason="unknown mitigation (known: %s)" % ", ".join(NAMES))
        elif name in _MODULES_OF and not _named(_MODULES_OF[name]):
            journal.event("mitigation", name=name, applied=False,
                          reason="%s names no module" % _MODULES_OF[name])
        else:
            active.add(name)
            if name in _MODULES_OF:
                named_modules[name] = _named(_MODULES_OF[name])


def _named(variable):
    return [m for m in (n.strip() for n in os.environ.get(variable, "").split(",")) if m]


def _failed(name, exc):
    active.discard(name)
    _hook_status("mitigation:" + name, "failed", "%s: %s" % (type(exc).__name__, exc))


def _note(name, applied, reason=None, **fields):
    """Journal a parent-side outcome once (every writer start would repeat it)."""
    if reason is not None:
        fields["reason"] = reason
    key = repr(sorted(fields.items())) + name + str(applied)
    if key not in _noted:
        _noted.add(key)
        journal.event("mitigation", name=name, applied=applied, where="parent", **fields)


# The parent, around Process.start()

def before_start(process):
    if "pin" in active:
        try:
            setattr(process, PIN_ATTR, sorted(os.sched_getaffinity(0)))
        except Exception as exc:
            _failed("pin", exc)
    if "preload" in active:
        try:
            _preload(process)
        except Exception as exc:
            _failed("preload", exc)
    if "local" in active:
        try:
            _local(process)
        except Exception as exc:
            _failed("local", exc)


def after_start(process):
    # Pickled (or forked) by now: leave the parent's object as it was.
    process.__dict__.pop(PIN_ATTR, None)
    process.__dict__.pop(LOCAL_ATTR, None)


def _local(process):
    from . import numa, shm  # here: shm imports this module; numa only where the what-if is on

    nodes = numa.node_cpus()
    if len(nodes) < 2:
        return _note("local", False, "one NUMA node: nowhere else to run")
    pages = shm.open_placement()
    if pages:
        node, by = max(pages.items(), key=lambda item: item[1])[0], "buffers"
    else:
        # Nothing touched yet: the buffers will be where this thread fills them.
        cpu = numa.current_cpu()
        node = next((n for n, cpus in nodes.items() if cpu in cpus), None)
        if node is None:
            return _note("local", False, "the starting thread's CPU is on no known node")
        by = "filling thread"
        mine = set(os.sched_getaffinity(0)) & nodes[node]
        os.sched_setaffinity(0, mine or nodes[node])  # this thread only
    setattr(process, LOCAL_ATTR, {"node": node, "cpus": sorted(nodes[node])})
    _note("local", True, node=node, by=by, cpus=sorted(nodes[node]))


def _writer_cpus():
    """The CPUs a writer started now from this thread would inherit."""
    method = os.environ.get(FORCE_ENV, "").strip()
    if not method and "multiprocessing.context" in sys.modules:
        method = _default_method()
    server = sys.modules.get("multiprocessing.forkserver")
    pid = getattr(getattr(server, "_forkserver", None), "_forkserver_pid", None)
    if method == "forkserver" and pid:
        try:
            return os.sched_getaffinity(pid)  # the daemon's, frozen when it started
        except OSError:
            pass
    return os.sched_getaffinity(0)  # a forkserver started now would take this thread's too


def first_touch(shm):
    """Touch a just-created segment's pages from a thread on its writer's node."""
    from . import numa  # here: only where the what-if is on

    try:
        nodes = numa.node_cpus()
        if len(nodes) < 2:
            return _note("first-touch", False, "one NUMA node: nowhere else to put the pages")
        cpus = _writer_cpus()
        on = numa.nodes_of(cpus, nodes)
        if len(on) != 1:
            return _note("first-touch", False, "a writer started now may run on nodes %s: it has no node "
                         "of its own to touch the buffers on" % ", ".join(map(str, on)), writer_cpus=sorted(cpus))
        node = on[0]
        done, failed = _thread.allocate_lock(), []
        done.acquire()

        def touch():
            try:
                os.sched_setaffinity(0, nodes[node])  # this thread only
                view = shm.buf[::numa.PAGE_SIZE]
                try:
                    view[:] = bytes(len(view))  # a new segment is all zeros: nothing changes but placement
                finally:
                    view.release()
            except Exception as exc:
                failed.append(exc)
            finally:
                done.release()

        quiet.start_thread(touch, ())
        done.acquire()
        if failed:
            raise failed[0]
        journal.event("mitigation", name="first-touch", applied=True, where="parent", node=node,
                      buffer=shm.name, cpus=sorted(nodes[node]))
    except Exception as exc:
        _failed("first-touch", exc)


def _default_method():
    """The method a multiprocessing.Process started now would use, read
    without choosing it for the program (get_start_method() would, and
    allow_none=True says None until one is chosen, where CPython 3.14 uses
    forkserver on Linux and earlier ones fork): the chosen one, else the
    platform's default."""
    default = sys.modules["multiprocessing.context"]._default_context
    return (default._actual_context or default._default_context)._name


def _start_method(process):
    method = getattr(process, "_start_method", None)  # ForkServerProcess etc.
    if method is None:  # multiprocessing.Process: the default context decides
        method = _default_method()
    return method


def _preload(process):
    method = _start_method(process)
    if method != "forkserver":
        return _note("preload", False, "%s: no forkserver to preload" % method, method=method)
    from multiprocessing import forkserver

    server = forkserver._forkserver
    if server._forkserver_pid is None:
        own = list(server._preload_modules)
        server.set_forkserver_preload(list(named_modules["preload"]))
        _preloaded[:] = named_modules["preload"]
        _note("preload", True, method=method, modules=list(_preloaded), program=own)
    elif not _preloaded:
        _note("preload", False, "the forkserver was already running: its preload list is fixed",
              method=method, modules=list(server._preload_modules))


# The child

def guarded_rerun(fixup, where, *args, **kwargs):
    """fixup(where): the re-run of the parent's __main__, with the imports of
    the modules named for guard deferred to their first use."""
    finder = None
    try:
        finder = _Deferring(named_modules["guard"])
        sys.meta_path.insert(0, finder)
    except Exception as exc:
        _failed("guard", exc)
    try:
        return fixup(where, *args, **kwargs)
    finally:
        if finder is not None:
            try:
                sys.meta_path.remove(finder)
                # Imported by its end after all: used at the script's top level, or imported twice.
                loaded = [m for m in finder.deferred if type(sys.modules.get(m)) is types.ModuleType]
                fields = {} if finder.deferred else {"reason": "the re-run imported none of them"}
                journal.event("mitigation", name="guard", applied=bool(finder.deferred), where="child",
                              modules=named_modules["guard"], deferred=finder.deferred, loaded=loaded, **fields)
            except Exception as exc:
                _failed("guard", exc)


class _Deferring:
    """Finds nothing itself: lets the other finders find a module named for
    guard that is not imported yet, and gives it a lazy loader."""

    def __init__(self, names):
        from importlib.util import LazyLoader  # here: only where the what-if is on

        self._lazy, self._names, self.deferred = LazyLoader, set(names), []

    def find_spec(self, name, path=None, target=None):
        if name not in self._names or name in sys.modules:
            return None
        spec = others_spec(self, name, path, target)
        if spec is not None:
            try:
                spec.loader = self._lazy(spec.loader)  # TypeError for a loader it cannot defer
                self.deferred.append(name)
            except Exception:
                pass  # imported as it would have been
        return spec


def at_bootstrap(process):
    """In the child, before the target runs."""
    local = vars(process).get(LOCAL_ATTR)
    if local is not None and "local" in active:
        _take_cpus("local", local["cpus"], node=local["node"])
    cpus = vars(process).get(PIN_ATTR)
    if cpus is not None and "pin" in active:
        _take_cpus("pin", cpus)


def _take_cpus(name, cpus, **fields):
    try:
        inherited = sorted(os.sched_getaffinity(0))
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as exc:
            journal.event("mitigation", name=name, applied=False, cpus=cpus, inherited=inherited,
                          reason="%s: %s" % (type(exc).__name__, exc), **fields)
        else:
            journal.event("mitigation", name=name, applied=True, cpus=cpus, inherited=inherited, **fields)
    except Exception as exc:
        _failed(name, exc)


def reset_after_fork():
    _noted.clear()  # a new journal: its outcomes are journaled afresh
