"""Specs on the entry script's functions (`__main__:fill=gen`, also its
re-run as `__mp_main__` in a spawn or forkserver child). They do not exist
when the probe starts, and no import announces them: on Python 3.12+ their
calls are observed through sys.monitoring, the function itself left as the
target wrote it. Each code object is looked at once, at its first call
(every other one's PY_START is then disabled); a spec's code, once found, is
timed from its PY_START to its PY_RETURN (a call that raises is not
journaled). Before 3.12 no such hook exists: the spec is unavailable, and
says why."""

import sys
import threading
import time

from . import calls

ENTRY_MODULES = ("__main__", "__mp_main__")

_watched = {}  # qualname -> (phase code, spec)
_timed = {}  # code object -> phase code
_tool = None
_journal = None
_local = threading.local()


def available():
    return hasattr(sys, "monitoring")


def watch(spec, qualname, code, journal, journal_hook):
    """Time the entry script's `qualname` as phase `code` from its first call on."""
    global _tool, _journal
    if not available():
        journal_hook(spec, "unavailable", "the entry script's functions are defined after the probe starts; "
                                          "Python 3.12+ observes their calls (sys.monitoring), this is %d.%d"
                     % sys.version_info[:2])
        return
    monitoring = sys.monitoring
    if _tool is None:
        for tool in (monitoring.PROFILER_ID, 3, 4):
            try:
                monitoring.use_tool_id(tool, "writerprof")
            except ValueError:  # the target's own profiler has it
                continue
            _tool, _journal = tool, journal
            monitoring.register_callback(tool, monitoring.events.PY_START, _started)
            monitoring.register_callback(tool, monitoring.events.PY_RETURN, _returned)
            break
        else:
            journal_hook(spec, "unavailable", "sys.monitoring has no tool id free")
            return
    _watched[qualname] = (code, spec)
    monitoring.set_events(_tool, monitoring.events.PY_START)
    journal_hook(spec, "applied", "observed through sys.monitoring: timed from its first call, not replaced")


def _started(code, offset):
    try:
        phase = _timed.get(code)
        if phase is None:
            found = _watched.get(code.co_qualname)
            if found is None or sys._getframe(1).f_globals.get("__name__") not in ENTRY_MODULES:
                return sys.monitoring.DISABLE  # not one of ours: never asked about again
            phase = _timed[code] = found[0]
            sys.monitoring.set_local_events(_tool, code, sys.monitoring.events.PY_RETURN)
        starts = getattr(_local, "starts", None)
        if starts is None:
            starts = _local.starts = []
        starts.append((code, time.monotonic_ns()))
    except Exception:  # never the target's problem
        return None


def _returned(code, offset, value):
    try:
        end = time.monotonic_ns()
        starts = getattr(_local, "starts", None) or []
        for at in range(len(starts) - 1, -1, -1):  # this code's latest start (a call that raised left its own)
            if starts[at][0] is code:
                start = starts[at][1]
                del starts[at:]
                break
        else:
            return
        _journal.record((_timed[code], 0, -1, -1, calls.writer_seq, threading.get_native_id(), start, end, -1, 0, 0))
    except Exception:
        pass
