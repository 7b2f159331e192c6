"""`writerprof export --perfetto` on a real recording, checked against the
trace-event format that Perfetto and chrome://tracing read: required fields and
their types, times from the start of the recording in order, slices on a
thread that nest, metadata naming every track."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from helpers import run_writerprof

PHASES = {"M", "X", "i", "C"}  # what the exporter writes, each a documented phase


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("export")
    done = run_writerprof("record", "-o", tmp / "run", "--", *_repro("--json", "--saves", "2",
                          "--size", "128MiB", "--start-method", "forkserver"))
    saves = [json.loads(line) for line in done.stdout.splitlines()]
    exported = run_writerprof("export", tmp / "run", "--perfetto", tmp / "trace.json")
    assert "writerprof export:" in exported.stderr
    return json.loads((tmp / "trace.json").read_text()), [s for s in saves if s["record"] == "save"]


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


def test_export_errors(tmp_path):
    done = run_writerprof("export", tmp_path / "nope", "--perfetto", tmp_path / "t.json", check=False)
    assert done.returncode == 1 and done.stderr.strip() == f"writerprof export: {tmp_path / 'nope'}: no such run directory"
    done = run_writerprof("export", tmp_path, check=False)
    assert done.returncode == 2 and "--perfetto FILE" in done.stderr
    assert not (tmp_path / "t.json").exists()
