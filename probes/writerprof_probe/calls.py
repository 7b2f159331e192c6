"""Timing hooked calls: the hot path. Each call of a hooked function becomes
one CHUNK record (phase, depth, CPU, buffer, times, bytes, page faults)."""

import _thread
import time

from . import format

_now = time.monotonic_ns
_tls = _thread._local()

journal = None  # set by activate()
writer_seq = [-1]  # index of the writer this process started last
shm_index = {}  # id(mmap of a SharedMemory) -> its index in this process
_getcpu = None
_resource = None


def _thread_usage():
    global _resource
    if _resource is None:
        import resource  # once something is timed, not at start-up

        _resource = resource
    return _resource.getrusage(_resource.RUSAGE_THREAD)


def _cpu():
    global _getcpu
    if _getcpu is None:
        import ctypes  # only once something is timed: it costs start-up

        _getcpu = ctypes.CDLL(None).sched_getcpu
    return _getcpu()


class _Thread:
    """Per-thread state: hooked phases in progress, and the fault counters
    at the last reading (so that every fault lands on exactly one record)."""

    __slots__ = ("stack", "tid", "minflt", "majflt")

    def __init__(self):
        self.stack = []
        self.tid = _thread.get_native_id()
        usage = _thread_usage()
        self.minflt, self.majflt = usage.ru_minflt, usage.ru_majflt

    def faults(self):
        usage = _thread_usage()
        minflt, majflt = usage.ru_minflt - self.minflt, usage.ru_majflt - self.majflt
        self.minflt, self.majflt = usage.ru_minflt, usage.ru_majflt
        return minflt, majflt


def _thread_state():
    try:
        return _tls.state
    except AttributeError:
        state = _tls.state = _Thread()
        return state


def reset_after_fork():
    global _tls
    _tls = _thread._local()
    writer_seq[0] = -1


def buffer_of(data):
    """Index of the shared-memory buffer a memoryview reads, or -1."""
    if type(data) is memoryview:
        try:
            return shm_index.get(id(data.obj), -1)
        except ValueError:  # released
            return -1
    return -1


class Hook:
    """One hooked callable. `describe(args, result)` -> (buffer, bytes);
    `accept(args)`, when set, says whether this call is one to time."""

    __slots__ = ("name", "phase", "on", "describe", "accept")

    def __init__(self, name, phase, describe, accept=None):
        self.name, self.phase, self.describe, self.accept = name, phase, describe, accept
        self.on = True

    def fail(self, exc):
        """A fault of ours, never of the target: say so once and stand aside."""
        self.on = False
        try:
            journal.event("error", where=self.name, error="%s: %s" % (type(exc).__name__, exc))
        except Exception:
            pass


def timed(fn, hook):
    """fn, timed into a CHUNK record per call. A call inside another call of
    the same phase (write_chunk -> os.write) is the outer one's: not recorded."""

    def wrapper(*args, **kwargs):
        if not hook.on or (hook.accept is not None and not hook.accept(args)):
            return fn(*args, **kwargs)
        state = _thread_state()
        stack = state.stack
        phase = hook.phase
        if phase in stack:
            return fn(*args, **kwargs)
        stack.append(phase)
        result = None
        t0 = _now()
        try:
            result = fn(*args, **kwargs)
            return result
        finally:
            t1 = _now()
            stack.pop()
            try:
                buffer, nbytes = hook.describe(args, result)
                faults = state.faults() if t1 - t0 >= format.FAULT_READ_MIN_NS else (0, 0)
                journal.record((phase, len(stack), _cpu(), buffer, writer_seq[0], state.tid,
                                t0, t1, nbytes, faults[0], faults[1]))
            except Exception as exc:
                hook.fail(exc)

    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(fn, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = fn
    return wrapper


def describe_args(args, result):
    """For spec hooks: the first buffer argument's index and size; the bytes
    are the call's int result where it returns one (a write's count)."""
    buffer, nbytes = -1, -1
    for arg in args:
        if isinstance(arg, (memoryview, bytearray, bytes)):
            buffer = buffer_of(arg)
            nbytes = arg.nbytes if type(arg) is memoryview else len(arg)
            break
    if type(result) is int:
        nbytes = result
    return buffer, nbytes
