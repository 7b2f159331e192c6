"""Stacks on real recordings (named apart from tests/unit/test_stacks.py:
the test directories are not packages, so basenames must differ), taken by
the probe and by py-spy (each Python process of the tree has py-spys of its
own): the writer's
start-up (the re-run of __main__ and its imports) is in its stacks and its
flamegraph, the forkserver daemon, the resource tracker and each writer are
told apart; --no-stacks, a py-spy that may not attach and a missing py-spy
never fail the run; flame, flame --diff and the speedscope export."""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from helpers import run_writerprof, writerprof_command
from writerprof.run import load
from writerprof.run.stacks import is_probe_frame, load_stacks

SVG = "{http://www.w3.org/2000/svg}"
REPRO = ["repro", "--json", "--saves", "2", "--size", "64MiB", "--main-imports", "numpy,matplotlib.pyplot"]


def _record(path, method, *options, size=None):
    done = run_writerprof("record", "-o", path, *options, "--", *writerprof_command(), *REPRO,
                          "--start-method", method, *(["--size", size] if size else []))
    saves = [json.loads(line) for line in done.stdout.splitlines()]
    return done, [s for s in saves if s["record"] == "save"]


@pytest.fixture(scope="module", params=["probe", "py-spy"])
def forkserver(tmp_path_factory, request):
    path = tmp_path_factory.mktemp("stacks") / "forkserver"
    done, saves = _record(path, "forkserver", "--stacks-by", request.param)
    return path, done, saves


@pytest.fixture(scope="module")
def fork(tmp_path_factory):
    path = tmp_path_factory.mktemp("stacks") / "fork"
    # Bigger saves than forkserver's: a fork writer of a 64 MiB save lives ~0.1 s, a
    # handful of samples once its own py-spy attaches; too few for a share to compare.
    _, saves = _record(path, "fork", size="256MiB")
    return path, saves


def test_the_writers_stacks_hold_the_rerun_of_main_and_its_imports(forkserver):
    path, done, saves = forkserver
    assert "stacks           " in done.stderr and "no stacks" not in done.stderr
    run = load(path)
    assert run.meta["stacks"]["taken"] and run.meta["stacks"]["rate_hz"] == 100
    writers = [s for s in load_stacks(run) if s.role == "writer"]
    assert sorted(s.pid for s in writers) == sorted(s["writer_pid"] for s in saves)
    for writer in writers:
        startup = [stack for stack in writer.samples
                   if any(f.startswith("_fixup_main_from_path (multiprocessing/spawn.py:") for f in stack)]
        assert startup, writer.pid
        frames = {f for stack in startup for f in stack}
        assert any("runpy" in f for f in frames)
        assert any(f.startswith("<module> (writerprof/repro/main.py:") for f in frames)
        assert any(f.startswith("<module> (numpy/") or f.startswith("<module> (matplotlib/") for f in frames)
        # ... and the target's own work beside it.
        assert any(any(f.startswith("run_writer (writerprof/repro/writer.py:") for f in stack)
                   for stack in writer.samples)


def test_daemons_and_writers_are_told_apart(forkserver):
    path, _, saves = forkserver
    run = load(path)
    stacks = load_stacks(run)
    assert sorted(s.role for s in stacks) == ["forkserver", "producer", "resource_tracker", "writer", "writer"]
    assert len({s.proc for s in stacks}) == len(stacks) and all(s.proc >= 0 for s in stacks)
    by_role = {s.role: s for s in stacks}
    producer, server = by_role["producer"], by_role["forkserver"]
    assert by_role["resource_tracker"].ppid == producer.pid and server.ppid == producer.pid
    for s in stacks:
        if s.role == "writer":
            assert s.ppid == server.pid  # the forkserver's children, not the rank's
        assert run.processes["pid"][s.proc] == s.pid
    assert any("multiprocessing/forkserver.py" in f for stack in server.samples for f in stack)
    assert any("resource_tracker.py" in f for stack in by_role["resource_tracker"].samples for f in stack)


def test_flame_writes_svg_and_png_and_the_startup_is_a_tower(forkserver, tmp_path):
    path, _, _ = forkserver
    done = run_writerprof("flame", path, "-o", tmp_path / "writer")
    assert done.stderr.startswith(f"writerprof flame: {tmp_path / 'writer.svg'} and writer.png: writer: 2 processes")
    svg = (tmp_path / "writer.svg").read_text()
    assert (tmp_path / "writer.png").read_bytes()[:4] == b"\x89PNG"
    frames = [g for g in ET.fromstring(svg.encode()).iter(SVG + "g") if g.get("class") == "f"]
    names = [g.get("data-n") for g in frames]
    fixup = [g for g in frames if g.get("data-n").startswith("_fixup_main_from_path")]
    assert fixup and any(n.startswith("<module> (writerprof/repro/main.py:") for n in names)
    # Its share is in the hover text.
    assert all("samples (" in g.find(SVG + "title").text for g in fixup)
    done = run_writerprof("flame", path, "--role", "all", "-o", tmp_path / "all.svg")
    assert (tmp_path / "all.svg").exists() and (tmp_path / "all.png").exists()
    all_roots = {g.get("data-n") for g in ET.fromstring((tmp_path / "all.svg").read_bytes()).iter(SVG + "g")
                 if g.get("data-d") == "1"}
    assert all_roots == {"producer", "forkserver", "resource_tracker", "writer"}


def test_flame_diff_fork_against_forkserver(fork, forkserver, tmp_path):
    done = run_writerprof("flame", "--diff", fork[0], forkserver[0], "-o", tmp_path / "diff")
    assert "writer, A " in done.stderr
    svg = (tmp_path / "diff.svg").read_text()
    assert (tmp_path / "diff.png").read_bytes()[:4] == b"\x89PNG"
    frames = [g for g in ET.fromstring(svg.encode()).iter(SVG + "g") if g.get("class") == "f"]

    def widest(name):  # (a frame of a few stray samples at another line, a load's, may come first)
        return max((g for g in frames if g.get("data-n").startswith(name)),
                   key=lambda g: float(g.find(SVG + "rect").get("width")))

    prepare, target = widest("prepare (multiprocessing/spawn.py:"), widest("BaseProcess._bootstrap")
    assert prepare.find(SVG + "rect").get("fill").startswith("#ff")  # only forkserver writers re-run __main__
    assert target.find(SVG + "rect").get("fill").endswith("ff")  # a smaller share of their time
    hover = prepare.find(SVG + "title").text
    assert "A fork" in hover and "B forkserver" in hover and ": 0 samples (0.0%)" in hover


def test_flame_errors(forkserver, tmp_path):
    path, _, _ = forkserver
    done = run_writerprof("flame", path, "--pid", "1", "-o", tmp_path / "x", check=False)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"writerprof flame: {path}: no process with pid 1 in its stacks")
    done = run_writerprof("flame", path, "--role", "other", check=False)
    assert done.returncode == 1 and "no other process in its stacks (sampled roles: forkserver, producer" in done.stderr
    done = run_writerprof("flame", path, "--diff", path, path, check=False)
    assert done.returncode == 2 and "not both" in done.stderr


def test_no_stacks_takes_none_and_says_so(tmp_path):
    done = run_writerprof("record", "--no-stacks", "-o", tmp_path / "run", "--", sys.executable, "-c", "pass")
    assert "stacks           none: not requested (--no-stacks)" in done.stderr
    assert not list((tmp_path / "run").rglob("stacks"))
    run = load(tmp_path / "run")
    assert run.meta["stacks"]["enabled"] is False and run.meta["stacks"]["taken"] is False
    done = run_writerprof("flame", tmp_path / "run", check=False)
    assert done.returncode == 1
    assert done.stderr == f"writerprof flame: {tmp_path / 'run'} has no stacks: it was recorded with --no-stacks\n"
    done = run_writerprof("export", tmp_path / "run", "--speedscope", tmp_path / "s.json", check=False)
    assert done.returncode == 1 and "recorded with --no-stacks" in done.stderr
    assert not (tmp_path / "s.json").exists()


def _with_py_spy(tmp_path, executable, *cmd):
    env = dict(os.environ, WRITERPROF_PY_SPY=str(executable))
    return subprocess.run([*writerprof_command(), "record", "--stacks-by", "py-spy", "-o", str(tmp_path / "run"), "--",
                           *cmd],
                          capture_output=True, text=True, env=env, timeout=60)


def test_py_spy_without_ptrace_permission_is_one_line_and_the_run_goes_on(tmp_path):
    fake = tmp_path / "py-spy"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'py-spy 0.4.3'; exit 0; }\n"
                    "echo \"Permission Denied: Try running again with elevated permissions by going "
                    "'sudo env \\\"PATH=\\$PATH\\\" !!'\" >&2\nexit 1\n")
    fake.chmod(0o755)
    done = _with_py_spy(tmp_path, fake, sys.executable, "-c", "import sys, time; time.sleep(1.5); sys.exit(3)")
    assert done.returncode == 3  # CMD's exit status, unchanged
    said = [line for line in done.stderr.splitlines() if "no stacks:" in line]
    assert len(said) == 1 and said[0].startswith("writerprof record: no stacks: py-spy cannot attach")
    assert "--cap-add SYS_PTRACE" in said[0] and "kernel.yama.ptrace_scope=0" in said[0]
    run = load(tmp_path / "run")
    assert run.complete and run.meta["exit_status"] == 3
    assert run.meta["stacks"]["taken"] is False and "ptrace" in run.meta["stacks"]["reason"]
    done = run_writerprof("flame", tmp_path / "run", check=False)
    assert done.returncode == 1 and "has no stacks: py-spy took none: py-spy cannot attach" in done.stderr


def test_a_missing_py_spy_is_one_line(tmp_path):
    done = _with_py_spy(tmp_path, tmp_path / "no-py-spy", sys.executable, "-c", "pass")
    assert done.returncode == 0
    said = [line for line in done.stderr.splitlines() if "no stacks:" in line]
    assert len(said) == 1 and "py-spy not found" in said[0] and "--no-stacks" in said[0]


def test_speedscope_export_matches_the_schema(forkserver, tmp_path):
    """The required fields and types of speedscope's file-format-schema.json
    (SampledProfile), checked by hand."""
    path, _, saves = forkserver
    out = tmp_path / "profile.speedscope.json"
    done = run_writerprof("export", path, "--speedscope", out)
    assert done.stderr.startswith(f"writerprof export: {out}: 5 profiles, ")
    doc = json.loads(out.read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    assert isinstance(frames, list) and frames
    for frame in frames:
        assert isinstance(frame["name"], str) and frame["name"]
        assert isinstance(frame.get("file", ""), str) and isinstance(frame.get("line", 0), int)
    assert isinstance(doc["profiles"], list) and len(doc["profiles"]) == 5
    assert isinstance(doc["name"], str) and 0 <= doc["activeProfileIndex"] < len(doc["profiles"])
    for profile in doc["profiles"]:
        assert profile["type"] == "sampled" and isinstance(profile["name"], str)
        assert profile["unit"] in {"none", "nanoseconds", "microseconds", "milliseconds", "seconds", "bytes"}
        assert isinstance(profile["startValue"], (int, float)) and isinstance(profile["endValue"], (int, float))
        assert profile["startValue"] <= profile["endValue"]
        assert len(profile["samples"]) == len(profile["weights"]) > 0
        for stack in profile["samples"]:
            assert isinstance(stack, list) and all(type(i) is int and 0 <= i < len(frames) for i in stack)
        assert all(isinstance(w, (int, float)) and w > 0 for w in profile["weights"])
        assert profile["endValue"] - profile["startValue"] == pytest.approx(sum(profile["weights"]))
    names = {p["name"] for p in doc["profiles"]}
    assert {f"writer pid {s['writer_pid']}" for s in saves} <= names
    assert any(n.startswith("forkserver pid ") for n in names)
    assert any(n.startswith("resource_tracker pid ") for n in names)


def _svg_frames(file):
    return [g.get("data-n") for g in ET.fromstring(file.read_bytes()).iter(SVG + "g") if g.get("class") == "f"]


def _writer_frames(doc):
    frames = doc["shared"]["frames"]
    names = [f"{f['name']} ({f['file']}:{f['line']})" if "line" in f else f["name"] for f in frames]
    return {names[i] for p in doc["profiles"] if p["name"].startswith("writer ") for stack in p["samples"]
            for i in stack}


def test_the_probe_frames_are_folded_out_unless_asked_for(forkserver, tmp_path):
    path, _, _ = forkserver
    raw = {f.name: f.read_bytes() for f in path.glob("hosts/*/stacks/*")}
    run_writerprof("flame", path, "-o", tmp_path / "folded")
    run_writerprof("flame", path, "--probe-frames", "-o", tmp_path / "kept")
    folded, kept = _svg_frames(tmp_path / "folded.svg"), _svg_frames(tmp_path / "kept.svg")
    assert folded and not any(is_probe_frame(n) for n in folded)
    # The probe wraps the re-run of __main__ and the writer's timed calls: with the option they are drawn.
    probe = {n for n in kept if is_probe_frame(n)}
    assert any(n.startswith("_main_rerun.<locals>.wrapper (") for n in probe), probe
    assert any("writerprof_probe/" in n for n in probe)
    # Folded, not cut: the target's frames above the wrappers are still drawn.
    assert any(n.startswith("_fixup_main_from_path") for n in folded)
    assert {n for n in kept if not is_probe_frame(n)} <= set(folded)
    run_writerprof("export", path, "--speedscope", tmp_path / "folded.json")
    run_writerprof("export", path, "--speedscope", tmp_path / "kept.json", "--probe-frames")
    folded, kept = (_writer_frames(json.loads((tmp_path / f"{n}.json").read_text())) for n in ("folded", "kept"))
    assert folded and not any(is_probe_frame(n) for n in folded)
    assert any(is_probe_frame(n) for n in kept)
    # The raw files are not changed.
    assert {f.name: f.read_bytes() for f in path.glob("hosts/*/stacks/*")} == raw


# What names a frame as the probe's, read as a person reads a graph (not through
# is_probe_frame, the filter under test): its modules, its sitecustomize, and the
# code it compiles itself (its timing wrappers: "<writerprof_probe timed-...>").
PROBE_FILES = ("writerprof_probe", "probes/sitecustomize.py")


def _probe_named(names):
    return [n for n in names if any(p in n for p in PROBE_FILES)]


def test_no_frame_of_the_probe_is_in_a_graph_an_export_or_the_report(fork, tmp_path):
    path, _ = fork
    run_writerprof("flame", path, "--role", "all", "--probe-frames", "-o", tmp_path / "kept")
    # Recorded: the wrapper around every write and get, compiled under a pseudo-file of its own.
    assert any(" (<writerprof_probe timed-" in n for n in _svg_frames(tmp_path / "kept.svg"))
    run_writerprof("flame", path, "--role", "all", "-o", tmp_path / "all")
    names = _svg_frames(tmp_path / "all.svg")
    assert len(names) > 20 and not _probe_named(names), _probe_named(names)
    run_writerprof("export", path, "--speedscope", tmp_path / "s.json")
    frames = json.loads((tmp_path / "s.json").read_text())["shared"]["frames"]
    assert frames and not _probe_named(f"{f['name']} ({f.get('file')})" for f in frames)
    run_writerprof("report", path, "--html", tmp_path / "report.html")
    graphs = re.findall(r'srcdoc="([^"]*)"', (tmp_path / "report.html").read_text())
    assert len(graphs) == 2  # the writers' and the producer's
    for graph in graphs:
        names = re.findall(r'data-n="([^"]*)"', html.unescape(graph))
        assert names and not _probe_named(names), _probe_named(names)
    run_writerprof("flame", path, "--role", "all", "--threads", "split", "-o", tmp_path / "split")
    names = _svg_frames(tmp_path / "split.svg")
    assert len(names) > 20 and not _probe_named(names), _probe_named(names)


def _subtitle(file):
    [text] = [t.text for t in ET.fromstring(file.read_bytes()).iter(SVG + "text") if t.get("class") == "s"]
    return text


def test_a_graph_that_adds_threads_up_says_so_and_draws_them_apart_if_asked(fork, tmp_path):
    path, _ = fork
    done = run_writerprof("flame", path, "--role", "producer", "-o", tmp_path / "producer")
    # The producer's main thread and its queue's feeder thread (one per queue: a thread id each).
    said = re.match(r"(\d+) threads added up: (\d+) samples at 100 Hz, (\d+\.\d) s of thread time "
                    r"over a (\d+\.\d) s run; ", _subtitle(tmp_path / "producer.svg"))
    assert said and int(said[1]) >= 2, _subtitle(tmp_path / "producer.svg")
    threads, samples = said[1], int(said[2])
    assert said[3] == f"{samples / 100:.1f}" and float(said[4]) > 0
    assert done.stderr.rstrip("\n").endswith(f"producer: 1 process, {samples} samples; {threads} threads added up")
    run_writerprof("flame", path, "--role", "producer", "--threads", "split", "-o", tmp_path / "split")
    assert _subtitle(tmp_path / "split.svg").startswith(f"{threads} threads, each thread under its name: {samples} ")
    roots = {g.get("data-n") for g in ET.fromstring((tmp_path / "split.svg").read_bytes()).iter(SVG + "g")
             if g.get("data-d") == "1"}
    assert roots == {"thread MainThread", "thread QueueFeederThread"}
    run_writerprof("export", path, "--speedscope", tmp_path / "s.json")
    run_writerprof("export", path, "--speedscope", tmp_path / "split.json", "--threads", "split")
    names, split = ([p["name"] for p in json.loads((tmp_path / f).read_text())["profiles"]]
                    for f in ("s.json", "split.json"))
    [producer] = [n for n in names if n.startswith("producer ")]
    assert producer.endswith(f" ({threads} threads added up)")
    pid = producer.split()[2]
    assert {n for n in split if n.startswith("producer ")} == {f"producer pid {pid}: thread MainThread",
                                                                 f"producer pid {pid}: thread QueueFeederThread"}


def test_the_probe_and_py_spy_tell_threads_apart(forkserver):
    path, _, _ = forkserver
    stacks = load_stacks(load(path))
    assert all(s.thread_ids >= 1 and "thread MainThread" in s.threads for s in stacks), [
        (s.label, list(s.threads)) for s in stacks]
