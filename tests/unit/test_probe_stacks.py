"""The probe's stack sampler (writerprof_probe.stacks): rates, frames as
py-spy names them, counts weighted by time and carried across flushes. Its
thread, forks, exits and kills in real processes: tests/integration/test_probe_sampling.py."""

import os
import sys
import threading
import time

import pytest

from writerprof.probes.writerprof_probe import format as journal_format
from writerprof.probes.writerprof_probe import stacks
from writerprof.run.stacks import parse_line


class _Journal:
    run, host = "/nonexistent-run", "alpha"  # (a writer's first_start: as one of the first when unwritable)

    def __init__(self):
        self.written = []
        self.on_next_event = None

    def replace(self, directory, suffix, data):
        assert directory == journal_format.stacks_dir(self.run, self.host)
        self.written.append((suffix, data.decode()))
        return True


def _sampler(role="main", rates=(100, 10, 5)):
    return stacks._Sampler(_Journal(), rates, {"role": role, "ppid": 1})


@pytest.mark.parametrize("text, rates", [("100,10,5", (100, 10, 5)), ("50,50,5", (50, 50, 5)), ("", None),
                                         ("100,10", None), ("100,0,5", None), ("a,b,c", None)])
def test_rates_are_three_positive_integers(text, rates):
    assert stacks.parse_rates(text) == rates


@pytest.mark.parametrize("role, period_ms", [("main", 100), ("forkserver", 200), ("resource_tracker", 200),
                                             ("spawn_child", 10), ("forkserver_child", 10), ("fork_child", 10)])
def test_a_writer_starts_at_the_full_rate_the_daemons_at_theirs_the_rest_sparse(role, period_ms):
    sampler = _sampler(role)
    assert sampler.period_ns(stacks._now()) == period_ms * 1_000_000


def test_only_the_first_writers_of_each_parent_start_at_the_full_rate(tmp_path):
    journal = _Journal()
    journal.run = str(tmp_path)
    os.makedirs(journal_format.stacks_dir(journal.run, journal.host))
    firsts = [stacks._Sampler(journal, (100, 10, 5), {"role": "forkserver_child", "ppid": ppid}).first
              for ppid in (7, 7, 8, 7, 8, 8)]
    assert journal_format.FULL_RATE_STARTS == 2
    assert firsts == [True, True, True, False, True, False]
    later = stacks._Sampler(journal, (100, 10, 5), {"role": "spawn_child", "ppid": 7})
    assert later.period_ns(stacks._now()) == 100_000_000  # at the sparse rate from its start
    assert not stacks._Sampler(journal, (100, 10, 5), {"role": "main", "ppid": 9}).first
    assert not os.path.exists(os.path.join(journal_format.stacks_dir(journal.run, journal.host), "9.starts"))


def test_a_writers_full_rate_ends_half_a_second_into_its_target(monkeypatch):
    sampler = _sampler("fork_child")
    monkeypatch.setattr(stacks, "_sampler", [sampler])
    now = stacks._now()
    assert sampler.full_until >= now + journal_format.FULL_RATE_CAP_NS - 10**9
    stacks.target_started()
    assert sampler.full_until <= stacks._now() + journal_format.FULL_RATE_HEAD_NS
    assert sampler.period_ns(sampler.full_until + 1) == 100_000_000


def test_an_idle_process_is_sampled_ever_more_sparsely_and_at_its_rate_again_once_busy(monkeypatch):
    sampler = _sampler("main")
    cpu = {"process": 0, "thread": 0}
    monkeypatch.setattr(stacks.time, "process_time_ns", lambda: cpu["process"])
    monkeypatch.setattr(stacks.time, "thread_time_ns", lambda: cpu["thread"])
    now = stacks._now()
    periods = []
    for busy_ms in (0, 0, 0, 0, 0, 5, 0):
        cpu["thread"] += 100_000  # the sampler's own CPU is not the process's work
        cpu["process"] += 100_000 + busy_ms * 1_000_000
        sampler.pace(100_000_000)
        periods.append(sampler.period_ns(now) // 1_000_000)
    assert periods == [200, 400, 800, 800, 800, 100, 200]


def test_a_writers_full_rate_is_kept_however_idle_it_is(monkeypatch):
    sampler = _sampler("spawn_child")
    monkeypatch.setattr(stacks.time, "process_time_ns", lambda: 0)
    for _ in range(5):
        sampler.pace(10_000_000)
    assert sampler.period_ns(stacks._now()) == 10_000_000


def test_a_file_is_named_from_its_outermost_package_as_py_spy_names_it(tmp_path, monkeypatch):
    monkeypatch.setattr(stacks, "_short", {})
    monkeypatch.setattr(stacks, "_tops", {})
    package = tmp_path / "lib" / "pkg" / "sub"
    package.mkdir(parents=True)
    for where in (package.parent, package):
        (where / "__init__.py").write_text("")
    assert stacks.short_file(str(package / "mod.py")) == "pkg/sub/mod.py"
    assert stacks.short_file(str(tmp_path / "lib" / "script.py")) == "script.py"
    assert stacks.short_file("<frozen importlib._bootstrap>") == "<frozen importlib._bootstrap>"
    assert stacks.short_file(os.__file__) == "os.py"


def test_a_directory_is_looked_at_once_whatever_its_files(tmp_path, monkeypatch):
    monkeypatch.setattr(stacks, "_short", {})
    monkeypatch.setattr(stacks, "_tops", {})
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    looked = []
    exists = os.path.exists
    monkeypatch.setattr(os.path, "exists", lambda path: looked.append(path) or exists(path))
    names = [stacks.short_file(str(package / name)) for name in ("a.py", "b.py", "c.py")]
    assert names == ["pkg/a.py", "pkg/b.py", "pkg/c.py"]
    assert looked == [str(package / "__init__.py"), str(tmp_path / "__init__.py")]


def _where_sampled(sampler):
    sampler.sample(-1, 1.0)  # -1: no thread is left out, this one included
    return sys._getframe().f_lineno - 1


def test_a_sample_is_every_threads_stack_root_first_in_py_spys_raw_format():
    sampler = _sampler()
    parked, go = threading.Event(), threading.Event()

    def waiting_thread():
        parked.set()
        go.wait()

    thread = threading.Thread(target=waiting_thread)
    thread.start()
    parked.wait()
    try:
        line = _where_sampled(sampler)
    finally:
        go.set()
        thread.join()
    sampler.flush()
    [(suffix, text)] = sampler.journal.written
    assert suffix == journal_format.STACKS_SUFFIX
    parsed = [parse_line(row) for row in text.splitlines()]
    assert all(chain == [] and count == 1 for chain, _, count in parsed)
    [mine] = [frames for _, frames, _ in parsed if any(f.startswith("_where_sampled (") for f in frames)]
    at = next(i for i, f in enumerate(mine) if f.startswith("_where_sampled ("))
    assert mine[at].endswith(f"test_probe_stacks.py:{line})")
    assert mine[at - 1].startswith("test_a_sample_is_every_threads_stack_root_first_in_py_spys_raw_format (")
    assert mine[at + 1].startswith(("_Sampler.sample (", "sample (")) and mine[at + 1:] == mine[-1:]
    waiting = [frames for _, frames, _ in parsed if any("waiting_thread (" in f for f in frames)]
    assert waiting and waiting[0][-1].startswith("Condition.wait (" if sys.version_info >= (3, 11) else "wait (")
    # Each stack's root is its thread, as py-spy --threads names it: the kernel's id and the name.
    assert mine[0] == f"thread ({threading.get_native_id()}): MainThread"
    assert waiting[0][0] == f"thread ({thread.native_id}): {thread.name}"


def test_a_thread_is_named_before_threading_is_imported_and_a_name_cannot_break_the_line(monkeypatch):
    sampler = _sampler()
    # The test runner's own threads (pytest-xdist's), sampled too, either way.
    theirs = {f"thread ({t.native_id}): {t.name}" for t in threading.enumerate() if t is not threading.main_thread()}
    theirs |= {f"thread (0x{ident:x})" for ident in sys._current_frames() if ident != threading.get_ident()}
    parked, go = threading.Event(), threading.Event()
    thread = threading.Thread(target=lambda: parked.set() or go.wait(), name="a;b\nc \ud800")
    thread.start()
    parked.wait()
    try:
        sampler.sample(-1, 1.0)
        with monkeypatch.context() as patched:  # a process that has not imported threading
            patched.delitem(sys.modules, "threading")
            sampler.sample(-1, 1.0)
    finally:
        go.set()
        thread.join()
    sampler.flush()
    roots = {parse_line(row)[1][0] for row in sampler.journal.written[0][1].splitlines()}
    # The main thread's id is the pid, whether threading names it or not; another thread
    # has no name then, and is its Python ident.
    assert roots - theirs == {f"thread ({os.getpid()}): MainThread", f"thread ({thread.native_id}): a,b c \\ud800",
                              f"thread (0x{thread.ident:x})"}


@pytest.fixture
def parked():
    """A thread waiting at one place (its stack the same at every sample)."""
    go = threading.Event()
    thread = threading.Thread(target=go.wait)
    thread.start()
    yield thread
    go.set()
    thread.join()


def test_a_fork_childs_main_thread_is_named_by_the_childs_pid():
    # Before 3.12, threading keeps the parent's native_id for a fork child's main thread.
    sampler = _sampler()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            sampler.restart()  # as the child's at-fork hook does
            sampler.sample(-1, 1.0)
            sampler.flush()
            os.write(write, sampler.journal.written[-1][1].encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as child:
        text = child.read()
    assert os.waitpid(pid, 0)[1] == 0
    assert {parse_line(row)[1][0] for row in text.splitlines()} == {f"thread ({pid}): MainThread"}


def test_counts_are_periods_of_the_full_rate_rewritten_whole_and_rounded(parked):
    sampler, me = _sampler(), threading.get_ident()  # the parked thread's stack alone
    written = []
    for weight in (0.4, None, 0.4, None, None, 0.9, None):
        if weight is None:
            sampler.flush()
            rows = sampler.journal.written[-1][1].splitlines() if sampler.journal.written else []
            written.append([count for _, frames, count in map(parse_line, rows)  # not the runner's threads
                            if frames[0].startswith(f"thread ({parked.native_id})")])
            sampler.journal.written.clear()
        else:
            sampler.sample(me, weight)
    # 0.4 rounds to none; 0.8 to 1; unchanged, not written again; 1.7 to 2.
    assert written == [[], [1], [], [2]]
    assert sampler.flush_every == stacks.FLUSH_MAX_NS or sampler.flush_every == stacks.FLUSH_NS * 2 ** 4


def test_a_frame_without_a_line_is_written_at_line_zero():
    sampler = _sampler()
    code = test_a_frame_without_a_line_is_written_at_line_zero.__code__
    sampler.names[id(code)] = ("f (x.py", code)
    sampler.counts[((id(code), None), (7, "MainThread"))] = 1.0
    sampler.changed = True
    sampler.flush()
    assert sampler.journal.written[0][1] == "thread (7): MainThread;f (x.py:0) 1\n"


def test_without_its_variable_the_probe_takes_no_stacks(monkeypatch):
    monkeypatch.delenv(journal_format.STACKS_ENV, raising=False)
    monkeypatch.setattr(stacks, "_sampler", [None])
    stacks.install(_Journal(), {"role": "main"}, lambda fn: pytest.fail("hooked"), lambda fn: pytest.fail("hooked"))
    assert stacks._sampler[0] is None
    stacks.target_started()  # a no-op then


def test_a_sampling_thread_that_cannot_start_is_a_failed_hook_and_the_probe_goes_on(monkeypatch, tmp_path):
    events = []

    class Journal(_Journal):
        run = str(tmp_path)

        def event(self, kind, **fields):
            events.append((kind, fields))

    def no_thread(*args):
        raise RuntimeError("can't start new thread")

    monkeypatch.setenv(journal_format.STACKS_ENV, "100,10,5")
    monkeypatch.setattr(stacks, "_sampler", [None])
    monkeypatch.setattr(stacks._thread, "start_new_thread", no_thread)
    stacks.install(Journal(), {"role": "main"}, lambda fn: pytest.fail("hooked"), lambda fn: pytest.fail("hooked"))
    assert events == [("hook", {"spec": "stacks", "status": "failed",
                                "reason": "RuntimeError: can't start new thread"})]
    assert stacks._sampler[0] is None


def test_at_exit_the_thread_is_ended_and_the_counts_written(monkeypatch, parked):
    events = []

    class Journal(_Journal):
        def event(self, kind, **fields):
            events.append((kind, fields))

    sampler = stacks._Sampler(Journal(), (100, 10, 5), {"role": "main"})
    monkeypatch.setattr(stacks, "_sampler", [sampler])
    sampler.start()
    try:
        while not sampler.native_id:  # the thread running
            time.sleep(0.001)
        sampler.sample(threading.get_ident(), 2.0)
        sampler.samples += 1
        native_id = sampler.native_id
        stacks._at_exit()
        # Gone before the interpreter finalizes: not one to wake in its finalization.
        assert sampler.thread is None and not os.path.exists("/proc/self/task/%d" % native_id)
        [(_, text)] = sampler.journal.written
        assert {parse_line(row)[2] for row in text.splitlines()} == {2}  # (the parked thread's, the sampler's)
        [(kind, fields)] = events
        assert kind == "stacks" and fields["samples"] == 1 and fields["cpu_ns"] > 0  # the thread's, all of it
    finally:
        sampler.stop()


def test_an_idle_process_keeps_its_rate_where_every_process_is_to_be_at_the_full_rate(monkeypatch):
    sampler = _sampler("main", rates=(100, 100, 5))
    monkeypatch.setattr(stacks.time, "process_time_ns", lambda: 0)
    for _ in range(5):
        sampler.pace(10_000_000)
    assert sampler.period_ns(stacks._now()) == 10_000_000


@pytest.mark.parametrize("has_ctypes", [True, False])
def test_while_a_standard_fd_is_closed_the_thread_names_itself_without_opening_a_file(has_ctypes):
    import ctypes  # noqa: F401 (imported before fd 2 closes: its import opens files)

    sampler = _sampler(rates=(100, 100, 100))
    read, write = os.pipe()
    go_on, told = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if not has_ctypes:
                del sys.modules["ctypes"]
            os.close(2)
            sampler.start()
            while not sampler.native_id:
                time.sleep(0.001)
            deadline = time.monotonic() + 10
            while sampler.samples < 3 and time.monotonic() < deadline:  # named, or not, at the first
                time.sleep(0.01)
            # Its name is read by the parent while fd 2 is still closed here (a read here would open
            # a file, and once fd 2 is open again the thread may name itself at its next sample).
            os.write(write, f"{sampler.native_id} ".encode())
            os.read(go_on, 1)
            taken = os.open(os.devnull, os.O_RDONLY)  # fd 2 was free all along: the target's again
            sampler.stop()
            os.write(write, str(taken).encode())
        finally:
            os._exit(0)
    os.close(write)
    tid = b""
    try:
        while not tid.endswith(b" "):
            tid += os.read(read, 1) or pytest.fail("the child ended before its sampler's third sample")
        with open(f"/proc/{pid}/task/{int(tid)}/comm") as f:
            name = f.read().strip()
    finally:
        os.write(told, b".")  # the child goes on, whatever happened here
    with os.fdopen(read) as child:
        taken = child.read()
    os.close(go_on)
    os.close(told)
    assert os.waitpid(pid, 0)[1] == 0
    assert taken == "2"
    assert (name == journal_format.STACKS_THREAD) == has_ctypes, name
