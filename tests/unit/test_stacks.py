"""Stacks: py-spy's raw output parsed, tied to the run's processes and roles,
losses said; the speedscope document. (The py-spy driver that records them:
test_pyspy.py.)

tests/fixtures/stacks/forkserver.raw is the real output of
`py-spy record --format raw --subprocesses --idle --nonblocking --rate 100 --
python forkserver_main.py` (py-spy 0.4.3, Python 3.11): the main process
29989, its resource tracker 29994 (a command line with a ';' in it), the
forkserver daemon 29995 and two children 29998 and 30000, each of which re-ran
the main module (a sleep at module level) before its target."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from test_run_load import write_meta
from writerprof.exports import speedscope
from writerprof.probes.writerprof_probe import format as journal
from writerprof.run import layout, load
from writerprof.run.stacks import (CHILD_START, NO_PYTHON_FRAME, PROBE_ONLY, TORN_FRAME, UNTOLD, NoStacks,
                                   from_child_start, how_many, in_standard_library, is_probe_frame, load_stacks,
                                   merged, parse_line, read_raw, require_stacks, select, split_threads,
                                   threads_added, why_none, without_probe_frames)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "stacks" / "forkserver.raw"
MAIN, TRACKER, SERVER, CHILD1, CHILD2 = 29989, 29994, 29995, 29998, 30000
SETTINGS = {"enabled": True, "rate_hz": 100, "native": False, "idle": True, "nonblocking": True}


def test_a_line_is_its_process_chain_frames_and_count():
    chain, frames, count = parse_line(
        'process 7:"bash -c a; b";process 9:"python x.py";<module> (x.py:3);f (pkg/m.py:10) 12\n')
    assert chain == [(7, "bash -c a; b"), (9, "python x.py")]
    assert frames == ("<module> (x.py:3)", "f (pkg/m.py:10)") and count == 12
    assert parse_line('process 9:"python x.py" 2') == ([(9, "python x.py")], (), 2)
    for bad in ("no count here", 'process 9:"python x.py 2', ""):
        with pytest.raises(ValueError):
            parse_line(bad)


def test_a_torn_frame_is_named_so():
    # As py-spy --nonblocking read one on this machine, the process changing it under the read.
    _, frames, _ = parse_line('process 9:"python x.py";<module> (x.py:3);module\x00ocessing (socket.py:1) 1')
    assert frames == ("<module> (x.py:3)", TORN_FRAME)
    _, frames, _ = parse_line('process 9:"python x.py";<module> (x.py:3); (socket.py:1);;run (x.py:5) 1')
    assert frames == ("<module> (x.py:3)", TORN_FRAME, TORN_FRAME, "run (x.py:5)")


def test_the_fixture_parses_into_its_five_processes():
    by_process, bad, tail = read_raw(FIXTURE.read_text())
    assert bad == 0 and tail is None
    parents = {pid: ppid for pid, ppid, _ in by_process}
    assert parents == {MAIN: -1, TRACKER: MAIN, SERVER: MAIN, CHILD1: SERVER, CHILD2: SERVER}
    tracker = next(cmd for pid, _, cmd in by_process if pid == TRACKER)
    assert tracker.endswith("from multiprocessing.resource_tracker import main;main(3)")  # ';' kept
    totals = {pid: sum(s.values()) for (pid, _, _), s in by_process.items()}
    assert sum(totals.values()) == 430  # py-spy's own count: "Samples: 430"
    main = next(s for (pid, _, _), s in by_process.items() if pid == MAIN)
    assert main[(NO_PYTHON_FRAME,)] == 1  # a sample with the process chain alone
    for child in (CHILD1, CHILD2):
        stacks = next(s for (pid, _, _), s in by_process.items() if pid == child)
        startup = [f for f in stacks if any(x.startswith("_fixup_main_from_path (multiprocessing/spawn.py") for x in f)]
        assert startup and all(f[-1].startswith("<module> (main.py:") for f in startup)
        assert any(f[-1].startswith("target (main.py:") for f in stacks)


def test_a_cut_file_loads_up_to_its_last_whole_line():
    text = FIXTURE.read_text()
    cut = text[: text.index("\n", len(text) // 2) + 40]
    by_process, bad, tail = read_raw(cut)
    assert tail is not None and len(tail) == 39 and bad == 0
    whole = text[: text.index("\n", len(text) // 2) + 1].count("\n")
    assert sum(len(s) for s in by_process.values()) == whole


# --- a run directory holding the fixture ---

def _journal(run, pid, created_ns, ppid, role, events=(), exited_ns=None, host="alpha", wrote=0):
    """A process's journal; wrote: the bytes of one write call it made (a writer is a process that wrote)."""
    procs = layout.procs_dir(run, host)
    procs.mkdir(parents=True, exist_ok=True)
    lines = [{"kind": "process", "t_ns": created_ns, "schema": 1, "pid": pid, "ppid": ppid, "host": host,
              "argv": ["python"], "created_ns": created_ns, "created_via": "exec", "forked_from": None,
              "role": role, "rank": None, "affinity": [0, 1]}]
    lines += [dict(e, t_ns=created_ns + 1 + i) for i, e in enumerate(events)]
    lines.append({"kind": "exit", "t_ns": exited_ns or created_ns + 100, "via": "atexit", "code": 0})
    (procs / f"{pid}-{created_ns}{journal.EVENTS_SUFFIX}").write_text("".join(json.dumps(e) + "\n" for e in lines))
    chunk = (journal.PHASES["write"], 0, 0, -1, -1, pid, created_ns + 50, created_ns + 60, wrote, 0, 0)
    (procs / f"{pid}-{created_ns}{journal.CHUNKS_SUFFIX}").write_bytes(journal.CHUNK.pack(*chunk) if wrote else b"")


def _stacks_dir(run, data: bytes, name="000.raw.gz", segment=None, index=True):
    directory = layout.stacks_dir(run, "alpha")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    if index:
        seg = {"file": name, "root_pid": MAIN, "started_ns": 0, "ended_ns": 10**12, "exit_status": 0,
               "samples": 430, "errors": 2, **(segment or {})}
        (directory / layout.STACKS_INDEX).write_text(json.dumps({**SETTINGS, "segments": [seg]}))
    return directory


@pytest.fixture
def recorded(tmp_path):
    run = write_meta(tmp_path / "run", stacks={**SETTINGS, "taken": True, "reason": None})
    start = {"kind": "process_start", "start_ns": 1, "end_ns": 2, "method": "forkserver", "target": "target",
             "child_pid": CHILD1, "name": "w", "writer_seq": 0}
    _journal(run, MAIN, 1000, 1, "main", [start])
    _journal(run, TRACKER, 1100, MAIN, "resource_tracker")
    _journal(run, SERVER, 1200, MAIN, "forkserver")
    for pid, created in ((CHILD1, 1300), (CHILD2, 1400)):
        _journal(run, pid, created, SERVER, "forkserver_child", [{"kind": "bootstrap", "target": "target"}],
                 wrote=4 << 20)
    _stacks_dir(run, FIXTURE.read_bytes())
    return run


def test_stacks_are_tied_to_processes_and_roles(recorded):
    run = load(recorded)
    stacks = load_stacks(run)
    assert [(s.pid, s.role, s.proc) for s in stacks] == [
        (MAIN, "producer", 0), (TRACKER, "resource_tracker", 1), (SERVER, "forkserver", 2),
        (CHILD1, "writer", 3), (CHILD2, "writer", 4)]
    assert [s.ppid for s in stacks] == [-1, MAIN, MAIN, SERVER, SERVER]
    assert all(s.rate_hz == 100 for s in stacks) and sum(s.total for s in stacks) == 430
    assert [s.label for s in select(stacks, "writer")] == [f"writer pid {CHILD1}", f"writer pid {CHILD2}"]
    assert select(stacks, "all", CHILD2)[0].pid == CHILD2 and not select(stacks, "producer", CHILD2)
    assert sum(merged(select(stacks, "writer")).values()) == 36 + 54
    assert {k[0] for k in merged(stacks, by="role")} == {"producer", "resource_tracker", "forkserver", "writer"}
    assert run.losses == []


def test_an_unprobed_pid_is_other(recorded):
    for f in layout.procs_dir(recorded, "alpha").glob(f"{TRACKER}-*"):
        f.unlink()
    stacks = load_stacks(load(recorded))
    tracker = next(s for s in stacks if s.pid == TRACKER)
    assert (tracker.proc, tracker.role) == (-1, "other") and stacks[-1] is tracker


def test_a_reused_pid_is_resolved_by_parent_then_by_time(recorded):
    # pid CHILD2 was also, earlier, a child of MAIN (a fork child), and later a second forkserver child.
    _journal(recorded, CHILD2, 500, MAIN, "fork_child", exited_ns=900)
    run = load(recorded)
    by_pid = {s.pid: s for s in load_stacks(run)}
    assert run.processes["created_ns"][by_pid[CHILD2].proc] == 1400  # the forkserver's child, by its parent
    _journal(recorded, CHILD2, 5000, SERVER, "forkserver_child", exited_ns=6000)
    _stacks_dir(recorded, FIXTURE.read_bytes(), segment={"started_ns": 1000, "ended_ns": 2000})
    run = load(recorded)
    by_pid = {s.pid: s for s in load_stacks(run)}
    assert run.processes["created_ns"][by_pid[CHILD2].proc] == 1400  # alive while py-spy ran
    _stacks_dir(recorded, FIXTURE.read_bytes(), segment={"started_ns": 1000, "ended_ns": 10**6})
    run = load(recorded)
    by_pid = {s.pid: s for s in load_stacks(run)}
    assert run.processes["created_ns"][by_pid[CHILD2].proc] == 5000  # both were: the last, and said
    assert any(f"stacks of pid {CHILD2} on alpha: 2 processes" in loss for loss in run.losses)


def test_damaged_stack_files_load_as_far_as_they_go(recorded):
    text = FIXTURE.read_bytes()
    directory = _stacks_dir(recorded, text[: len(text) // 2], name="000.raw")
    (directory / "000.raw.gz").unlink()
    run = load(recorded)
    stacks = load_stacks(run)
    assert stacks and sum(s.total for s in stacks) < 430
    assert any("000.raw: a cut-off last line" in loss for loss in run.losses)
    load_stacks(run)
    assert sum("cut-off" in loss for loss in run.losses) == 1  # said once

    packed = gzip.compress(text)
    (directory / "000.raw").unlink()
    _stacks_dir(recorded, b"", name="000.raw.gz")
    (directory / "000.raw.gz").write_bytes(packed[: len(packed) * 2 // 3])
    run = load(recorded)
    assert 0 < sum(s.total for s in load_stacks(run)) < 430
    assert any("cut short" in loss for loss in run.losses)

    (directory / "000.raw.gz").unlink()
    run = load(recorded)
    assert load_stacks(run) == [] and any("000.raw.gz: missing" in loss for loss in run.losses)
    with pytest.raises(NoStacks, match="has no stacks: its stack files are missing"):
        require_stacks(run)


def test_a_raw_file_left_beside_its_compressed_copy_is_read_once(recorded):
    directory = layout.stacks_dir(recorded, "alpha")
    (directory / "000.raw").write_bytes(FIXTURE.read_bytes())
    assert sum(s.total for s in load_stacks(load(recorded))) == 430


PROBE_SETTINGS = {**SETTINGS, "by": "probe", "sparse_rate_hz": 10}


@pytest.fixture
def probe_recorded(tmp_path):
    """A forkserver run whose stacks the probe took: each process's own file in stacks/."""
    run = write_meta(tmp_path / "run", stacks={**PROBE_SETTINGS, "taken": True, "reason": None})
    _journal(run, MAIN, 1000, 1, "main", [{"kind": "process_start", "start_ns": 1, "end_ns": 2, "method": "forkserver",
                                          "target": "target", "child_pid": CHILD1, "name": "w", "writer_seq": 0}])
    _journal(run, SERVER, 1200, MAIN, "forkserver")
    _journal(run, CHILD1, 1300, SERVER, "forkserver_child", [{"kind": "bootstrap", "target": "target"}],
             wrote=4 << 20)
    directory = layout.stacks_dir(run, "alpha")
    directory.mkdir(parents=True)
    (directory / layout.STACKS_INDEX).write_text(json.dumps({**PROBE_SETTINGS, "segments": []}))
    (directory / f"{MAIN}-1000{journal.STACKS_SUFFIX}").write_text("<module> (main.py:3) 40\n")
    (directory / f"{CHILD1}-1300{journal.STACKS_SUFFIX}").write_text(
        "<module> (<string>:1);main (multiprocessing/forkserver.py:274);run_writer (w.py:9) 12\n"
        "<module> (<string>:1);main (multiprocessing/forkserver.py:274);run_writer (w.py:9) 3\n"
        "<module> (<string>:1);_main (multiprocessing/spawn.py:131) 30\n")
    return run


def test_the_probes_stacks_are_each_processs_own_counted_as_written(probe_recorded):
    run = load(probe_recorded)
    stacks = load_stacks(run)
    assert [(s.pid, s.role, s.proc, s.ppid, s.total, s.rate_hz) for s in stacks] == [
        (MAIN, "producer", 0, 1, 40, 100), (CHILD1, "writer", 2, SERVER, 45, 100)]
    writer = stacks[1].samples
    assert writer[("<module> (<string>:1)", "main (multiprocessing/forkserver.py:274)", "run_writer (w.py:9)")] == 15
    assert run.losses == []


def test_damaged_probe_stack_files_load_as_far_as_they_go(probe_recorded):
    directory = layout.stacks_dir(probe_recorded, "alpha")
    child = directory / f"{CHILD1}-1300{journal.STACKS_SUFFIX}"
    child.write_bytes(child.read_bytes()[:-10] + b"\nnot a line\n" + b"<module> (x.py:1) 2")
    (directory / f"{SERVER}-999{journal.STACKS_SUFFIX}").write_text("<module> (x.py:1) 1\n")  # no such journal
    run = load(probe_recorded)
    stacks = load_stacks(run)
    assert [s.total for s in stacks] == [40, 15]  # the writer's last two lines lost, the server's file left out
    rel = f"hosts/alpha/stacks/{CHILD1}-1300{journal.STACKS_SUFFIX}"
    assert f"{rel}: a cut-off last line dropped (the process killed mid-write?)" in run.losses
    assert f"{rel}: 2 unreadable lines dropped" in run.losses
    assert any(f"{SERVER}-999{journal.STACKS_SUFFIX}: no journal of that process" in loss for loss in run.losses)


@pytest.mark.parametrize("meta, why", [
    (None, "recorded without stack sampling"),
    ({**PROBE_SETTINGS, "taken": False, "reason": "no probed Python process lived long enough to be sampled"},
     "the probe took none: no probed Python process lived long enough to be sampled"),
    ({**SETTINGS, "enabled": False, "taken": False, "reason": "not requested (--no-stacks)"}, "--no-stacks"),
    ({**SETTINGS, "taken": False, "reason": "py-spy cannot attach: no ptrace permission"},
     "py-spy took none: py-spy cannot attach: no ptrace permission"),
    (SETTINGS, "did not finish"),
])
def test_why_a_run_has_no_stacks(tmp_path, meta, why):
    run = load(write_meta(tmp_path / "run", stacks=meta))
    assert why in why_none(run)
    with pytest.raises(NoStacks, match=f"{tmp_path / 'run'} has no stacks"):
        require_stacks(run)


def test_child_stacks_from_where_the_child_begins(recorded):
    writers = merged(select(load_stacks(load(recorded)), "writer"))
    trimmed = from_child_start(writers)
    assert sum(trimmed.values()) == sum(writers.values())
    roots = {k[0].split(" (")[0] for k in trimmed}
    assert roots <= {"BaseProcess._bootstrap", "prepare", "_main", CHILD_START}
    assert "prepare" in roots and "BaseProcess._bootstrap" in roots
    # A fork child shows its parent's frames below the bootstrap: cut there too.
    fork = {("<module> (bench.py:3)", "Popen._launch (multiprocessing/popen_fork.py:71)",
             "BaseProcess._bootstrap (multiprocessing/process.py:314)", "target (bench.py:9)"): 5,
            ("<module> (bench.py:3)", "Popen._launch (multiprocessing/popen_fork.py:66)"): 1}
    assert from_child_start(fork) == {
        ("BaseProcess._bootstrap (multiprocessing/process.py:314)", "target (bench.py:9)"): 5,
        (CHILD_START, "Popen._launch (multiprocessing/popen_fork.py:66)"): 1}


# --- writerprof's own frames ---

BOOT = "BaseProcess._bootstrap (multiprocessing/process.py:314)"
TIMED = "timed.<locals>.wrapper (probes/writerprof_probe/calls.py:115)"
RERUN = "_main_rerun.<locals>.wrapper (writerprof/probes/writerprof_probe/mp.py:150)"


def test_probe_frames_are_recognised_by_their_file():
    # However py-spy shortened the path: editable checkout, installed package, PYTHONPATH entry, absolute.
    for frame in (TIMED, RERUN, "bootstrap_wrapper (writerprof_probe/mp.py:110)",
                  "_chain (probes/sitecustomize.py:30)", "f (/usr/lib/site-packages/writerprof/probes/writerprof_probe/osio.py:9)"):
        assert is_probe_frame(frame), frame
    # The target's own wrappers, a sitecustomize not the probe's, frames without a file: kept.
    for frame in ("timed.<locals>.wrapper (bench/calls.py:115)", "wrapper (mywriterprof_probe/calls.py:3)",
                  "<module> (sitecustomize.py:1)", "x (myprobes/sitecustomize.py:2)", NO_PYTHON_FRAME, TORN_FRAME,
                  "writerprof_probe (calls.py:1)"):
        assert not is_probe_frame(frame), frame


def test_the_code_the_probe_compiles_is_recognised_as_its_own():
    """Its timing wrappers and their inlined parts have no file: they are
    recognised by the pseudo-file name calls.py compiles them under."""
    from writerprof.probes.writerprof_probe import calls

    wrappers = [calls.timed(os.write, calls.Hook("write", 1, calls.describe_args)),
                calls.timed(os.fsync, calls.Hook("fsync", 2, lambda args, result: (-1, -1)))]
    codes = [w.__code__ for w in wrappers] + [calls.view_buffer.__code__, calls.describe_args.__code__]
    for code in codes:
        name = getattr(code, "co_qualname", code.co_name)
        assert is_probe_frame(f"{name} ({code.co_filename}:{code.co_firstlineno})"), code.co_filename
    # As a recording names one; a look-alike of the target's is kept.
    assert is_probe_frame("make.<locals>.wrapper (<writerprof_probe timed-all-writerprof_probe.calls.describe_args>"
                          ":30)")
    assert not is_probe_frame("wrapper (<writerprof_probes timed>:30)")


def test_probe_frames_fold_into_their_callers():
    raw = {(BOOT, "run_writer (bench.py:9)", TIMED, "os.write (<frozen os>:1)"): 7,
           (BOOT, "run_writer (bench.py:9)", "os.write (<frozen os>:1)"): 2,
           (BOOT, "run_writer (bench.py:9)", TIMED): 3,  # the probe's own time: its caller's self time
           (RERUN, TIMED): 1,
           (BOOT,): 4}
    folded = without_probe_frames(raw)
    assert folded == {(BOOT, "run_writer (bench.py:9)", "os.write (<frozen os>:1)"): 9,
                      (BOOT, "run_writer (bench.py:9)"): 3, (PROBE_ONLY,): 1, (BOOT,): 4}
    assert sum(folded.values()) == sum(raw.values())
    assert not any(is_probe_frame(f) for stack in folded for f in stack)


def test_loaded_stacks_fold_the_probe_out_unless_asked(recorded):
    line = (f'process {SERVER}:"python -c server";process {CHILD1}:"python -c child";'
            f'{BOOT};run_writer (bench.py:9);{TIMED};os.write (<frozen os>:1) 5\n')
    directory = layout.stacks_dir(recorded, "alpha")
    raw = gzip.decompress((directory / "000.raw.gz").read_bytes()) + line.encode()
    (directory / "000.raw.gz").write_bytes(gzip.compress(raw))
    folded, kept = (next(s for s in load_stacks(load(recorded), probe) if s.pid == CHILD1) for probe in (False, True))
    assert TIMED in {f for stack in kept.samples for f in stack}
    assert not any(is_probe_frame(f) for stack in folded.samples for f in stack)
    assert folded.total == kept.total
    assert folded.samples[(BOOT, "run_writer (bench.py:9)", "os.write (<frozen os>:1)")] >= 5
    assert gzip.decompress((directory / "000.raw.gz").read_bytes()) == raw  # the raw data is not changed
    assert not any(is_probe_frame(f) for s in require_stacks(load(recorded)) for stack in s.samples for f in stack)


# --- the speedscope document ---

def test_speedscope_document(recorded):
    run = load(recorded)
    stacks = load_stacks(run)
    doc = speedscope.document(run, stacks)
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert [p["name"] for p in doc["profiles"]] == [s.label for s in stacks]
    assert doc["profiles"][doc["activeProfileIndex"]]["name"] == f"writer pid {CHILD1}"
    for profile, process in zip(doc["profiles"], stacks):
        assert profile["type"] == "sampled" and profile["unit"] == "milliseconds"
        assert len(profile["samples"]) == len(profile["weights"]) == len(process.samples)
        assert profile["endValue"] == sum(profile["weights"]) == process.total * 10
        rebuilt = {tuple(_frame_string(frames[i]) for i in s): w / 10
                   for s, w in zip(profile["samples"], profile["weights"])}
        assert rebuilt == process.samples
    assert speedscope.split_frame("f (a/b.py:12)") == {"name": "f", "file": "a/b.py", "line": 12}
    assert speedscope.split_frame("<module> (<frozen runpy>:88)") == {
        "name": "<module>", "file": "<frozen runpy>", "line": 88}
    assert speedscope.split_frame(NO_PYTHON_FRAME) == {"name": NO_PYTHON_FRAME}


def _frame_string(frame):
    if "file" not in frame:
        return frame["name"]
    return f"{frame['name']} ({frame['file']}:{frame['line']})"



# --- threads ---

def test_threads_are_named_by_their_names_and_counted_by_their_ids():
    samples = {("thread (7): MainThread", "a (m.py:1)"): 3,
               ("thread (7)", "<module> (m.py:1)"): 1,  # before Python named it
               ("thread (9): QueueFeederThread", "f (q.py:1)"): 2,
               ("thread (11): QueueFeederThread", "f (q.py:1)"): 4,  # a second queue's
               ("thread (12)", "g (x.py:1)"): 1,
               ("thread (0x7f3a)", "g (x.py:1)"): 1,
               ("thread (13)",): 1}
    threads, ids = split_threads(samples, 7)
    assert ids == 6
    assert threads == {"thread MainThread": {("a (m.py:1)",): 3, ("<module> (m.py:1)",): 1},
                       "thread QueueFeederThread": {("f (q.py:1)",): 6}, "thread 12": {("g (x.py:1)",): 1},
                       "thread 0x7f3a": {("g (x.py:1)",): 1}, "thread 13": {(NO_PYTHON_FRAME,): 1}}
    assert split_threads({("thread (7)", "a (m.py:1)"): 1}, 7)[0] == {"thread MainThread": {("a (m.py:1)",): 1}}
    # A recording that did not tell threads apart; a function named thread is a frame like any.
    untold = {("thread (m.py:3)", "x (m.py:4)"): 2}
    assert split_threads(untold, 7) == ({UNTOLD: untold}, 0)


def _threaded(probe_recorded):
    directory = layout.stacks_dir(probe_recorded, "alpha")
    (directory / f"{MAIN}-1000{journal.STACKS_SUFFIX}").write_text(
        f"thread ({MAIN}): MainThread;<module> (main.py:3);put (q.py:5) 30\n"
        f"thread ({MAIN}): MainThread;<module> (main.py:3);{TIMED};os.write (<frozen os>:1) 4\n"
        f"thread (812): QueueFeederThread;Thread._bootstrap (threading.py:1);_feed (q.py:9) 25\n")
    return load(probe_recorded)


def test_a_process_holds_its_stacks_by_thread_and_summed(probe_recorded):
    run = _threaded(probe_recorded)
    main, writer = load_stacks(run)
    assert (main.thread_ids, main.total, writer.thread_ids) == (2, 59, 0)  # (the writer's file: an older probe's)
    assert main.threads == {"thread MainThread": {("<module> (main.py:3)", "put (q.py:5)"): 30,
                                                  ("<module> (main.py:3)", "os.write (<frozen os>:1)"): 4},
                            "thread QueueFeederThread": {("Thread._bootstrap (threading.py:1)", "_feed (q.py:9)"): 25}}
    assert main.samples[("<module> (main.py:3)", "put (q.py:5)")] == 30 and len(main.samples) == 3
    kept = load_stacks(run, probe_frames=True)[0]
    assert kept.threads["thread MainThread"][("<module> (main.py:3)", TIMED, "os.write (<frozen os>:1)")] == 4
    # What a graph of them adds up.
    assert threads_added([main]) == 2 and threads_added([main, writer]) is None
    assert how_many([main], " added up") == "2 threads added up"
    assert how_many([main, writer]) == "2 processes (threads not told apart)"
    assert how_many([writer]) == ""
    roots = {stack[:2] for stack in merged([main], by="role", threads=True)}
    assert roots == {("producer", "thread MainThread"), ("producer", "thread QueueFeederThread")}
    assert sum(merged([main], threads=True).values()) == sum(merged([main]).values()) == 59


def test_speedscope_profiles_say_their_threads_or_are_one_per_thread(probe_recorded):
    run = _threaded(probe_recorded)
    stacks = load_stacks(run)
    summed, split = speedscope.document(run, stacks), speedscope.document(run, stacks, threads=True)
    assert [p["name"] for p in summed["profiles"]] == [f"producer pid {MAIN} (2 threads added up)",
                                                       f"writer pid {CHILD1}"]
    assert [p["name"] for p in split["profiles"]] == [
        f"producer pid {MAIN}: thread MainThread", f"producer pid {MAIN}: thread QueueFeederThread",
        f"writer pid {CHILD1}: {UNTOLD}"]
    assert split["profiles"][split["activeProfileIndex"]]["name"].startswith("writer ")
    assert [p["endValue"] for p in split["profiles"]][:2] == [340.0, 250.0]


def test_the_standard_library_is_told_by_its_frozen_modules_and_top_level_names():
    assert in_standard_library("<frozen genericpath>")
    assert in_standard_library("multiprocessing/process.py") and in_standard_library("queue.py")
    assert not in_standard_library("numpy/core/numeric.py") and not in_standard_library("saver.py")
    assert not in_standard_library("<string>") and not in_standard_library("/abs/path/queue.py")
