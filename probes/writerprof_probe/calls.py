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
_pack = None  # format.CHUNK.pack, bound when a thread first times a call
_resource = None


def _thread_usage():
    global _resource
    if _resource is None:
        import resource  # once something is timed, not at start-up

        _resource = resource
    return _resource.getrusage(_resource.RUSAGE_THREAD)


def _load_getcpu():
    global _getcpu
    if _getcpu is None:
        import ctypes  # only once something is timed: it costs start-up

        _getcpu = ctypes.CDLL(None).sched_getcpu
    return _getcpu


class _Thread:
    """Per-thread state: the phases of the hooked calls in progress (a
    tuple, outermost first: set and restored around a call, so that no list
    grows and shrinks per call), the fault counters at the
    last reading (so that every fault lands on exactly one record), and the
    CPU at the last reading and when it is due again: sched_getcpu through
    ctypes costs several hundred ns, so a thread reads it at most once per
    CPU_READ_NS and its records in between carry that reading."""

    __slots__ = ("phases", "tid", "minflt", "majflt", "cpu", "cpu_due")

    def __init__(self):
        self.phases = ()
        self.tid = _thread.get_native_id()
        usage = _thread_usage()
        self.minflt, self.majflt = usage.ru_minflt, usage.ru_majflt
        self.cpu = _load_getcpu()()
        self.cpu_due = _now() + format.CPU_READ_NS

    def faults(self):
        usage = _thread_usage()
        minflt, majflt = usage.ru_minflt - self.minflt, usage.ru_majflt - self.majflt
        self.minflt, self.majflt = usage.ru_minflt, usage.ru_majflt
        return minflt, majflt


def _new_thread_state():
    global _pack
    _pack = format.CHUNK.pack  # struct costs start-up: imported once something is timed
    state = _tls.state = _Thread()
    return state


def reset_after_fork():
    """In a forked child: its one thread starts a new state (its tid, its
    faults). The thread-local itself stays: the wrappers hold it."""
    try:
        del _tls.state
    except AttributeError:
        pass
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

    __slots__ = ("name", "phase", "describe", "accept")

    def __init__(self, name, phase, describe, accept=None):
        self.name, self.phase, self.describe, self.accept = name, phase, describe, accept

    def fail(self, exc):
        """A fault of ours, never of the target: say so once (its wrapper
        stands aside from then on)."""
        try:
            journal.event("error", where=self.name, error="%s: %s" % (type(exc).__name__, exc))
        except Exception:
            pass


def timed(fn, hook):
    """fn, timed into a CHUNK record per call. A call inside another call of
    the same phase (write_chunk -> os.write) is the outer one's: not recorded.

    The hot path (<= 1 us a call, benchmarks/probe_overhead.py): the hook's
    phase, describe and accept, the constants and the module's containers
    are bound here, once, as closure cells, and so is `on` (a hook that
    failed stands aside); only the thread's state and the journal (set by
    activate(), replaced in tests) are looked up per call. The record is
    queued inline, not through a method call (on 3.9 and 3.10 a Python call
    costs ~100 ns), and whether a batch is due is asked at the thread's CPU
    readings only."""
    phase, describe, accept = hook.phase, hook.describe, hook.accept
    fault_read_min_ns, cpu_read_ns = format.FAULT_READ_MIN_NS, format.CPU_READ_NS
    now, tls, seq = _now, _tls, writer_seq
    own = (phase,)  # () + own is own: the outermost call makes no tuple
    on = True

    def wrapper(*args, **kwargs):
        nonlocal on
        if not on or (accept is not None and not accept(args)):
            return fn(*args, **kwargs) if kwargs else fn(*args)
        try:
            state = tls.state
        except AttributeError:  # this thread's first timed call
            try:
                state = _new_thread_state()
            except Exception as exc:
                on = False
                hook.fail(exc)
                return fn(*args, **kwargs) if kwargs else fn(*args)
        outer = state.phases
        if phase in outer:
            return fn(*args, **kwargs) if kwargs else fn(*args)
        state.phases = outer + own
        result = None
        t0 = now()
        try:
            result = fn(*args, **kwargs) if kwargs else fn(*args)
            return result
        finally:
            t1 = now()
            state.phases = outer
            try:
                buffer, nbytes = describe(args, result)
                if t1 - t0 >= fault_read_min_ns:
                    minflt, majflt = state.faults()
                else:
                    minflt = majflt = 0
                if t1 >= state.cpu_due:  # and, as rarely, whether a batch is due
                    state.cpu, state.cpu_due = _getcpu(), t1 + cpu_read_ns
                    journal.flush_if_due(t1)
                depth = len(outer) if outer else 0  # the builtin call only where nested
                journal.records.append(_pack(phase, depth, state.cpu, buffer, seq[0], state.tid, t0, t1, nbytes,
                                             minflt, majflt))
            except Exception as exc:
                on = False
                hook.fail(exc)

    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(fn, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = fn
    return wrapper


_BUFFERS = (memoryview, bytearray, bytes)  # bound once: built per call it costs ~100 ns


def describe_args(args, result):
    """For spec hooks: the first buffer argument's index and size; the bytes
    are the call's int result where it returns one (a write's count)."""
    buffer, nbytes = -1, -1
    for arg in args:
        kind = type(arg)  # the exact types first: cheaper than isinstance
        if kind is memoryview:  # (which cannot be subclassed)
            buffer, nbytes = buffer_of(arg), arg.nbytes
            break
        if kind is bytearray or kind is bytes or isinstance(arg, _BUFFERS):
            nbytes = len(arg)
            break
    if type(result) is int:
        nbytes = result
    return buffer, nbytes
