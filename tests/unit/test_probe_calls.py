"""The probe's hot path: the timing wrapper, its CPU reading and the os hooks'
fd bookkeeping, in this process."""

import os
import sys

import numpy as np
import pytest

from writerprof.probes.writerprof_probe import calls, osio
from writerprof.probes.writerprof_probe import format as journal_format
from writerprof.probes.writerprof_probe import journal as journal_module
from writerprof.probes.writerprof_probe.journal import Journal

DTYPE = np.dtype([(name, "<" + kind) for name, kind in journal_format.CHUNK_FIELDS])


@pytest.fixture
def journal(tmp_path, monkeypatch):
    journal = Journal(str(tmp_path), "h")
    journal.open(os.getpid(), 1)
    monkeypatch.setattr(calls, "journal", journal)
    monkeypatch.setattr(calls, "_tls", calls._thread._local())  # a fresh thread state
    return journal


def records(journal):
    journal.flush()
    return np.fromfile(journal.base + journal_format.CHUNKS_SUFFIX, dtype=DTYPE)


def test_the_cpu_is_read_once_per_cpu_read_ns_and_carried_in_between(journal, monkeypatch):
    clock = iter(range(0, 10**9, 10_000))  # every reading 10 us after the one before
    readings = iter(range(100))
    monkeypatch.setattr(calls, "_now", lambda: next(clock))
    monkeypatch.setattr(calls, "_load_getcpu", lambda: lambda: next(readings))
    monkeypatch.setattr(calls, "_getcpu", lambda: next(readings))
    hooked = calls.timed(lambda: None, calls.Hook("t", 40, calls.describe_args))
    for _ in range(12):
        hooked()
    cpus = records(journal)["cpu"].tolist()
    # Read when the thread's state is made (t=0), then at the end of the first
    # call >= 100 us after the last reading: the 5th call (ends at 100 us), the 10th.
    assert cpus == [0] * 4 + [1] * 5 + [2] * 3
    assert journal_format.CPU_READ_NS == 100_000


def test_a_timed_call_is_one_record_of_its_fields(journal, monkeypatch):
    clock = iter(range(1000, 10**9, 1000))
    monkeypatch.setattr(calls, "_now", lambda: next(clock))
    monkeypatch.setattr(calls, "_load_getcpu", lambda: lambda: 3)
    monkeypatch.setattr(calls, "writer_seq", 2)
    hooked = calls.timed(lambda data: 4096, calls.Hook("t", 40, calls.describe_args))
    assert hooked(bytearray(10)) == 4096
    journal.record((41, 1, 2, 7, 0, 99, 1000, 2000, 4096, 5, 1))  # the same record, from its fields
    got = records(journal).tolist()
    # the thread's state read the clock at 1000 (its CPU reading), the call at 2000 and 3000
    assert got == [(40, 0, 3, -1, 2, calls._thread.get_native_id(), 2000, 3000, 4096, 0, 0),
                   (41, 1, 2, 7, 0, 99, 1000, 2000, 4096, 5, 1)]


def test_a_batch_is_written_at_a_cpu_reading_once_enough_records_are_queued(journal, monkeypatch):
    monkeypatch.setattr(journal_module, "_FLUSH_RECORDS", 3)
    clock = iter(range(0, 10**9, 10_000))  # calls end 20 us apart, the first at 20 us
    monkeypatch.setattr(calls, "_now", lambda: next(clock))
    monkeypatch.setattr(calls, "_load_getcpu", lambda: lambda: 0)
    monkeypatch.setattr(calls, "_getcpu", lambda: 0)
    hooked = calls.timed(lambda: None, calls.Hook("t", 40, calls.describe_args))
    written = []
    for _ in range(10):
        hooked()
        chunks = journal.base + journal_format.CHUNKS_SUFFIX  # (made at the first batch)
        written.append(len(np.fromfile(chunks, dtype=DTYPE)) if os.path.exists(chunks) else 0)
    # CPU readings at the 5th and 10th call (100 us apart): the records queued before each go out
    assert written == [0] * 4 + [4] * 5 + [9]


def test_a_call_inside_one_of_the_same_phase_is_the_outer_ones(journal):
    inner = calls.timed(lambda data: len(data), calls.Hook("inner", 40, calls.describe_args))
    other = calls.timed(lambda data: inner(data), calls.Hook("other", 41, calls.describe_args))
    outer = calls.timed(lambda data: other(data), calls.Hook("outer", 40, calls.describe_args))
    assert outer(b"abc") == 3
    got = records(journal)
    assert got["phase"].tolist() == [41, 40] and got["depth"].tolist() == [1, 0]
    assert got["bytes"].tolist() == [3, 3]  # the int result


def test_a_hook_that_cannot_start_stands_aside_and_the_call_goes_through(journal, monkeypatch):
    def no_cpu():
        raise OSError("no sched_getcpu here")

    monkeypatch.setattr(calls, "_load_getcpu", no_cpu)
    events = []
    monkeypatch.setattr(journal, "event", lambda kind, **fields: events.append((kind, fields)))
    hook = calls.Hook("t", 40, calls.describe_args)
    hooked = calls.timed(lambda x: x + 1, hook)
    assert hooked(1) == 2 and hooked(2) == 3
    assert [kind for kind, _ in events] == ["error"]  # once: the second call did not try again


class Bytes(bytes):
    pass


@pytest.mark.parametrize("args, described", [
    ((memoryview(b"12345"),), (-1, 5)),
    ((object(), bytearray(3), b"1234567"), (-1, 3)),  # the first buffer argument
    ((Bytes(b"12"),), (-1, 2)),  # a subclass counts
    ((1, "text"), (-1, -1)),
])
def test_describe_args_finds_the_first_buffer(args, described):
    assert calls.describe_args(args, None) == described
    assert calls.describe_args(args, 11) == (described[0], 11)


def test_a_shared_memory_view_names_its_buffer(monkeypatch):
    backing = bytearray(8)
    monkeypatch.setitem(calls.shm_index, id(backing), 4)
    assert calls.describe_args((memoryview(backing),), None) == (4, 8)


def test_a_shared_memory_view_names_its_buffer_in_the_wrappers_too(journal, monkeypatch, tmp_path):
    # The describes' view lookup is pasted into the hot wrappers (calls.VIEW_BUFFER): the records say the same.
    backing, other = bytearray(8), bytearray(8)
    monkeypatch.setitem(calls.shm_index, id(backing), 4)
    monkeypatch.setattr(osio, "_fd_state", {})
    monkeypatch.setattr(osio, "_fd_state_get", osio._fd_state.get)
    monkeypatch.setattr(osio, "_written_fds", set())
    spec = calls.timed(lambda data: None, calls.Hook("t", 40, calls.describe_args))
    write = calls.timed(os.write, calls.Hook("os:write=write", 4, osio._describe_write, osio._accept_write))
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    try:
        spec(memoryview(backing)[2:5])
        spec(memoryview(other))
        write(fd, memoryview(backing)[:3])
        write(fd, memoryview(other))
        write(fd, b"x")
    finally:
        os.close(fd)
    got = records(journal)[["phase", "buffer", "bytes"]].tolist()
    assert got == [(40, 4, 3), (40, -1, 8), (4, 4, 3), (4, -1, 8), (4, -1, 1)]
    released = memoryview(backing)
    released.release()
    assert calls.view_buffer(released) == -1 and calls.buffer_of(b"x") == -1


def test_a_wrapper_fails_on_keywords_with_the_wrapped_builtins_own_message(journal):
    write = calls.timed(os.write, calls.Hook("os:write=write", 4, osio._describe_write, osio._accept_write))
    messages = []
    for call in (os.write, write):
        with pytest.raises(TypeError) as raised:
            call(1, data=b"x")
        messages.append(str(raised.value))
    assert messages[0] == messages[1]
    spec = calls.timed(lambda data, size=0: size, calls.Hook("t", 40, calls.describe_args))
    assert spec(b"x", size=3) == 3


def test_writes_are_timed_on_files_only_and_a_written_files_close_too(tmp_path, monkeypatch):
    monkeypatch.setattr(osio, "_fd_state", {})
    monkeypatch.setattr(osio, "_fd_state_get", osio._fd_state.get)
    monkeypatch.setattr(osio, "_written_fds", set())
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT)
    read_end, write_end = os.pipe()
    try:
        assert osio._accept_fd((fd,)) and not osio._accept_fd((write_end,))
        assert not osio._accept_close((fd,))  # a file never written: its close is not a writer's
        assert osio._accept_write((fd, b"x")) and osio._accept_write((fd, b"x"))
        assert not osio._accept_write((write_end, b"x")) and not osio._accept_write(())
        assert osio._accept_close((fd,)) and not osio._accept_close((write_end,))
        assert fd not in osio._fd_state and fd not in osio._written_fds  # closed: its number may come back as anything
        osio._accept_write((fd, b"x"))
        osio._forget(fd)  # reissued by os.open/dup
        assert not osio._accept_close((fd,))
        assert not osio._accept_fd((10**6,)) and 10**6 not in osio._fd_state  # a bad fd is not cached
    finally:
        for end in (fd, read_end, write_end):
            os.close(end)


def _names(code):
    """Every local, cell and free name of code and of the code inside it."""
    inner = (const for const in code.co_consts if hasattr(const, "co_varnames"))
    return frozenset(code.co_varnames + code.co_cellvars + code.co_freevars).union(*map(_names, inner))


def test_the_names_inlined_sources_may_not_use_are_the_wrappers():
    source = calls._TEMPLATE.format(names="", accept="", describe=" " * 16 + "pass", **calls._PARAMS)
    code = compile(source, "", "exec")
    assert _names(code) - {"args", "result", "buffer", "nbytes"} == calls._WRAPPER_NAMES
    with pytest.raises(ValueError, match="state"):
        calls.inline("clashing", {}, "buffer, nbytes", "state = buffer = nbytes = -1")


def test_a_hook_records_the_same_with_its_describe_and_accept_inlined_or_called(journal, monkeypatch):
    clock = iter(range(1000, 10**9, 1000))
    monkeypatch.setattr(calls, "_now", lambda: next(clock))
    monkeypatch.setattr(calls, "_load_getcpu", lambda: lambda: 3)
    scope = {"limit": 2}
    accept = calls.inline("accept", scope, "len(args) <= limit", names=("limit",))
    describe = calls.inline("describe", scope, "count, result", "count = len(args)  # buffer: the count",
                            names=("limit",))  # both name limit: bound once
    called = calls.Hook("called", 40, lambda args, result: describe(args, result), lambda args: accept(args))
    inlined = calls.Hook("inlined", 41, describe, accept)
    for hook in (called, inlined):
        hooked = calls.timed(lambda *args, **kwargs: sum(args) + len(kwargs), hook)
        assert hooked(1, 2) == 3 and hooked(1, 2, 3) == 6 and hooked(5, x=1) == 6  # the second not accepted
    got = records(journal)[["phase", "buffer", "bytes"]].tolist()
    assert got == [(40, 2, 3), (40, 1, 6), (41, 2, 3), (41, 1, 6)]
    assert calls._inlined(inlined) == (accept.inline, describe.inline) and calls._inlined(called) == (None, None)


def test_a_source_is_compiled_once_and_its_code_loaded_after(tmp_path, monkeypatch):
    monkeypatch.setattr(calls, "_CACHE", str(tmp_path / "__pycache__"))
    compiled = []
    real_compile = compile
    monkeypatch.setattr(calls, "compile", lambda *args: compiled.append(args[0]) or real_compile(*args),
                        raising=False)
    namespace = {}
    exec(calls._compiled("x = 1\n", "t"), namespace)
    exec(calls._compiled("x = 1\n", "t"), namespace)  # from the cache
    assert namespace["x"] == 1 and compiled == ["x = 1\n"]
    exec(calls._compiled("x = 2\n", "t"), namespace)  # another source under that name: compiled again
    exec(calls._compiled("x = 2\n", "t"), namespace)
    assert namespace["x"] == 2 and compiled == ["x = 1\n", "x = 2\n"]
    assert [p.name for p in (tmp_path / "__pycache__").iterdir()] == ["t.%s.marshal" % sys.implementation.cache_tag]
    (tmp_path / "__pycache__" / os.listdir(tmp_path / "__pycache__")[0]).write_bytes(b"torn")
    exec(calls._compiled("x = 3\n", "t"), namespace)  # a torn cache is only a compile
    assert namespace["x"] == 3
    monkeypatch.setattr(calls, "_CACHE", "/proc/no-such-dir")  # one that cannot be written: only a compile
    exec(calls._compiled("x = 4\n", "t"), namespace)
    assert namespace["x"] == 4
