"""Timing hooked calls: the hot path. Each call of a hooked function becomes
one CHUNK record (phase, depth, CPU, buffer, times, bytes, page faults)."""

import _thread
import marshal
import os
import sys
import time

from . import format

_now = time.monotonic_ns
_tls = _thread._local()

journal = None  # set by activate()
# The index of the writer this process started last (mp.py): an int global,
# read per call (~15 ns less than a list's item on 3.9).
writer_seq = -1
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
    grows and shrinks per call), the fault counters at the last reading and
    when the next call's start reads them again (faults_due: a call's
    faults are those inside it, not the thread's work between calls), and
    `carry`, what every call reads: (when the CPU is due, the CPU at the last
    reading, the thread's id), one tuple rather than three attributes (each
    costs ~20 ns on 3.9). sched_getcpu through ctypes costs several hundred
    ns, so a thread reads it at most once per CPU_READ_NS and its records in
    between carry that reading."""

    __slots__ = ("phases", "carry", "minflt", "majflt", "faults_due")

    def __init__(self):
        self.phases = ()
        usage = _thread_usage()
        self.minflt, self.majflt = usage.ru_minflt, usage.ru_majflt
        now = _now()
        self.faults_due = now + format.FAULT_READ_MIN_NS
        self.carry = (now + format.CPU_READ_NS, _load_getcpu()(), _thread.get_native_id())

    def faults(self):
        usage = _thread_usage()
        minflt, majflt = usage.ru_minflt - self.minflt, usage.ru_majflt - self.majflt
        self.minflt, self.majflt = usage.ru_minflt, usage.ru_majflt
        return minflt, majflt

    def skip_faults(self, t0, fault_read_min_ns):
        """At the start of a call FAULT_READ_MIN_NS or more after the last
        reading: the faults since are not the call's (a copy between calls)."""
        self.faults()
        self.faults_due = t0 + fault_read_min_ns

    def read(self, t0, t1, fault_read_min_ns, cpu_read_ns):
        """At the end of a call that was long or ends when the CPU is due:
        its (minflt, majflt, cpu): the faults where it was long, else zeros;
        the CPU read where due, and then, as rarely, whether a batch is due."""
        if t1 - t0 >= fault_read_min_ns:
            minflt, majflt = self.faults()
            self.faults_due = t1 + fault_read_min_ns
        else:
            minflt = majflt = 0
        due, cpu, tid = self.carry
        if t1 >= due:
            cpu = _getcpu()
            self.carry = (t1 + cpu_read_ns, cpu, tid)
            journal.flush_if_due(t1)
        return minflt, majflt, cpu


def _new_thread_state():
    global _pack
    _pack = format.CHUNK.pack  # struct costs start-up: imported once something is timed
    state = _tls.state = _Thread()
    return state


def reset_after_fork():
    """In a forked child: its one thread starts a new state (its tid, its
    faults). The thread-local itself stays: the wrappers hold it."""
    global writer_seq
    try:
        del _tls.state
    except AttributeError:
        pass
    writer_seq = -1


def buffer_of(data):
    """Index of the shared-memory buffer a memoryview reads, or -1."""
    return view_buffer(data) if type(data) is memoryview else -1


_shm_index_get = shm_index.get  # (shm_index is never replaced)
# `buffer` of the memoryview `view`: pasted in the describes that take one
# (a writer's view of its buffer: a call of view_buffer costs ~100 ns on 3.9
# and 3.10), and view_buffer's body.
VIEW_BUFFER = """
    try:
        buffer = _shm_index_get(id(view.obj), -1)
    except ValueError:  # released
        buffer = -1
"""


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


def inline(name, scope, returns, body="", names=(), doc=None):
    """A function that timed() can also paste into its wrappers: on 3.9 and
    3.10 a Python call costs ~100 ns, as much as all else a describe or an
    accept does. Called, it is `def name(args[, result]): body; return
    returns` in the module whose globals are `scope`. Pasted, `body` runs in
    the wrapper and `returns` is the expression it reads; `names`, the
    module's globals that the source reads, are bound once, as the wrapper's
    closure cells. An accept has no body (`returns` is the whole test) and
    takes `args`; a describe's body sets `buffer` and `nbytes` from `args` and
    `result`, and returns them."""
    params = "args, result" if body else "args"
    namespace = {}
    where = "%s.%s" % (scope.get("__name__"), name)
    exec(_compiled("def %s(%s):\n%s    return %s\n" % (name, params, _indent(body, 4), returns), where),
         scope, namespace)
    fn = namespace[name]
    clash = (set(fn.__code__.co_varnames) | set(names)) & _WRAPPER_NAMES
    if clash:
        raise ValueError("%s names %s, as the wrappers do" % (name, ", ".join(sorted(clash))))
    fn.__doc__ = doc
    fn.inline = (returns, body, tuple(names), where)
    return fn


_CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__")


def _compiled(source, name):
    """compile(source), kept beside the probe's bytecode: a process's first
    compile() costs ~10M instructions (~2 ms: the compiler's own set-up),
    more than the rest of the probe's start-up, so the first probed process
    of an interpreter compiles each source and later ones load its code.
    Nothing here may fail: a cache that cannot be read or written is only
    a compile."""
    tag = sys.implementation.cache_tag
    path = os.path.join(_CACHE, "%s.%s%s.marshal" % (name, tag, ".opt-%d" % sys.flags.optimize
                                                       if sys.flags.optimize else ""))
    try:
        with open(path, "rb") as cached:
            cached_source, code = marshal.loads(cached.read())
        if cached_source == source:
            return code
    except Exception:  # none yet, or another probe version's, or torn
        pass
    # Under a file name of the probe's own: a stack's reader tells these frames for the probe's by it.
    code = compile(source, "%s%s>" % (format.COMPILED_FILE_PREFIX, name), "exec")
    if tag is not None:
        partial = "%s.%d.tmp" % (path, os.getpid())
        try:
            os.makedirs(_CACHE, exist_ok=True)
            with open(partial, "wb") as cache:
                cache.write(marshal.dumps((source, code)))
            os.replace(partial, path)  # whole or not at all, for the processes starting with this one
        except Exception:  # read-only, full, racing: the next process tries again
            try:
                os.unlink(partial)
            except OSError:
                pass
    return code


def _indent(body, spaces):
    """body's lines at `spaces` more indentation than its first line's."""
    lines = [line for line in body.splitlines() if line.strip()]
    margin = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    return "".join(" " * spaces + line[margin:] + "\n" for line in lines)


# The wrapper, made per kind of hook (timed below): {accept} is empty (no
# accept), a call of the hook's accept, or its source; {describe} a call of
# the hook's describe, or its source; {params} and {call}, _PARAMS.
_TEMPLATE = """
def make(fn, hook, describe, accept, now, tls, fault_read_min_ns, cpu_read_ns{names}):
    phase = hook.phase
    own = (phase,)  # the outermost call's phases: made once, not per call
    on = True

    def wrapper({params}):
        nonlocal on
        if not on{accept}:
            return {call}
        try:
            state = tls.state
        except AttributeError:  # this thread's first timed call
            try:
                state = _new_thread_state()
            except Exception as exc:
                on = False
                hook.fail(exc)
                return {call}
        outer = state.phases
        if outer:  # nested: the outermost call, most calls, neither searches nor adds
            if phase in outer:
                return {call}
            state.phases = outer + own
        else:
            state.phases = own
        result = None
        t0 = now()
        if t0 >= state.faults_due:  # (inside the call's time: ~1 us, at most once per fault_read_min_ns)
            state.skip_faults(t0, fault_read_min_ns)
        try:
            result = {call}
            return result
        finally:
            t1 = now()
            state.phases = outer
            try:
{describe}
                due, cpu, tid = state.carry
                if t1 >= due or t1 - t0 >= fault_read_min_ns:
                    minflt, majflt, cpu = state.read(t0, t1, fault_read_min_ns, cpu_read_ns)
                else:
                    minflt = majflt = 0
                journal.records.append(_pack(phase, len(outer) if outer else 0, cpu, buffer, writer_seq, tid,
                                             t0, t1, nbytes, minflt, majflt))  # len() only where nested
            except Exception as exc:
                on = False
                hook.fail(exc)

    return wrapper
"""
# Every wrapper takes **kwargs (a dict per call, ~30 ns on 3.9), even one
# around a positional-only builtin (os.write): a call with keywords must fail
# with the builtin's own message, not the wrapper's.
_PARAMS = {"params": "*args, **kwargs", "call": "fn(*args, **kwargs) if kwargs else fn(*args)"}
_makers = {}  # (whether there is an accept, the inlined sources) -> make
# The names in _TEMPLATE but those an inlined source shares with it (args,
# result, buffer, nbytes): what it may not name (tests/unit/test_probe_calls.py
# checks this against the template).
_WRAPPER_NAMES = frozenset((
    "fn", "hook", "describe", "accept", "now", "tls", "fault_read_min_ns", "cpu_read_ns", "phase",
    "own", "on", "wrapper", "kwargs", "state", "exc", "outer", "t0", "t1", "due", "cpu", "tid", "minflt", "majflt"))


def _inlined(hook):
    """The inline sources of a hook's accept and describe, pasted only where
    its describe has one: inlining pays on the hot hooks (writes, spec
    hooks); every other kind of hook shares the one wrapper that calls both,
    so that a process makes only two at start-up (from _compiled's cache)."""
    describe = getattr(hook.describe, "inline", None)
    return (getattr(hook.accept, "inline", None) if describe else None), describe


def _maker(hook):
    accept, describe = _inlined(hook)
    key = (hook.accept is not None, accept, describe)
    make = _makers.get(key)
    if make is None:
        names = dict.fromkeys(name for part in (accept, describe) if part for name in part[2])
        if accept:
            test = " or not (%s)" % accept[0]
        else:
            test = " or not accept(args)" if hook.accept is not None else ""
        returns, body = describe[:2] if describe else ("describe(args, result)", "")
        source = _indent(body, 16) + ("" if returns == "buffer, nbytes" else _indent("buffer, nbytes = " + returns, 16))
        code = _compiled(_TEMPLATE.format(names="".join(", " + name for name in names), accept=test,
                                          describe=source.rstrip("\n"), **_PARAMS),
                         "timed-%s-%s" % (accept[3] if accept else "call" if hook.accept is not None else "all",
                                            describe[3] if describe else "call"))
        namespace = {}
        exec(code, globals(), namespace)
        make = _makers[key] = namespace["make"]
    return make


def timed(fn, hook):
    """fn, timed into a CHUNK record per call. A call inside another call of
    the same phase (write_chunk -> os.write) is the outer one's: not recorded.

    The hot path (<= 1 us a call, benchmarks/probe_overhead.py): the wrapper
    is made from _TEMPLATE per kind of hook (compiled once per interpreter:
    _compiled), without an accept test where the hook has none, with its
    describe and accept pasted in where made by inline() (on 3.9 and 3.10 a
    Python call costs ~100 ns); the hook's phase, describe and accept, the
    constants, the module's containers and the inlined sources' names are
    bound here, once, as closure cells, and so is `on` (a hook that failed
    stands aside); only the thread's state, the journal (set by activate(),
    replaced in tests) and writer_seq are looked up per call. The record is
    queued inline, not through a method call (3.11+ specialise the append
    itself), and the CPU, faults and whether a batch is due are read at the
    thread's CPU readings and after long calls only (_Thread.read), the
    faults also before a call begun FAULT_READ_MIN_NS or more after their
    last reading (_Thread.skip_faults: at most one reading per that time)."""
    bound = {}  # the inlined sources' names, each from the globals of the source that names it
    for part, inlined in zip((hook.accept, hook.describe), _inlined(hook)):
        for name in inlined[2] if inlined else ():
            if bound.setdefault(name, part.__globals__[name]) is not part.__globals__[name]:
                raise ValueError("%s: the accept's and the describe's %s differ" % (hook.name, name))
    # Positional-only where the describe is pasted in: on the hot hooks (the
    # others share one wrapper, as _inlined says).
    wrapper = _maker(hook)(fn, hook, hook.describe, hook.accept, _now, _tls,
                                       format.FAULT_READ_MIN_NS, format.CPU_READ_NS, **bound)
    return disguised(wrapper, fn)


def disguised(wrapper, fn):
    """wrapper, named as fn is (module, name, qualname, doc) and wrapping it."""
    for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
        try:
            setattr(wrapper, attr, getattr(fn, attr))
        except (AttributeError, TypeError):
            pass
    wrapper.__wrapped__ = fn
    return wrapper


def stand_in(owner, name, wrapper):
    """Put wrapper in place of owner.NAME, and of the same function in the
    module it names as its own (os.write is posix.write): pickle finds a
    function by that module and name, and must find the wrapper there, or
    pickle.dumps(os.write) fails in the target where it works plainly."""
    fn = getattr(owner, name)
    setattr(owner, name, wrapper)
    home = sys.modules.get(getattr(fn, "__module__", None) or "")
    if home is not None and home is not owner and getattr(home, name, None) is fn:
        setattr(home, name, wrapper)


def _view_buffer():
    namespace = {}
    exec(_compiled("def view_buffer(view):\n%s    return buffer\n" % _indent(VIEW_BUFFER, 4),
                   "%s.view_buffer" % __name__), globals(), namespace)
    fn = namespace["view_buffer"]
    fn.__doc__ = """buffer_of a memoryview, where the caller has checked that it is one."""
    return fn


view_buffer = _view_buffer()

_BUFFERS = (memoryview, bytearray, bytes)  # bound once: built per call it costs ~100 ns


describe_args = inline("describe_args", globals(), "buffer, nbytes", """
    buffer = nbytes = -1
    for arg in args:
        kind = type(arg)  # the exact types first: cheaper than isinstance
        if kind is memoryview:  # (which cannot be subclassed)
            view = arg
%s            nbytes = arg.nbytes
            break
        if kind is bytearray or kind is bytes or isinstance(arg, _BUFFERS):
            nbytes = len(arg)
            break
    if result is not None and type(result) is int:  # None, most writers', without a type() call
        nbytes = result
""" % _indent(VIEW_BUFFER, 12), names=("_shm_index_get",), doc="""For spec hooks: the first buffer argument's index and size; the bytes
    are the call's int result where it returns one (a write's count).""")
