"""Checkpoint writers of every shape, through `writerprof record`: the
interposer sees each file's writes and fsync whatever made them, one save per
file, its bytes those on disk, its times the target's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from writerprof.analysis import saves
from writerprof.run import files, load
from writerprof.run.roles import roles

from helpers import writerprof_command

TARGETS = Path(__file__).parent / "targets"
MIB = 1 << 20
# The target times its calls from Python, the interposer from inside libc:
# the difference is the Python call around it (tofile: its dup and fdopen),
# and, after each call, the wait to take back the GIL from another thread of
# the process (the probe's sampler, which a loaded machine may have
# descheduled while it held it): up to a switch interval a call. That wait
# is only ever on the target's side of the figure.
SHARE, SLACK_S, GIL_WAIT_S = 0.05, 0.001, 0.005
CHUNK = 4 * MIB  # any_writer.py's: a write call each


def record(run_dir, *command, options=()):
    done = subprocess.run(writerprof_command() + ["record", "-o", str(run_dir), *options, "--", *map(str, command)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return done


def _recorded(tmp_path, mode, method="forkserver", files_n=3, size=16 * MIB):
    out = tmp_path / "out"
    out.mkdir()
    done = record(tmp_path / "run", sys.executable, TARGETS / "any_writer.py", mode, out, "--files", files_n,
                  "--size", size, "--method", method)
    own = [json.loads(line) for line in done.stdout.splitlines()]
    return load(tmp_path / "run"), own, done


def _close(measured, truth, calls=1):
    """The interposer's seconds against the target's own over `calls` calls."""
    near = SHARE * truth + SLACK_S
    return -near - calls * GIL_WAIT_S <= measured - truth <= near


@pytest.mark.parametrize("mode", ["buffered", "tofile", "pwritev", "pool", "thread", "self"])
def test_every_file_is_one_save_with_the_targets_own_figures(tmp_path, mode):
    run, own, _ = _recorded(tmp_path, mode)
    found = saves.find(run)
    by_path = {s["path"]: s for s in found}
    assert len(found) == len(own) == 3 and set(by_path) == {o["path"] for o in own}
    pid = dict(zip(run.processes["pid"].tolist(), roles(run).tolist()))
    for o in own:
        s = by_path[o["path"]]
        assert s["bytes"] == os.path.getsize(o["path"]) == o["bytes"]
        assert s["writer_pid"] == o["pid"] and pid[o["pid"]] == "writer"
        assert _close(s["write_s"], o["write_s"], -(-o["bytes"] // CHUNK)), (s["write_s"], o["write_s"])
        assert _close(s["fsync_s"], o["fsync_s"]), (s["fsync_s"], o["fsync_s"])
        # The accounting closes: the critical path and the unexplained are the save.
        assert sum(s["critical_path"].values()) + s["unexplained_s"] == pytest.approx(s["duration_s"], abs=1e-6)
    if mode in ("buffered", "tofile", "pwritev"):  # a writer child per file: its Process.start() is the save's
        assert all(s["start_method"] == "forkserver" and s["startup"] for s in found)
    if mode == "pool":  # two workers, three files: each file its own save, no worker's start counted
        # (Which worker took which file is the pool's: on a loaded machine one may take all three.)
        writers = {o["pid"] for o in own}
        assert {s["writer_pid"] for s in found} == writers and not any(s["startup"] for s in found)
        assert all(s["get_wait_s"] is not None for s in found)  # each worker's wait for its task
        assert sum(r == "writer" for r in roles(run).tolist()) == len(writers)
    if mode in ("thread", "self"):  # the process that saved is the writer; no other process is
        assert {s["writer_pid"] for s in found} == {s["producer_pid"] for s in found} == {own[0]["pid"]}
    assert not [s for s in found if s["bytes"] == 0]


def test_small_files_are_no_saves_unless_save_files_says(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, TARGETS / "any_writer.py", "self", out, "--files", "2", "--size", 64 << 10]
    record(tmp_path / "run", *command)
    assert saves.find(load(tmp_path / "run")) == []
    record(tmp_path / "globbed", *command, options=["--save-files", str(out / "ckpt-*")])
    run = load(tmp_path / "globbed")
    assert run.meta["save_files"] == [str(out / "ckpt-*")]
    assert sorted(s["bytes"] for s in saves.find(run)) == [64 << 10, 64 << 10]


C_WRITER = r"""
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    static char buf[1 << 20];
    memset(buf, 7, sizeof buf);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int i = 0; i < 3; i++) if (write(fd, buf, sizeof buf) != sizeof buf) return 1;
    fsync(fd);
    close(fd);
    FILE *f = fopen(argv[2], "wb");
    for (int i = 0; i < 2; i++) fwrite(buf, 1, sizeof buf, f);
    fclose(f);
    return write(-1, buf, 1) == -1 ? 0 : 2;  /* errno and result as without the interposer */
}
"""


@pytest.fixture(scope="module")
def c_writer(tmp_path_factory):
    directory = tmp_path_factory.mktemp("cwriter")
    (directory / "writer.c").write_text(C_WRITER)
    subprocess.run(["gcc", "-O1", "-o", directory / "writer", directory / "writer.c"], check=True)
    return directory / "writer"


def test_a_program_that_is_not_python_is_seen_through_a_shell(tmp_path, c_writer):
    """exec'd through sh, not Python: its own journal makes it a process of the run, a writer."""
    out = tmp_path / "out"
    out.mkdir()
    record(tmp_path / "run", "sh", "-c", f"{c_writer} {out / 'a.bin'} {out / 'b.bin'}")
    run = load(tmp_path / "run")
    found = {s["path"]: s for s in saves.find(run)}
    assert {p: s["bytes"] for p, s in found.items()} == {str(out / "a.bin"): 3 * MIB, str(out / "b.bin"): 2 * MIB}
    assert found[str(out / "a.bin")]["fsync_s"] > 0 and found[str(out / "a.bin")]["chunks"] == 3
    writer = run.identity(run.processes["host"][0], found[str(out / "a.bin")]["writer_pid"])
    assert writer["interposed_only"] and writer["executable"] == str(c_writer)


def test_the_interposer_agrees_with_strace(tmp_path, c_writer):
    """Every write and fsync of the checkpoint files strace sees (-y: each fd's path), the journal has."""
    out = tmp_path / "out"
    out.mkdir()
    trace = tmp_path / "strace.txt"
    record(tmp_path / "run", "strace", "-f", "-qq", "-y", "-e", "trace=write,fsync", "-o", trace, c_writer,
           out / "a.bin", out / "b.bin")
    truth: dict[str, list[int]] = {}
    for line in trace.read_text().splitlines():
        call = line.split(None, 1)[1]
        for name in ("a.bin", "b.bin"):
            if f"{out / name}>" in call:
                counts = truth.setdefault(str(out / name), [0, 0, 0])
                if call.startswith("write("):
                    counts[0] += int(call.rsplit("=", 1)[1])
                    counts[1] += 1
                elif call.startswith("fsync("):
                    counts[2] += 1
    run = load(tmp_path / "run")
    seen = {run.io_paths[s["path"]]: [int(s["bytes"]), None, int(s["syncs"])] for s in files.write_spans(run)}
    for path in seen:
        seen[path][1] = truth[path][1]  # fwrite's calls are not write(2)'s: their count is libc's business
    assert seen == truth and truth[str(out / "a.bin")] == [3 * MIB, 3, 1] and truth[str(out / "b.bin")][0] == 2 * MIB


def test_without_writerprof_run_the_interposer_does_nothing(tmp_path, c_writer):
    """Loaded without WRITERPROF_RUN, it makes none of the system calls it would journal with (no fd looked
    up, no path read, no journal made): the program's calls are the bare run's, and so are its files."""
    from writerprof.record import interposer

    if not interposer.available():
        pytest.skip("the interposer is not built")
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRITERPROF_") and k != "LD_PRELOAD"}
    traced = "openat,fstat,newfstatat,readlinkat,fallocate,ftruncate,mkdir,mkdirat,mmap"
    calls = {}
    for name, extra in (("bare", {}), ("inert", {"LD_PRELOAD": interposer.LIBRARY})):
        out, trace = tmp_path / name, tmp_path / f"{name}.strace"
        out.mkdir()
        done = subprocess.run(["strace", "-qq", "-e", f"trace={traced}", "-o", trace, c_writer, out / "a.bin",
                               out / "b.bin"], env={**env, **extra})
        assert done.returncode == 0  # write(-1) failed as it does bare
        assert sorted(p.name for p in out.iterdir()) == ["a.bin", "b.bin"]
        # From the program's own first open on (before it, the loader loads the library): what it would
        # journal with, an open's fstat and readlinkat, a journal's mkdir, fallocate and mmap.
        lines = trace.read_text().splitlines()
        first = next(i for i, line in enumerate(lines) if "a.bin" in line)
        calls[name] = [line.split("(")[0] for line in lines[first:]]
    assert calls["inert"] == calls["bare"] and calls["bare"].count("openat") == 2


MANY = """
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for _ in range(40000):
    os.write(fd, b"x")
pid = os.fork()
if pid == 0:
    for _ in range(20000):
        os.write(fd, b"y")
    os._exit(0)
os.waitpid(pid, 0)
os.close(fd)
"""


def test_a_journal_grows_past_its_first_segments_and_a_child_gets_its_own(tmp_path):
    """40,000 writes, then 20,000 in a forked child: every one journaled, each by its process."""
    record(tmp_path / "run", sys.executable, "-c", MANY, tmp_path / "many.bin")
    run = load(tmp_path / "run")
    path = run.io_paths.tolist().index(str(tmp_path / "many.bin"))
    writes = run.io[(run.io["path"] == path) & (run.io["op"] == 3)]
    per_pid = sorted(np.bincount(writes["proc"]).tolist())
    assert per_pid[-2:] == [20000, 40000] and (writes["result"] == 1).all()
    assert not [loss for loss in run.losses if "interposer" in loss or "never finished" in loss]


def test_a_process_not_interposed_is_said(tmp_path):
    """A child whose environment lost LD_PRELOAD: probed, not interposed; the report's losses say so."""
    out = tmp_path / "out"
    out.mkdir()
    script = ("import os, subprocess, sys\n"
              "env = {k: v for k, v in os.environ.items() if k != 'LD_PRELOAD'}\n"
              f"subprocess.run([sys.executable, {str(TARGETS / 'any_writer.py')!r}, 'self', {str(out)!r},"
              " '--files', '1'], env=env, check=True)\n")
    done = record(tmp_path / "run", sys.executable, "-c", script)
    child = json.loads(done.stdout)["pid"]
    run = load(tmp_path / "run")
    assert run.meta["interposer"] is True
    assert [loss for loss in run.losses if "was not interposed" in loss] == [
        loss for loss in run.losses if f"process {child} (main) was not interposed" in loss] != []



@pytest.mark.parametrize("mode, expected", [("sigwait", "sigwait %d" % 10), ("closed", "EBADF EBADF")])
def test_the_targets_signals_and_fds_stay_its_own(tmp_path, mode, expected):
    """A signal it blocks and collects reaches no thread of the probe's; the probe's journal
    takes none of the low fds the target closed and expects closed (issue 30, items 2 and 4)."""
    import signal

    out = tmp_path / "out.txt"
    plain = subprocess.run([sys.executable, TARGETS / "quiet_target.py", mode, out], timeout=60)
    assert plain.returncode == 0 and out.read_text() == expected.replace("10", str(int(signal.SIGUSR1)))
    out.unlink()
    record(tmp_path / "run", sys.executable, TARGETS / "quiet_target.py", mode, out)
    assert out.read_text() == expected.replace("10", str(int(signal.SIGUSR1)))
