"""A CMD whose arguments nearly fill the kernel's limit for a new program
runs plainly; under record, whose additions to its environment would take it
over, it runs all the same, without them (unprobed, sampled), and record
says so in one line (how many bytes, what to do to probe it)."""

from __future__ import annotations

import os
import shutil
import subprocess

from writerprof.record import execlimit

from helpers import writerprof_command

ARG = 1000  # bytes of each argument: far below the kernel's 32 pages for one


def _arguments(program: str, room: int) -> list[str]:
    """Arguments that leave `room` bytes of the limit free for program's exec in this environment."""
    free = execlimit.limit() - execlimit.taken(program, [program], dict(os.environ)) - room
    count, rest = divmod(free, ARG + 1 + 8)
    return ["x" * ARG] * count + ["y" * (rest - 1 - 8)]


def _records_own(before_cmd: list[str]) -> int:
    """The bytes record's exec takes beyond CMD's: its words before CMD, and
    the interpreter and script its console script's #! line adds."""
    script = before_cmd[0]
    with open(script, "rb") as f:
        line = f.readline()
    interpreter = line[2:].strip() if line.startswith(b"#!") else b""
    return (execlimit.taken(script, before_cmd, dict(os.environ)) - execlimit.environ_bytes(dict(os.environ))
            + len(interpreter) + 1 + 8 + len(os.fsencode(script)) + 1 + 8)


def test_a_cmd_that_record_s_additions_would_take_over_the_kernels_limit_runs_unprobed_and_said(tmp_path):
    true = shutil.which("true")
    record = writerprof_command() + ["record", "-o", str(tmp_path / "r"), "--"]
    # Room for record's own exec, not for its additions to CMD's environment.
    room = _records_own(record) + 16
    args = _arguments(true, room=room)
    assert subprocess.run([true, *args]).returncode == 0  # plainly, it runs
    done = subprocess.run(record + [true, *args], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr  # as plainly
    (said,) = [line for line in done.stderr.splitlines() if "CMD ran without the probe" in line]
    assert (f"recording incomplete: CMD ran without the probe: its arguments and environment fit the kernel's "
            f"limit for a new program ({execlimit.limit()} bytes here") in said
    assert "but not with record's additions to its environment (" in said and "ulimit -s" in said
    assert "Traceback" not in done.stderr

    # Over the limit without record's additions too: the kernel's words, not a claim about record's.
    args += ["z" * (room + 300)]  # more than the room left for record's own words
    assert not execlimit.fits(true, [true, *args], dict(os.environ))
    script = os.path.join(os.path.dirname(writerprof_command()[0]), "python")
    # record started through a small launcher that has the room record itself needs (its arguments are
    # CMD's): python -c runs writerprof's entry with argv read from a file.
    argv_file = tmp_path / "argv"
    argv_file.write_bytes(b"\0".join(os.fsencode(a) for a in ["record", "-o", str(tmp_path / "r2"), "--", true, *args]))
    done = subprocess.run([script if os.path.exists(script) else "python3", "-c",
                           "import sys; sys.argv[1:] = open(sys.argv[1], 'rb').read().decode().split('\\0'); "
                           "from writerprof.cli import entry; entry()", str(argv_file)],
                          capture_output=True, text=True, timeout=240, cwd=tmp_path)  # (not a checkout's writerprof/)
    assert done.returncode == 126
    assert f"writerprof record: cannot run {true}: Argument list too long" in done.stderr
