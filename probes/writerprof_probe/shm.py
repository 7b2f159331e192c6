"""Shared-memory buffers: every SharedMemory create or attach, its address
range here, and where its pages are: at create or attach, at unlink (the
producer's end of a save, before the segment goes), and at close (the end of
a writer's loop) or exit; each unlink's outcome (tracker.unlinked).
Readings of one buffer taken in one process, or with all its pages mapped,
compare: pages that left a node between them were moved (automatic NUMA
balancing, migrate_pages)."""

import sys
import time

from . import calls, imports, lifecycle, tracker

_numa = None


def numa():
    """The placement module, once a buffer is mapped here (array, ctypes: start-up)."""
    global _numa
    if _numa is None:
        from . import numa as module

        _numa = module
    return _numa

journal = None
_hook_status = None
_open = {}  # index -> SharedMemory object, while mapped here
_known = []  # every buffer this process has had: (index, event fields)


def install(journal_, hook_status):
    global journal, _hook_status
    journal, _hook_status = journal_, hook_status
    lifecycle.on_fork_in_child(after_fork)
    lifecycle.on_exit(at_exit)
    imports.when_imported("multiprocessing.shared_memory", _apply)


def _apply(module):
    cls = getattr(module, "SharedMemory", None)
    if cls is None:
        _hook_status("multiprocessing.shared_memory", "unavailable", "no SharedMemory")
        return
    init, close, unlink = cls.__init__, cls.close, cls.unlink

    def init_wrapper(self, name=None, create=False, size=0, *args, **kwargs):
        init(self, name, create, size, *args, **kwargs)
        try:
            _opened(self, create)
        except Exception as exc:
            _hook_status("multiprocessing.shared_memory", "failed", repr(exc))

    def close_wrapper(self, *args, **kwargs):
        try:
            _measure_closing(self)
        except Exception as exc:
            _hook_status("multiprocessing.shared_memory", "failed", repr(exc))
        return close(self, *args, **kwargs)

    def unlink_wrapper(self, *args, **kwargs):
        try:
            _measure_unlinking(self)
        except Exception as exc:
            _hook_status("multiprocessing.shared_memory", "failed", repr(exc))
        start = time.monotonic_ns()
        try:
            result = unlink(self, *args, **kwargs)
        except BaseException as exc:  # its outcome journaled (a segment gone already: FileNotFoundError)
            tracker.unlinked("shared_memory", getattr(self, "_name", None), "SharedMemory.unlink", exc, start)
            raise
        tracker.unlinked("shared_memory", getattr(self, "_name", None), "SharedMemory.unlink", None, start)
        return result

    init_wrapper.__wrapped__, close_wrapper.__wrapped__, unlink_wrapper.__wrapped__ = init, close, unlink
    cls.__init__, cls.close, cls.unlink = init_wrapper, close_wrapper, unlink_wrapper
    _hook_status("multiprocessing.shared_memory", "applied", None)


def _mapping(shm):
    """(start, end) of the buffer's mapping here. The address comes from its
    memoryview through a ctypes object that is gone before this returns, so
    that the target's shm.close() finds no buffer export left behind."""
    import ctypes  # here, not at start-up: only processes with buffers need it

    start = ctypes.addressof(ctypes.c_char.from_buffer(shm.buf))
    length = len(shm._mmap)
    return start, start + -(-length // numa().PAGE_SIZE) * numa().PAGE_SIZE


def _opened(shm, create):
    start, end = _mapping(shm)
    index = len(_known)
    fields = dict(name=shm.name, size=shm.size, index=index, start=start, end=end)
    _known.append(fields)
    _open[index] = shm
    calls.shm_index[id(shm._mmap)] = index
    journal.buffer_event("shm", op="create" if create else "attach", **fields)
    mitigate = sys.modules.get(__package__ + ".mitigate")  # (imported only where a mitigation is asked for: mp.py)
    if create and mitigate is not None and "first-touch" in mitigate.active:
        mitigate.first_touch(shm)  # before anyone touches it; the reading below shows where it put the pages
    _placement(index, "create" if create else "attach")


def _placement(index, when):
    fields = _known[index]
    found = numa().placement(fields["start"], fields["end"])
    if found is not None:
        journal.buffer_event("placement", name=fields["name"], index=index, when=when, **found)
    return found


def open_placement():
    """Pages per node of every buffer mapped here now ({node: pages}, sampled
    pages scaled up): where a writer started now finds its buffers."""
    total = {}
    for index, shm in list(_open.items()):
        if getattr(shm, "_mmap", None) is None:
            continue
        fields = _known[index]
        found = numa().placement(fields["start"], fields["end"]) or {}
        for node, count in (found.get("nodes") or {}).items():
            total[int(node)] = total.get(int(node), 0) + count * found.get("stride", 1)
    return total


def _measure_unlinking(shm):
    for index, held in list(_open.items()):
        if held is shm and getattr(shm, "_mmap", None) is not None:
            _placement(index, "unlink")


def _measure_closing(shm):
    for index, held in list(_open.items()):
        if held is shm:
            if getattr(shm, "_mmap", None) is not None:
                _placement(index, "end")
                calls.shm_index.pop(id(shm._mmap), None)
            del _open[index]


def at_exit():
    """Buffers still mapped when the process ends: their last placement."""
    for index in list(_open):
        _placement(index, "end")
    _open.clear()


def after_fork():
    """A forked child maps its parent's buffers too: journal them as inherited."""
    for index in _open:
        journal.buffer_event("shm", op="inherited", **_known[index])
