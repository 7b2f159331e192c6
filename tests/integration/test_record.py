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

from helpers import attached_placements, run_writerprof, writerprof_command

TARGETS = Path(__file__).parent / "targets"


def record(run_dir, *command, check=True, env=None, timeout=240):
    done = subprocess.run(writerprof_command() + ["record", "-o", str(run_dir), "--", *map(str, command)],
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
    shm = run.events_of("shm")
    placements = run.events_of("placement")
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
    """SIGKILL of the target: 128+9, and the journal loads up to its last flush."""
    done = record(tmp_path / "run", sys.executable, TARGETS / "killed_writer.py", tmp_path / "out.bin",
                  check=False)
    assert done.returncode == 128 + signal.SIGKILL, done.stderr
    run = load(tmp_path / "run")
    assert run.complete and run.meta["ended_by"] == "signal" and run.meta["signal"] == "SIGKILL"
    writes = run.chunks[run.chunks["phase"] == phase_of(run, "write")]
    assert len(writes) == 512  # the first batch was flushed; the 88 after it died with the process
    assert any("left no exit record (killed by SIGKILL" in loss for loss in run.losses)


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
    assert recorder.returncode == 128 + signal.SIGTERM, err
    run = load(run_dir)
    assert run.complete and run.meta["signal"] == "SIGTERM"
    (exit_event,) = run.events_of("exit")
    assert exit_event["data"]["via"] == "signal" and exit_event["data"]["signal"] == "SIGTERM"
    assert run.losses == []


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
    stdin) and Ctrl-C goes to it. The status line shows while it runs."""
    # Short sleeps: a signal that lands just before a long sleep starts would
    # only be handled after it (CPython checks for signals between calls).
    # The print inside the try: Ctrl-C is typed as soon as "got hello" shows.
    code = ("import time\ntry:\n    print('got', input(), flush=True)\n    while True:\n"
            "        time.sleep(0.05)\nexcept KeyboardInterrupt:\n"
            "    print('interrupted', flush=True)\n    raise\n")
    argv = writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--", sys.executable, "-c", code]
    out, status = _in_a_terminal(argv, [("writers alive", b"hello\n"), ("got hello", b"\x03")])
    assert "got hello" in out and "interrupted" in out, out
    assert status == 128 + signal.SIGINT
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
