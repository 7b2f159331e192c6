"""What-if mitigations, WRITERPROF_MITIGATE=name[,name...], each journaled as
a "mitigation" event (applied true, or false with a reason):

  pin      the writer takes the affinity of the thread that started it, not
           the forkserver daemon's (frozen when the daemon started): the
           parent stores it on the Process object, which travels to the child,
           and the child sets it before its target runs.
  preload  under forkserver, the daemon imports the target's module once, not
           the main module; under forkserver and spawn, the child does not
           re-run the parent's __main__ unless unpickling needs a name from it.
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
from .format import FORCE_ENV

NAMES = ("pin", "preload", "local", "first-touch")
PIN_ATTR = "_writerprof_pin"  # in the Process's __dict__: pickled with it to the child
LOCAL_ATTR = "_writerprof_local"  # likewise: {"node", "cpus"} the child takes under local
MAIN_KEYS = ("init_main_from_name", "init_main_from_path")
# In the preparation data instead of MAIN_KEYS: (key, value) held back from prepare().
HELD_MAIN_KEY = "writerprof_held_main"

journal = None
_hook_status = None
active = set()
_noted = set()
_holding_main = set()  # threads inside a Process.start() whose child skips the __main__ re-run
_preloaded = []  # the forkserver preload list this process set
_old_mains = []  # as spawn.old_main_modules: the replaced __main__ stays alive


def install(journal_, hook_status, value):
    global journal, _hook_status
    journal, _hook_status = journal_, hook_status
    for name in filter(None, (n.strip() for n in value.split(","))):
        if name in NAMES:
            active.add(name)
        else:
            journal.event("mitigation", name=name, applied=False,
                          reason="unknown mitigation (known: %s)" % ", ".join(NAMES))


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
    _holding_main.discard(_thread.get_ident())
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
    context = sys.modules.get("multiprocessing.context")
    if not method and context is not None:
        method = context._default_context.get_start_method(allow_none=True) or ""
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


def _start_method(process):
    method = getattr(process, "_start_method", None)  # ForkServerProcess etc.
    if method is None:  # multiprocessing.Process: the default context decides
        method = sys.modules["multiprocessing.context"]._default_context.get_start_method()
    return method


def _preload(process):
    method = _start_method(process)
    if method not in ("forkserver", "spawn"):
        return _note("preload", False, "%s: the child re-runs no __main__ and imports nothing"
                     % method, method=method)
    target = getattr(process, "_target", None)
    module = getattr(target if target is not None else type(process), "__module__", None)
    if module in ("__main__", "__mp_main__"):
        what = getattr(target, "__qualname__", None) or type(process).__qualname__ + ".run"
        return _note("preload", False, "the target %s lives in __main__: unpickling it needs "
                     "the main module" % what, method=method)
    _holding_main.add(_thread.get_ident())
    reason = None
    if method == "forkserver":
        from multiprocessing import forkserver

        server = forkserver._forkserver
        if server._forkserver_pid is None:
            # The program's own preloads stay; the main module goes (children skip it anyway).
            modules = [m for m in server._preload_modules if m != "__main__"]
            modules += [module] if module and module not in modules else []
            forkserver.set_forkserver_preload(modules)
            _preloaded[:] = modules
        elif module not in _preloaded:
            reason = ("the forkserver was already running: its imports are fixed (children "
                      "still skip the __main__ re-run)")
    _note("preload", reason is None, reason, method=method, modules=list(_preloaded),
          skip_main=True)


def preparation_data(data):
    """The parent's spawn.get_preparation_data(): under preload, the child
    gets the main module's name or path held back from prepare()."""
    if _thread.get_ident() in _holding_main and isinstance(data, dict):
        for key in MAIN_KEYS:
            if key in data:
                data[HELD_MAIN_KEY] = (key, data.pop(key))
    return data


# The forkserver daemon

def forkserver_main(main):
    def main_wrapper(listener_fd, alive_r, preload, *args, **kwargs):
        try:
            preload = _preload_here(preload, kwargs.get("sys_path"))
        except Exception as exc:
            _failed("preload", exc)
        return main(listener_fd, alive_r, preload, *args, **kwargs)
    main_wrapper.__wrapped__ = main
    return main_wrapper


def _preload_here(preload, sys_path):
    modules = [m for m in preload or () if m != "__main__"]
    if not modules:
        return preload
    if sys_path is not None:
        # 3.9-3.13 pass the parent's sys.path and ignore it (CPython later fixed
        # that): without it a module found beside the parent's script is not found.
        sys.path[:] = sys_path
    failed = {}
    for name in modules:
        try:
            __import__(name)
        except Exception as exc:
            failed[name] = "%s: %s" % (type(exc).__name__, exc)
    fields = dict(reason="import failed: %s" % failed) if failed else {}
    journal.event("mitigation", name="preload", applied=not failed, where="forkserver",
                  modules=modules, **fields)
    # A module that failed here is not retried by main(): an error other than
    # ImportError there would end the daemon.
    return [m for m in preload if m not in failed]


# The child

def after_prepare(data):
    """After spawn.prepare(): __main__ is re-run only if something unpickled
    needs a name from it (an argument, or a pool's task, defined in the
    parent's main script), not for every child."""
    held = data.get(HELD_MAIN_KEY) if isinstance(data, dict) else None
    if held is None:
        return
    try:
        key, where = held
        spawn = sys.modules["multiprocessing.spawn"]
        fixup = getattr(spawn, "_fixup_main_from_" + key.rsplit("_", 1)[1])  # mp.py times it
    except Exception as exc:
        return _failed("preload", exc)
    try:
        current = sys.modules["__main__"]
        stub = types.ModuleType("__main__")
        stub.__dict__.update((k, v) for k, v in vars(current).items() if k.startswith("__"))
        rerun = []

        def __getattr__(name):
            if name.startswith("__") or rerun:  # dunders: looked up, not pickled
                raise AttributeError("module '__main__' has no attribute %r" % name)
            rerun.append(name)
            try:
                journal.event("mitigation", name="preload", applied=False, where="child",
                              reason="unpickling needed __main__.%s: the child re-ran the main "
                              "module" % name)
            except Exception:
                pass  # the unpickling must go on
            fixup(where)
            return getattr(sys.modules["__main__"], name)

        stub.__getattr__ = __getattr__
        _old_mains.append(current)
        sys.modules["__main__"] = stub
    except Exception as exc:
        _failed("preload", exc)
        fixup(where)  # as prepare() would have


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
    _holding_main.clear()
    _noted.clear()  # a new journal: its outcomes are journaled afresh
