"""`writerprof record` on real commands: the reproducer checked against its own
ground truth under each start method, and how record behaves at the edges
(exit statuses, signals, missing commands, killed targets, secrets)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from writerprof.run import load

from helpers import attached_placements, mount_tmpfs, run_writerprof, writerprof_command

TARGETS = Path(__file__).parent / "targets"


def record(run_dir, *command, check=True, env=None, timeout=240, options=()):
    done = subprocess.run(writerprof_command() + ["record", "-o", str(run_dir), *options, "--", *map(str, command)],
                          capture_output=True, text=True, timeout=timeout, env=env)
    if check and done.returncode != 0:
        raise AssertionError(f"record exited {done.returncode}:\n{done.stderr}")
    return done


def phase_of(run, name):
    return {n: c for c, n in run.phase_names.items()}[name]


def seconds(chunks):
    return float((chunks["end_ns"] - chunks["start_ns"]).sum()) / 1e9


def close_to(measured, truth, share=0.05):
    return abs(measured - truth) <= share * truth


@pytest.fixture(scope="module", params=["fork", "forkserver", "spawn"])
def recorded_repro(request, tmp_path_factory):
    """The reproducer recorded under one start method, with its own figures."""
    run_dir = tmp_path_factory.mktemp(request.param) / "run"
    done = record(run_dir, *writerprof_command(), "repro", "--json", "--saves", "2", "--size", "256MiB",
                  "--start-method", request.param)
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return request.param, load(run_dir), [r for r in lines if r["record"] == "save"], done


def test_record_passes_the_commands_output_through(recorded_repro):
    method, run, saves, done = recorded_repro
    assert len(saves) == 2 and all(s["start_method"] == method for s in saves)
    assert "writerprof record: recording into" in done.stderr
    assert "next:            writerprof report" in done.stderr
    assert run.complete and run.meta["exit_status"] == 0 and run.meta["ended_by"] == "exit"
    assert run.losses == []


def test_the_summary_counts_recording_problems_apart_from_the_reports_diagnoses(recorded_repro):
    """Two words for two things: what the recording missed, and the
    diagnoses of the run, counted as `report` lists them."""
    _, run, _, done = recorded_repro
    diagnoses = json.loads(run_writerprof("report", "--json", run.path).stdout)["diagnoses"]
    summary = done.stderr[done.stderr.index(f"writerprof record: {run.path}\n"):].splitlines()
    assert len([line for line in summary if line.startswith("  recording problems ")]) == 1
    (counted,) = [line.split()[1] for line in summary if line.startswith("  diagnoses ")]
    assert counted == (str(len(diagnoses)) if diagnoses else "none")


def test_per_save_figures_match_the_reproducers_own(recorded_repro):
    method, run, saves, _ = recorded_repro
    (producer,) = [p for p in run.processes if p["role"] == "main" and any(
        e["kind"] == "process_start" for e in run.process_events(p["host"], p["pid"]))]
    starts = [e["data"] for e in run.process_events(producer["host"], producer["pid"])
              if e["kind"] == "process_start"]
    assert [s["method"] for s in starts] == [method] * 2
    assert [s["writer_seq"] for s in starts] == [0, 1]
    chunks = run.chunks
    for save, start in zip(saves, starts):
        assert start["child_pid"] == save["writer_pid"]
        writer = chunks[chunks["pid"] == save["writer_pid"]]
        writes = writer[writer["phase"] == phase_of(run, "write")]
        assert len(writes) == save["chunks"] and writes["bytes"].sum() == save["bytes"]
        assert close_to(seconds(writes), save["write_s"]), (seconds(writes), save["write_s"])
        fsyncs = writer[writer["phase"] == phase_of(run, "fsync")]
        assert len(fsyncs) == 1 and close_to(seconds(fsyncs), save["fsync_s"])
        mine = chunks[(chunks["pid"] == producer["pid"]) & (chunks["writer_seq"] == start["writer_seq"])]
        gens = mine[mine["phase"] == phase_of(run, "gen")]
        assert len(gens) == save["chunks"] and close_to(seconds(gens), save["gen_s"])
        puts = mine[mine["phase"] == phase_of(run, "put")]
        assert len(puts) == save["chunks"] + 1  # the chunks and the end marker
        # Every write read a buffer this writer attached, and the CPU is known.
        assert (writes["buffer"] >= 0).all() and (writes["cpu"] >= 0).all()


def test_writer_start_up_phases(recorded_repro):
    method, run, saves, _ = recorded_repro
    for save in saves:
        events = run.process_events(run.hosts[0], save["writer_pid"])
        kinds = events["kind"].tolist()
        who = events[0]["data"]
        assert who["role"] == {"fork": "fork_child", "forkserver": "forkserver_child",
                               "spawn": "spawn_child"}[method]
        for kind in ("activated" if method == "spawn" else "process", "bootstrap", "target_start", "exit"):
            assert kind in kinds, kind
        assert kinds.index("bootstrap") < kinds.index("target_start") < kinds.index("exit")
        # The writer leaves from inside its target, as the benchmark's does.
        assert events[kinds.index("exit")]["data"]["via"] == "os._exit" and "target_end" not in kinds
        first_write = run.chunks[(run.chunks["pid"] == save["writer_pid"])
                                 & (run.chunks["phase"] == phase_of(run, "write"))]["start_ns"].min()
        assert events[kinds.index("target_start")]["t_ns"] < first_write
        reruns = [e["data"] for e in events if e["kind"] == "main_rerun"]
        if method == "fork":
            assert reruns == [] and "unpickle" not in kinds
        else:
            (rerun,) = reruns
            assert rerun["path"].endswith(os.path.join("repro", "main.py"))
            assert rerun["start_ns"] <= rerun["end_ns"] <= events[kinds.index("target_start")]["t_ns"]
            assert "unpickle" in kinds
            assert kinds.index("main_rerun") < kinds.index("unpickle") < kinds.index("bootstrap")


def test_forkserver_daemon_and_resource_tracker_are_identified(recorded_repro):
    method, run, saves, _ = recorded_repro
    roles = run.processes["role"].tolist()
    assert roles.count("forkserver") == (1 if method == "forkserver" else 0)
    if method == "forkserver":
        (daemon,) = run.processes[run.processes["role"] == "forkserver"]
        for save in saves:
            writer = run.identity(run.hosts[0], save["writer_pid"])
            assert writer["forked_from"] == daemon["pid"] and writer["ppid"] == daemon["pid"]
    if method != "fork":  # shared memory under spawn/forkserver needs the tracker
        assert "resource_tracker" in roles


def test_every_buffer_has_a_placement(recorded_repro):
    method, run, saves, _ = recorded_repro
    shm = run.buffer_events("shm")
    placements = run.buffer_events("placement")
    assert len(shm) >= 2 * 4 * 2  # 4 buffers per save, created by the producer and attached by the writer
    for event in shm:
        mine = [p["data"] for p in placements if p["proc"] == event["proc"]
                and p["data"]["index"] == event["data"]["index"]]
        assert mine, event["data"]
        for placement in mine:
            assert placement["pages"] == event["data"]["size"] // os.sysconf("SC_PAGE_SIZE")
            assert placement["sampled"] == -(-placement["pages"] // placement["stride"])
            assert sum(placement["nodes"].values()) + placement["unfaulted"] == placement["sampled"]
    # At the end of the writer's loop every page it wrote from is mapped, on some node.
    for save in saves:
        attached, ends = attached_placements(run, save["writer_pid"], "end")
        assert len(attached) == 4 and len(ends) == 4 and all(sum(e["nodes"].values()) > 0 for e in ends)


def test_the_sampler_saw_every_writer(recorded_repro):
    method, run, saves, _ = recorded_repro
    sampled = set(run.samples["pid"].tolist())
    for save in saves:
        assert save["writer_pid"] in sampled
        seen = [s for s in run.sampled if s["pid"] == save["writer_pid"] and s["kind"] == "seen"]
        assert len(seen) == 1
    assert (np.diff(run.samples["t_ns"]) >= 0).all() or len(run.samples) < 2


def test_exit_status_is_the_commands(tmp_path):
    done = record(tmp_path / "run", sys.executable, "-c", "import sys; print('out'); sys.exit(3)",
                  check=False)
    assert done.returncode == 3 and done.stdout == "out\n"
    run = load(tmp_path / "run")
    assert run.complete and run.meta["exit_status"] == 3 and len(run.processes) == 1


def test_a_command_killed_by_a_signal(tmp_path):
    """SIGKILL of the target: record dies of it too, as a transparent parent
    does (run.json says 128+9); every write is in the interposer's journal
    (mapped: written as it happens), the probe's journal loads up to its last flush."""
    done = record(tmp_path / "run", sys.executable, TARGETS / "killed_writer.py", tmp_path / "out.bin",
                  check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert "command exited   137" in done.stderr
    run = load(tmp_path / "run")
    assert run.complete and run.meta["ended_by"] == "signal" and run.meta["signal"] == "SIGKILL"
    writes = run.chunks[run.chunks["phase"] == phase_of(run, "write")]
    assert len(writes) == 600 and (writes["bytes"] == 4096).all()
    assert any("left no exit record (killed by a signal" in loss and "its file calls are all there" in loss
               for loss in run.losses)


def test_missing_command(tmp_path):
    done = run_writerprof("record", "-o", tmp_path / "run", "--", "no-such-command-here", check=False)
    assert done.returncode == 127
    assert done.stderr.strip() == "writerprof record: command not found: no-such-command-here"
    assert not (tmp_path / "run").exists()


def test_no_command_is_a_usage_error(tmp_path):
    done = run_writerprof("record", "-o", tmp_path / "run", check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


def test_non_python_command_with_python_grandchildren(tmp_path):
    script = tmp_path / "bench.sh"
    script.write_text(f"#!/bin/sh\n{sys.executable} {TARGETS / 'shm_writer.py'} spawn {tmp_path / 'a.bin'}\n"
                      f"{sys.executable} {TARGETS / 'shm_writer.py'} fork {tmp_path / 'b.bin'}\n")
    script.chmod(0o755)
    done = record(tmp_path / "run", script)
    assert done.stdout == "writer exit 0\nwriter exit 0\n"
    run = load(tmp_path / "run")
    roles = sorted(run.processes["role"].tolist())
    assert roles.count("main") == 2 and "spawn_child" in roles and "fork_child" in roles
    # The shell itself is not Python: sampled, not probed.
    seen = {s["pid"]: s for s in run.sampled if s["kind"] == "seen"}
    # (A child the shell forked may be seen before it execs Python: that one is probed.)
    shells = [pid for pid, s in seen.items() if s["cmdline"][:1] == ["/bin/sh"]]
    assert len(set(shells) - set(run.processes["pid"].tolist())) == 1


def test_credentials_never_reach_the_run_directory(tmp_path):
    secrets = {"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI-not-a-real-key", "AWS_ACCESS_KEY_ID": "AKIAEXAMPLEID77",
               "OMPI_MCA_some_token": "tok-123-secret", "MY_PASSWORD": "hunter2-hunter2"}
    env = dict(os.environ, OMP_NUM_THREADS="3", **secrets)
    record(tmp_path / "run", sys.executable, TARGETS / "shm_writer.py", "fork", tmp_path / "out.bin", env=env)
    blob = b"".join(p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file())
    for name, value in secrets.items():
        assert value.encode() not in blob, name
        assert name.encode() not in blob, name
    run = load(tmp_path / "run")
    assert run.meta["env"]["OMP_NUM_THREADS"] == "3"
    assert all(p["env"]["OMP_NUM_THREADS"] == "3" for p in (e["data"] for e in run.events_of("process")))


def test_a_shadowed_sitecustomize_still_runs(tmp_path):
    other = tmp_path / "site"
    other.mkdir()
    (other / "sitecustomize.py").write_text(
        "import os\nopen(os.environ['MARKER'], 'a').write('%d\\n' % os.getpid())\n")
    env = dict(os.environ, PYTHONPATH=str(other), MARKER=str(tmp_path / "marker"))
    record(tmp_path / "run", sys.executable, TARGETS / "shm_writer.py", "spawn", tmp_path / "out.bin", env=env)
    run = load(tmp_path / "run")
    ran = {int(pid) for pid in (tmp_path / "marker").read_text().split()}
    # Every probed process (the target, its writer, the resource tracker) ran it
    # too, and so did the launcher, whose own PYTHONPATH names it.
    assert len(run.processes) >= 3 and set(run.processes["pid"].tolist()) < ran


def test_a_module_imported_before_the_probe_is_hooked(tmp_path):
    """posixpath is imported by site before sitecustomize runs: a spec on it
    must be applied to the module already there."""
    code = "import os\nfor i in range(7): os.path.join('a', str(i))\n"
    done = subprocess.run(writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--probe",
                          "posixpath:join=pathjoin", "--", sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    run = load(tmp_path / "run")
    joins = run.chunks[run.chunks["phase"] == phase_of(run, "pathjoin")]
    assert len(joins) == 7
    (hook,) = [e["data"] for e in run.events_of("hook") if e["data"]["spec"] == "posixpath:join=pathjoin"]
    assert hook["status"] == "applied"


def test_a_bad_probe_spec_is_a_usage_error(tmp_path):
    done = run_writerprof("record", "-o", tmp_path / "run", "--probe", "nocolon=x", "--", "true",
                          check=False)
    assert done.returncode == 2 and "MODULE:QUALNAME=PHASE" in done.stderr
    assert not (tmp_path / "run").exists()


def test_an_unwritable_run_directory_turns_the_probe_off(tmp_path):
    env = dict(os.environ, WRITERPROF_RUN="/proc/no-such-run",
               PYTHONPATH=str(Path(writerprof_probe_dir())))
    done = subprocess.run([sys.executable, "-c", "print('fine')"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "fine\n"
    (line,) = done.stderr.splitlines()
    assert line.startswith("writerprof: probe off in pid ")


def writerprof_probe_dir():
    import writerprof.probes

    return os.path.dirname(writerprof.probes.__file__)


def test_sigterm_is_forwarded_and_the_run_stays_loadable(tmp_path):
    run_dir = tmp_path / "run"
    code = "import time\nprint('ready', flush=True)\nwhile True: time.sleep(0.05)\n"
    recorder = subprocess.Popen(writerprof_command() + ["record", "-o", str(run_dir), "--", sys.executable,
                                                        "-c", code],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert recorder.stdout.readline() == "ready\n"
    recorder.send_signal(signal.SIGTERM)
    out, err = recorder.communicate(timeout=60)
    assert recorder.returncode == -signal.SIGTERM, err
    run = load(run_dir)
    assert run.complete and run.meta["signal"] == "SIGTERM"
    # The probe has no handler to journal its end with: the target died of the signal itself.
    assert len(run.events_of("exit")) == 0
    (loss,) = run.losses
    assert "left no exit record (killed by a signal" in loss


SHORT_WRITERS = """
import multiprocessing, time
if __name__ == "__main__":
    for _ in range(3):
        writer = multiprocessing.get_context("fork").Process(target=time.sleep, args=(0.2,))
        writer.start()
        writer.join()
"""


def test_short_lived_writers_are_sampled(tmp_path):
    """Writers that live 200 ms still get samples at the default interval."""
    script = tmp_path / "short.py"
    script.write_text(SHORT_WRITERS)
    record(tmp_path / "run", sys.executable, script)
    run = load(tmp_path / "run")
    writers = [e["data"]["child_pid"] for e in run.events_of("process_start")]
    assert len(writers) == 3
    for pid in writers:
        assert (run.samples["pid"] == pid).sum() >= 1, pid
        kinds = {s["kind"] for s in run.sampled if s["pid"] == pid}
        assert {"seen", "affinity", "gone"} <= kinds


def _in_a_terminal(argv, steps, timeout_s: float = 60) -> tuple[str, int]:
    """Run argv with a new pseudo-terminal as its controlling terminal; each
    step (text, keys) types keys once the text has shown there. What it
    printed, and its exit status."""
    import pty
    import select

    pid, master = pty.fork()
    if pid == 0:  # the child: its stdin, stdout and stderr are the terminal
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    out, steps = b"", list(steps)
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if steps and steps[0][0].encode() in out:
                os.write(master, steps.pop(0)[1])
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 4096)
                except OSError:  # EIO: every process of the terminal is gone
                    break
                if not data:
                    break
                out += data
        else:
            os.kill(pid, signal.SIGKILL)
            raise AssertionError(f"still running after {timeout_s} s:\n{out.decode(errors='replace')}")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(master)
    return out.decode(errors="replace"), os.waitstatus_to_exitcode(status)


def test_in_a_terminal_the_command_reads_it_and_gets_ctrl_c(tmp_path):
    """CMD runs in its own process group; at a terminal that group is the
    foreground one, so CMD can read the terminal (as mpiexec does to forward
    stdin) and Ctrl-C goes to it."""
    # Short sleeps: a signal that lands just before a long sleep starts would
    # only be handled after it (CPython checks for signals between calls).
    # The print inside the try: Ctrl-C is typed as soon as "got hello" shows.
    code = ("import time\ntry:\n    print('got', input(), flush=True)\n    while True:\n"
            "        time.sleep(0.05)\nexcept KeyboardInterrupt:\n"
            "    print('interrupted', flush=True)\n    raise\n")
    argv = writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--", sys.executable, "-c", code]
    out, status = _in_a_terminal(argv, [("recording into", b"hello\n"), ("got hello", b"\x03")])
    assert "got hello" in out and "interrupted" in out, out
    assert status == -signal.SIGINT  # as CMD ended: the shell sees a Ctrl-C'd job
    run = load(tmp_path / "run")
    assert run.complete and run.meta["exit_status"] == 130 and run.meta["signal"] == "SIGINT"


def test_a_command_that_cannot_run(tmp_path):
    script = tmp_path / "not-executable.sh"
    script.write_text("echo hi\n")  # no execute permission
    done = run_writerprof("record", "-o", tmp_path / "run", "--", script, check=False)
    assert done.returncode == 126
    assert done.stderr.strip().splitlines()[-1] == f"writerprof record: cannot run {script}: Permission denied"
    run = load(tmp_path / "run")
    assert run.complete and run.meta["ended_by"] == "not_started" and len(run.processes) == 0


def _screen(out: str) -> list[str]:
    """The terminal's lines as they stay on screen: a carriage return starts
    the line over, and an erase-line sequence (ESC [ K) empties it."""
    lines = []
    for line in out.replace("\r\n", "\n").split("\n"):
        lines.append(line.rsplit("\r", 1)[-1].rsplit("\033[K", 1)[-1])
    return lines


PRINTS_LINES = "import time\nfor i in range(8):\n    print('line', i, flush=True)\n    time.sleep(0.15)\n"


def test_in_a_terminal_the_commands_lines_stay_whole(tmp_path):
    """record writes nothing on CMD's terminal while it runs: no status line
    that erases a line or joins one (before: '...0.00 GiB writtenline 3')."""
    argv = writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--", sys.executable, "-c",
                                   PRINTS_LINES]
    out, status = _in_a_terminal(argv, [])
    assert status == 0, out
    screen = _screen(out)
    assert "\033[K" not in out
    lines = [line for line in screen if "line " in line]
    assert lines == [f"line {i}" for i in range(8)], screen
    # Before CMD: one line of record's; after it, the summary.
    first = screen.index("line 0")
    assert [line for line in screen[:first] if line] == [f"writerprof record: recording into {tmp_path / 'run'}"]


def test_in_a_terminal_contrasts_labels_stay(tmp_path):
    argv = writerprof_command() + ["contrast", "--methods", "fork,spawn", "--repeat", "1", "-o",
                                   str(tmp_path / "contrast"), "--", sys.executable, str(TARGETS / "shm_writer.py"),
                                   "fork", str(tmp_path / "out.bin")]
    out, status = _in_a_terminal(argv, [], timeout_s=180)
    assert status == 0, out
    screen = _screen(out)
    for label in ("[1/2] fork", "[2/2] spawn"):
        (line,) = [line for line in screen if label in line]
        assert "repeat 1" in line and "1 saves" in line, line  # the label and its outcome, on one line


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


LEAVES_A_GRANDCHILD = """
import subprocess, sys, time
left = subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.05)"],
                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
open(sys.argv[1], "w").write(str(left.pid))
start = time.monotonic()
while time.monotonic() - start < 0.5:
    sum(range(1000))
"""


def test_a_python_grandchild_that_outlives_cmd_is_named_and_not_waited_for(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    started = time.monotonic()
    done = record(tmp_path / "run", sys.executable, "-c", LEAVES_A_GRANDCHILD, pid_file, timeout=60)
    took = time.monotonic() - started
    grandchild = int(pid_file.read_text())
    try:
        assert _alive(grandchild)  # record returned, py-spy stopped, and it still runs
        assert took < 10, took  # before: py-spy waited for it, ~30 s
        run = load(tmp_path / "run")
        assert [p["pid"] for p in run.meta["outlived_cmd"]] == [grandchild]
        assert run.meta["outlived_cmd"][0]["cmdline"][:2] == [sys.executable, "-c"]
        (said,) = [line for line in done.stderr.splitlines() if "outlived CMD" in line]
        assert f"pid {grandchild} " in said
        assert run.meta["stacks"]["taken"]  # what py-spy had was written when it was stopped
    finally:
        os.kill(grandchild, signal.SIGKILL)


@pytest.mark.parametrize("by, reason", [
    ("py-spy", "no Python process was found in CMD's process tree"),
    ("probe", "no Python process was probed")])
def test_a_command_that_never_runs_python_starts_no_py_spy(tmp_path, by, reason):
    record(tmp_path / "run", "sh", "-c", "sleep 0.3", options=("--stacks-by", by))
    run = load(tmp_path / "run")
    assert run.meta["stacks"]["reason"] == reason and run.meta["stacks"]["by"] == by
    # Before: py-spy was started, and retried every half second (its log says each time).
    assert not list((tmp_path / "run").rglob("py-spy.log"))


SEGFAULTS = """
import os, signal, time
start = time.monotonic()
while time.monotonic() - start < 0.8:
    sum(range(1000))
os.kill(os.getpid(), signal.SIGSEGV)
"""


@pytest.mark.parametrize("by", ["probe", "py-spy"])
def test_a_python_command_killed_by_a_signal_keeps_its_stacks(tmp_path, by):
    # (The probe's: what it had written at its last rewrite, 0.75 s into the 0.8 s.)
    done = record(tmp_path / "run", sys.executable, "-c", SEGFAULTS, check=False, options=("--stacks-by", by))
    assert done.returncode == -signal.SIGSEGV, done.stderr
    run = load(tmp_path / "run")
    assert run.meta["signal"] == "SIGSEGV"
    assert run.meta["stacks"]["taken"] and run.meta["stacks"]["samples"] > 0, run.meta["stacks"]
    assert "no Python process was found" not in done.stderr


WAITS = "import time\nprint('ready', flush=True)\nwhile True: time.sleep(0.05)\n"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_contrast_ends_with_128_plus_the_signal(tmp_path, signum):
    out = tmp_path / "contrast"
    contrast = subprocess.Popen(writerprof_command() + ["contrast", "--repeat", "1", "-o", str(out), "--",
                                                        sys.executable, "-c", WAITS],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = out / "runs" / "01-fork" / "output.log"
    deadline = time.monotonic() + 60
    while not (log.exists() and "ready" in log.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    contrast.send_signal(signum)
    _, err = contrast.communicate(timeout=60)
    assert contrast.returncode == 128 + signum, err  # before: 1, "the fork recording failed"
    assert err.splitlines()[-1] == "writerprof contrast: interrupted"
    run = load(out / "runs" / "01-fork")  # the recording under way was finished
    assert run.complete and run.meta["signal"] == signal.Signals(signum).name
    assert not (out / "runs" / "02-forkserver").exists() and not (out / "contrast.json").exists()


def test_probe_specs_that_match_nothing_are_counted_and_named(tmp_path):
    done = subprocess.run(writerprof_command() + [
        "record", "--no-stacks", "-o", str(tmp_path / "run"), "--probe", "os:no_such_call=x",
        "--probe", "no_such_module:f=y", "--probe", "posixpath:join=pathjoin", "--", sys.executable, "-c",
        "import os.path; os.path.join('a', 'b')"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "  probes           3 given, 2 matched nothing" in done.stderr
    said = [line.strip() for line in done.stderr.splitlines() if "matched nothing:" in line]
    assert said == ["--probe os:no_such_call=x matched nothing: os has no callable no_such_call",
                    "--probe no_such_module:f=y matched nothing: no process imported no_such_module"]
    run = load(tmp_path / "run")  # what the report needs is in the journal
    statuses = {e["data"]["spec"]: e["data"]["status"] for e in run.events_of("hook")}
    assert statuses["os:no_such_call=x"] == "unavailable" and statuses["posixpath:join=pathjoin"] == "applied"


def _read_only_directory(tmp_path):
    return mount_tmpfs(tmp_path / "read-only", "ro,size=64k")


@pytest.mark.parametrize("command, what", [(["record", "--", "true"], "run directory"),
                                           (["contrast", "--", "true"], "contrast directory")])
def test_an_unwritable_default_location_is_one_line(tmp_path, command, what):
    place = _read_only_directory(tmp_path)
    try:
        done = subprocess.run(writerprof_command() + command, cwd=place, capture_output=True, text=True,
                              timeout=60)
    finally:
        subprocess.run(["umount", str(place)], check=True)
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"writerprof {command[0]}: cannot make the {what} {place}/writerprof-"), line
    assert "Read-only file system" in line and "-o" in line


def test_ctrl_c_at_a_terminal_ends_contrast_with_130(tmp_path):
    """At a terminal Ctrl-C goes to the command's process group alone (it has
    the terminal): contrast still stops, once that recording is finished."""
    out = tmp_path / "contrast"
    argv = writerprof_command() + ["contrast", "--repeat", "1", "-o", str(out), "--", sys.executable, "-c", WAITS]
    log = out / "runs" / "01-fork" / "output.log"

    class Ready:  # typed once the command has said it is running
        def encode(self):
            return b"[1/" if log.exists() and "ready" in log.read_text() else b"\0never"

    screen, status = _in_a_terminal(argv, [(Ready(), b"\x03")])
    assert status == 128 + signal.SIGINT, screen
    assert "writerprof contrast: interrupted" in screen
    assert load(out / "runs" / "01-fork").complete and not (out / "runs" / "02-forkserver").exists()
