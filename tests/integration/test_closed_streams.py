"""Closed standard streams, and a pipe whose reader has gone, as a shell
gives them: `record` hands CMD exactly the fds it would get plainly and
exits with CMD's status, its own lines dropped where they cannot go; the
other commands do their job and end without a traceback, status 0."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest

from helpers import writerprof_command

# CMD: its fd table (each fd's target, the listing's own fd left out) and
# which of sys.stdin/stdout/stderr Python found closed, into a file; a line
# on each stream; exit status 3.
FDS = """
import json, os, sys
fds = {}
for name in os.listdir("/proc/self/fd"):
    try:
        fds[name] = os.readlink("/proc/self/fd/" + name)
    except OSError:
        pass
with open(sys.argv[1], "w") as out:
    json.dump({"fds": fds, "closed": [s is None for s in (sys.stdin, sys.stdout, sys.stderr)]}, out)
print("to stdout")
print("to stderr", file=sys.stderr)
sys.exit(3)
"""

WRITERPROF = shlex.join(writerprof_command())


def _sh(script: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=240, **kwargs)


def _fds_seen(tmp_path, run_dir, closing: str, recorded: bool) -> tuple[dict, str, str, int]:
    """CMD's view of its fds, its stdout and stderr files, and the exit
    status, run from a shell with fd 7 open on a file and `closing` applied
    to CMD (or record)."""
    (tmp_path / "fds.py").write_text(FDS)
    seen, out, err = tmp_path / "seen.json", tmp_path / "out.txt", tmp_path / "err.txt"
    cmd = f"{shlex.quote(sys.executable)} {tmp_path / 'fds.py'} {seen}"
    if recorded:
        cmd = f"{WRITERPROF} record --no-stacks -o {run_dir} -- {cmd}"
    done = _sh(f"exec 7<{tmp_path / 'fds.py'} >{out} 2>{err} </dev/null; {cmd} {closing}")
    view = json.loads(seen.read_text())
    # The probe's own files (its journal, at the top of the fd range) are in the run directory.
    view["fds"] = {fd: target for fd, target in view["fds"].items() if not target.startswith(str(run_dir))}
    return view, out.read_text(), err.read_text(), done.returncode


@pytest.mark.parametrize("closing", ["2>&-", ">&-", "<&-", "<&- >&- 2>&-"])
def test_record_gives_cmd_the_fds_it_has_plainly_and_exits_with_its_status(tmp_path, closing):
    plain, plain_out, plain_err, plain_status = _fds_seen(tmp_path, tmp_path / "run", closing, recorded=False)
    view, out, err, status = _fds_seen(tmp_path, tmp_path / "run", closing, recorded=True)
    assert plain_status == 3 and status == 3
    assert view == plain  # closed ones closed, fd 7 inherited, nothing of record's
    assert "7" in view["fds"]
    assert out == plain_out  # CMD's own lines only: record's never land in CMD's stdout
    if "2>&-" in closing:
        assert err == ""
    else:  # record's lines on its stderr, beside CMD's
        assert err.startswith("writerprof record: recording into") and "command exited   3" in err
        assert "Traceback" not in err and "internal error" not in err
    assert json.loads((tmp_path / "run" / "run.json").read_text())["exit_status"] == 3


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A small reproducer run, with stacks: something for every command to show."""
    place = tmp_path_factory.mktemp("closed")
    run_dir = place / "run"
    done = subprocess.run(writerprof_command() + ["record", "-o", str(run_dir), "--"] + writerprof_command()
                          + ["repro", "--saves", "2", "--size", "8MiB", "--dir", str(place)],
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return run_dir


# Each command, the files it writes (made under OUT), and the streams it writes to.
COMMANDS = {
    "report": (["report", "{run}", "--html", "{out}/r.html"], ["r.html"], ["stdout", "stderr"]),
    "report --json": (["report", "{run}", "--json"], [], ["stdout"]),
    "compare": (["compare", "{run}", "{run}"], [], ["stdout"]),
    "plot": (["plot", "{run}", "-o", "{out}/plots"], ["plots"], ["stdout", "stderr"]),
    "flame": (["flame", "{run}", "--role", "all", "-o", "{out}/flame"], ["flame.svg", "flame.png"], ["stderr"]),
    "export": (["export", "{run}", "--perfetto", "{out}/t.json", "--speedscope", "{out}/s.json"],
               ["t.json", "s.json"], ["stderr"]),
    "contrast": (["contrast", "--methods", "fork,forkserver", "--repeat", "1", "-o", "{out}/contrast", "--",
                  *writerprof_command(), "repro", "--saves", "1", "--size", "4MiB", "--dir", "{out}"],
                 ["contrast/contrast.json", "contrast/contrast.html"], ["stdout", "stderr"]),
}


def _argv(name: str, run_dir, out) -> tuple[list[str], list]:
    args, files, _ = COMMANDS[name]
    return ([a.format(run=run_dir, out=out) for a in args], [out / f for f in files])


@pytest.mark.parametrize("name", COMMANDS)
def test_a_closed_stdout_ends_no_command_in_a_traceback(recorded, tmp_path, name):
    args, files = _argv(name, recorded, tmp_path)
    done = _sh(f"{WRITERPROF} {shlex.join(args)} >&-")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    assert all(f.exists() for f in files)


@pytest.mark.parametrize("name, stream", [(name, stream) for name, (_, _, streams) in COMMANDS.items()
                                          for stream in streams])
def test_a_pipe_whose_reader_has_gone_ends_no_command_in_a_traceback(recorded, tmp_path, name, stream):
    args, files = _argv(name, recorded, tmp_path)
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line: every write to the pipe fails (EPIPE)
    streams = {"stdout": write, "stderr": subprocess.PIPE} if stream == "stdout" else {
        "stdout": subprocess.DEVNULL, "stderr": write}
    try:
        done = subprocess.run(writerprof_command() + args, text=True, timeout=240, **streams)
    finally:
        os.close(write)
    assert done.returncode == 0, done.stderr
    assert not done.stderr or ("Traceback" not in done.stderr and "internal error" not in done.stderr
                               and "Broken pipe" not in done.stderr and "BrokenPipeError" not in done.stderr)
    assert all(f.exists() for f in files)


def test_record_whose_stderr_reader_has_gone_still_runs_cmd_and_exits_with_its_status(tmp_path):
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(writerprof_command() + ["record", "--no-stacks", "-o", str(tmp_path / "run"), "--",
                                                      sys.executable, "-c", "import sys; sys.exit(3)"],
                              stdout=subprocess.DEVNULL, stderr=write, timeout=240)
    finally:
        os.close(write)
    assert done.returncode == 3
    assert json.loads((tmp_path / "run" / "run.json").read_text())["exit_status"] == 3
