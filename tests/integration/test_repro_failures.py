"""Bad input and dying writers: one clear line, non-zero exit, nothing leaked,
no hang (the autouse fixture checks /dev/shm after every test)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil
import pytest
from helpers import filled_up_env, run_writerprof, writerprof_command


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--size", "12XB"], "'12XB' is not a size"),
        (["--chunk-size", "0"], "not a positive whole number"),
        (["--saves", "none"], "--saves"),
        (["--start-method", "thread"], "invalid choice: 'thread'"),
        (["--writer-cpus", "4096"], "outside the allowed CPUs"),
        (["--pin-parent", "1-0"], "runs backwards"),
        (["--touch-cpus", "x"], "is not a CPU list"),
        (["--dir", "/proc/self/no/such"], "not writable"),
        (["--dir", "/etc/hostname/sub"], "not writable"),
        (["--main-imports", "no_such_module_here"], "no module named"),
        (["--pin-when", "after-first-writer"], "needs --pin-parent"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--buffers", "64", "--chunk-size", "1TiB"], "of shared memory; /dev/shm has"),
    ],
)
def test_bad_input_is_one_line(args, expected):
    done = run_writerprof("repro", "--saves", 1, "--size", "1MiB", *args, check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("writerprof repro: error: ")
    assert expected in lines[0]
    assert done.stdout == ""


def test_unknown_subcommand_and_version():
    done = run_writerprof("nosuch", check=False)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "writerprof: error: unknown command 'nosuch'; the commands: record, report, compare, contrast, plot, "
        "flame, export, merge, repro"
    ]
    assert run_writerprof("--version").stdout.startswith("writerprof ")


def _is_writer(child: psutil.Process, repro: psutil.Process, method: str) -> bool:
    parent = child.parent()
    cmdline = child.cmdline()
    forked = cmdline == repro.cmdline() and parent.pid == repro.pid
    from_daemon = "forkserver" in " ".join(cmdline) and parent.pid != repro.pid
    spawned = "--multiprocessing-fork" in cmdline and parent.pid == repro.pid
    return {"fork": forked, "forkserver": from_daemon, "spawn": spawned}[method]


def _find_writer(repro: psutil.Process, method: str, deadline: float) -> psutil.Process:
    """The writer child: a fork of the repro process, a fork of its forkserver,
    or a spawned interpreter of its own. A child that still is one a quarter
    of a second later: between its fork and its exec, the resource tracker
    (or any other helper started by fork and exec) has the repro's command
    line too, and killing it is not killing the writer."""
    while time.monotonic() < deadline:
        for child in repro.children(recursive=True):
            try:
                if _is_writer(child, repro, method):
                    time.sleep(0.25)
                    if child.is_running() and _is_writer(child, repro, method):
                        return child
            except psutil.NoSuchProcess:
                continue
        time.sleep(0.02)
    raise AssertionError("no writer process appeared")


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_killed_writer_fails_the_save_cleanly(method, tmp_path):
    repro = subprocess.Popen(
        writerprof_command() + ["repro", "--start-method", method, "--saves", "3", "--size", "4GiB",
                                "--generator", "random", "--dir", str(tmp_path), "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        writer = _find_writer(psutil.Process(repro.pid), method, time.monotonic() + 60)
        os.kill(writer.pid, signal.SIGKILL)
        out, err = repro.communicate(timeout=60)
    finally:
        repro.kill()
        repro.wait()
    assert repro.returncode == 1, err
    assert f"save 1 failed: writer (pid {writer.pid}) was killed by SIGKILL" in err
    assert "Traceback" not in err
    assert out == ""  # no save record for a save that did not complete
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_run_cleans_up(signum, tmp_path):
    repro = subprocess.Popen(
        writerprof_command() + ["repro", "--saves", "3", "--size", "4GiB", "--generator", "random",
                                "--dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        _find_writer(psutil.Process(repro.pid), "fork", time.monotonic() + 60)
        repro.send_signal(signum)
        _, err = repro.communicate(timeout=60)
    finally:
        repro.kill()
        repro.wait()
    assert repro.returncode == 128 + signum, err
    assert err.strip().splitlines()[-1] == "writerprof repro: interrupted"
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_writer_error_is_reported_with_its_cause(method, tiny_filesystem):
    done = subprocess.run(
        writerprof_command() + ["repro", "--start-method", method, "--saves", "2", "--size", "2MiB",
                                "--chunk-size", "1MiB", "--dir", str(tiny_filesystem),
                                "--main-imports", "fill_up"],
        env=filled_up_env(tiny_filesystem), capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("writerprof repro: save 1 failed: writer (pid ")
    assert line.endswith("exited with status 1: OSError: [Errno 28] No space left on device")
    os.remove(tiny_filesystem / "filler")  # the test's own
    assert os.listdir(tiny_filesystem) == []


@pytest.mark.parametrize(
    "args, needed",
    [
        (["--saves", "2", "--size", "5MiB"], "--size needs 5.0 MiB"),
        (["--saves", "3", "--size", "2MiB", "--keep"], "--saves x --size (with --keep) needs 6.0 MiB"),
    ],
)
def test_a_save_larger_than_the_free_space_is_refused(tiny_filesystem, args, needed):
    done = run_writerprof("repro", "--chunk-size", "1MiB", "--dir", tiny_filesystem, *args,
                          check=False)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line == (f"writerprof repro: error: {needed}; {tiny_filesystem} has 4.0 MiB free")
    assert done.stdout == "" and os.listdir(tiny_filesystem) == []


@pytest.mark.parametrize("args", [["--saves", "3", "--size", "2MiB"],
                                  ["--saves", "2", "--size", "2MiB", "--keep"]])
def test_saves_that_fit_the_free_space_run(tiny_filesystem, args):
    # Without --keep each save's file goes before the next: only one must fit.
    done = run_writerprof("repro", "--chunk-size", "1MiB", "--no-fsync", "--dir", tiny_filesystem,
                          *args)
    kept = os.listdir(tiny_filesystem)
    assert len(kept) == (2 if "--keep" in args else 0)
    assert "mean" in done.stderr.strip().splitlines()[-1]


def test_a_size_beyond_the_default_directory_is_refused():
    done = run_writerprof("repro", "--size", "1000TiB", check=False)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("writerprof repro: error: --size needs 1000.0 TiB; ")
    assert line.endswith(" free")


def _gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _helpers(repro: psutil.Process) -> dict[str, psutil.Process]:
    """The producer's multiprocessing helpers, by name: its forkserver daemon
    and its resource tracker."""
    found = {}
    for child in repro.children(recursive=True):
        try:
            cmdline = " ".join(child.cmdline())
        except psutil.NoSuchProcess:
            continue
        for name in ("forkserver", "resource_tracker"):
            if f"multiprocessing.{name} import main" in cmdline:
                found[name] = child
    return found


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_writer_dies_with_its_killed_producer(method, tmp_path):
    segments_before = set(os.listdir("/dev/shm"))
    repro = subprocess.Popen(
        writerprof_command() + ["repro", "--start-method", method, "--saves", "3", "--size", "4GiB",
                                "--generator", "random", "--no-fsync", "--dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        producer = psutil.Process(repro.pid)
        writer = _find_writer(producer, method, time.monotonic() + 60)
        deadline = time.monotonic() + 60
        while not any(p.stat().st_size for p in tmp_path.iterdir()):  # mid-save
            assert time.monotonic() < deadline, "the writer wrote nothing"
            time.sleep(0.02)
        helpers = _helpers(producer)
        segments = set(os.listdir("/dev/shm")) - segments_before
        os.kill(repro.pid, signal.SIGKILL)
        repro.communicate(timeout=60)
    finally:
        repro.kill()
        repro.wait()
    assert segments, "the save had no buffers in /dev/shm"
    assert "resource_tracker" in helpers
    assert ("forkserver" in helpers) == (method == "forkserver")
    deadline = time.monotonic() + 15  # a few seconds, with room for a loaded machine
    while time.monotonic() < deadline:
        left = segments & set(os.listdir("/dev/shm"))
        if _gone(writer) and all(map(_gone, helpers.values())) and not left:
            break
        time.sleep(0.05)
    assert _gone(writer), "the writer outlived its producer"
    assert [name for name, p in helpers.items() if not _gone(p)] == []
    assert segments & set(os.listdir("/dev/shm")) == set()
