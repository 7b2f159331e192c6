"""`writerprof export --perfetto` on a real recording, checked against the
trace-event format that Perfetto and chrome://tracing read: required fields and
their types, times from the start of the recording in order, slices on a
thread that nest, metadata naming every track; and --perfetto with
--speedscope at once, each against its format's required fields."""

from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from helpers import run_writerprof

PHASES = {"M", "X", "i", "C"}  # what the exporter writes, each a documented phase


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    done = run_writerprof("record", "-o", tmp / "run", "--", *_repro("--json", "--saves", "2",
                          "--size", "128MiB", "--start-method", "forkserver"))
    saves = [json.loads(line) for line in done.stdout.splitlines()]
    return tmp / "run", [s for s in saves if s["record"] == "save"]


@pytest.fixture(scope="module")
def exported(recording, tmp_path_factory):
    run, saves = recording
    tmp = tmp_path_factory.mktemp("perfetto")
    exported = run_writerprof("export", run, "--perfetto", tmp / "trace.json")
    assert "writerprof export:" in exported.stderr
    return json.loads((tmp / "trace.json").read_text()), saves


def _repro(*args):
    from helpers import writerprof_command

    return [*writerprof_command(), "repro", *args]


def test_every_event_has_the_fields_its_phase_requires(exported):
    trace, _ = exported
    events = trace["traceEvents"]
    assert isinstance(events, list) and events and trace["displayTimeUnit"] == "ms"
    for event in events:
        assert event["ph"] in PHASES, event
        assert isinstance(event["name"], str) and event["name"]
        assert type(event["pid"]) is int and type(event["tid"]) is int
        if event["ph"] == "M":
            assert event["name"] in {"process_name", "process_sort_index", "thread_name"}
            assert isinstance(event["args"], dict) and event["args"]
            continue
        assert isinstance(event["ts"], (int, float)) and event["ts"] >= 0
        if event["ph"] == "X":
            assert isinstance(event["dur"], (int, float)) and event["dur"] >= 0
        if event["ph"] == "i":
            assert event["s"] in {"g", "p", "t"}
        if event["ph"] == "C":
            assert event["args"] and all(isinstance(v, (int, float)) for v in event["args"].values())


def test_times_are_in_order_and_slices_nest_on_each_thread(exported):
    trace, _ = exported
    timed = [e for e in trace["traceEvents"] if e["ph"] != "M"]
    assert [e["ts"] for e in timed] == sorted(e["ts"] for e in timed)
    assert all(e["ph"] == "M" for e in trace["traceEvents"][: len(trace["traceEvents"]) - len(timed)])
    by_thread = defaultdict(list)
    for e in timed:
        if e["ph"] == "X":
            by_thread[(e["pid"], e["tid"])].append(e)
    for thread, slices in by_thread.items():
        open_ends = []  # the ends of the slices that enclose the current one
        for s in sorted(slices, key=lambda e: (e["ts"], -e["dur"])):
            while open_ends and open_ends[-1] <= s["ts"]:
                open_ends.pop()
            end = s["ts"] + s["dur"]
            assert not open_ends or end <= open_ends[-1] + 1e-3, (thread, s)  # within its parent
            open_ends.append(end)


def test_tracks_are_named_and_hold_the_writers_calls(exported):
    trace, saves = exported
    events = trace["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    used = {e["pid"] for e in events}
    assert used == set(names)  # every track is named
    threads = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in events if e["ph"] in {"X", "i"}} <= threads
    for save in saves:
        (track,) = [pid for pid, name in names.items() if name == f"writer pid {save['writer_pid']}"]
        mine = [e for e in events if e["pid"] == track]
        writes = [e for e in mine if e["ph"] == "X" and e["name"] == "write"]
        assert len(writes) == save["chunks"] and sum(e["args"]["bytes"] for e in writes) == save["bytes"]
        startup = {e["name"] for e in mine if e["ph"] == "X" and e["cat"] == "startup"}
        assert {"__main__ re-run", "unpickle (imports the target's module)"} <= startup
        assert [e for e in mine if e["ph"] == "C" and e["name"] == "cpu"]  # sampled while it lived
    assert any(name.startswith("forkserver pid ") for name in names.values())
    assert any(name.startswith("producer pid ") for name in names.values())


# The trace-event format's required fields per phase (the Trace Event Format
# document; what Perfetto's JSON importer reads), and their types.
REQUIRED = {
    "X": {"name": str, "ph": str, "ts": (int, float), "dur": (int, float), "pid": int, "tid": int},
    "i": {"name": str, "ph": str, "ts": (int, float), "pid": int, "tid": int, "s": str},
    "C": {"name": str, "ph": str, "ts": (int, float), "pid": int, "args": dict},
    "M": {"name": str, "ph": str, "pid": int, "args": dict},
}
METADATA = {"process_name": "name", "process_sort_index": "sort_index", "thread_name": "name"}


def test_perfetto_and_speedscope_at_once_match_their_formats(recording, tmp_path):
    run, saves = recording
    trace_file, profile_file = tmp_path / "trace.json", tmp_path / "profile.json"
    done = run_writerprof("export", run, "--perfetto", trace_file, "--speedscope", profile_file)
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"writerprof export: {trace_file}: ") and " slices (" in lines[0]
    assert lines[1].startswith(f"writerprof export: {profile_file}: ") and " profiles, " in lines[1]

    trace = json.loads(trace_file.read_text())
    assert isinstance(trace, dict) and isinstance(trace["traceEvents"], list)
    last_ts = 0.0
    for event in trace["traceEvents"]:
        fields = REQUIRED[event["ph"]]
        for name, kind in fields.items():
            assert isinstance(event[name], kind) and not isinstance(event[name], bool), (name, event)
        if event["ph"] == "M":
            assert event["args"][METADATA[event["name"]]] is not None
            assert last_ts == 0.0  # metadata before every timed event
            continue
        assert event["ts"] >= 0 and event["ts"] >= last_ts  # sorted, from the start of the recording
        last_ts = event["ts"]
        if event["ph"] == "X":
            assert event["dur"] >= 0
        if event["ph"] == "i":
            assert event["s"] in {"g", "p", "t"}
    assert {e["ph"] for e in trace["traceEvents"]} == set(REQUIRED)
    # Every chunk the writers wrote (and tempfile's own probe write of the directory).
    assert sum(e["ph"] == "X" and e["name"] == "write" for e in trace["traceEvents"]) >= sum(
        s["chunks"] for s in saves)

    profile = json.loads(profile_file.read_text())
    assert profile["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = profile["shared"]["frames"]
    assert all(isinstance(f["name"], str) for f in frames)
    for p in profile["profiles"]:
        assert p["type"] == "sampled" and p["unit"] == "milliseconds" and p["startValue"] <= p["endValue"]
        assert len(p["samples"]) == len(p["weights"])
        assert all(0 <= i < len(frames) for stack in p["samples"] for i in stack)
        assert all(w > 0 for w in p["weights"])
    # Both name a process the same way (a profile then says how many threads it adds up).
    tracks = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    # (a writer the stack sampler never caught, on a loaded machine, has a track and no profile)
    named = {re.sub(r" \(\d+ threads added up\)$", "", p["name"]) for p in profile["profiles"]}
    assert named <= tracks and {n.split(" pid")[0] for n in named} >= {"producer", "writer"}, (named, tracks)


def test_export_errors(tmp_path):
    done = run_writerprof("export", tmp_path / "nope", "--perfetto", tmp_path / "t.json", check=False)
    assert done.returncode == 1 and done.stderr.strip() == f"writerprof export: {tmp_path / 'nope'}: no such run directory"
    done = run_writerprof("export", tmp_path, check=False)
    assert done.returncode == 2 and "--perfetto FILE" in done.stderr
    assert not (tmp_path / "t.json").exists()


def test_each_export_is_written_on_its_own(tmp_path):
    """A run without stacks: the Perfetto trace is written, the speedscope
    file is one line saying why not, and the exit status says one failed."""
    run_writerprof("record", "--no-stacks", "-o", tmp_path / "run", "--", *_repro("--saves", "1", "--size", "8MiB",
                                                                                  "--chunk-size", "1MiB"))
    trace_file, profile_file = tmp_path / "trace.json", tmp_path / "profile.json"
    done = run_writerprof("export", tmp_path / "run", "--perfetto", trace_file, "--speedscope", profile_file,
                          check=False)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"writerprof export: {trace_file}: ") and " slices (" in lines[0]
    assert lines[1] == (f"writerprof export: {profile_file} not written: {tmp_path / 'run'} has no stacks: "
                        f"it was recorded with --no-stacks")
    assert len(lines) == 2
    assert json.loads(trace_file.read_text())["traceEvents"]
    assert not profile_file.exists()
    # The order on the command line does not matter.
    trace_file.unlink()
    done = run_writerprof("export", tmp_path / "run", "--speedscope", profile_file, "--perfetto", trace_file,
                          check=False)
    assert done.returncode == 1 and trace_file.exists() and not profile_file.exists()
