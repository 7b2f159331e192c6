"""Hostile paths and hostile run directories, through the real commands: a
run directory of another user or taken by another launcher, a part of
another recording or one that links out of itself, outputs over the run's
own files, and run directories with FIFOs, links and JSON nested too deep.
Each bad case is one line and an exit status, never a hang or a traceback."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest
from helpers import run_writerprof, writerprof_command
from test_hosts import _agents_gone, _stays

# A Python process, probed: enough for a run directory with a journal.
PYTHON = [sys.executable, "-c", "pass"]


def _memory_cap():
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))


def _one_line_error(done: subprocess.CompletedProcess, code: int) -> str:
    assert done.returncode == code and "Traceback" not in done.stderr and "internal error" not in done.stderr, (
        done.stderr)
    (line,) = done.stderr.splitlines()
    return line


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A recording with a second host whose run directory was not shared (its part)."""
    tmp = tmp_path_factory.mktemp("hostile")
    run, part = tmp / "run", tmp / "part"
    # hostb's part left where it is: record listens for parts to come home where CMD is a shell with an
    # MPI launcher on its PATH (as here), and an agent that reached it in time (on a loaded machine) sent
    # the part home and removed it.
    other_host = _stays(f"WRITERPROF_HOST=hostb WRITERPROF_RUN={part} {' '.join(PYTHON)}")
    run_writerprof("record", "-o", run, "--", "sh", "-c", f"{other_host} & {' '.join(PYTHON)}; wait")
    assert _agents_gone()
    return run, part


def test_a_recording_and_its_parts_are_private_and_carry_its_id(recording):
    run, part = recording
    run_id = json.loads((run / "run.json").read_text())["run_id"]
    assert (part / "hosts" / "hostb" / "run_id").read_text() == run_id + "\n"
    host = json.loads((run / "run.json").read_text())["host"]
    modes = {p: p.stat().st_mode & 0o777 for p in (
        run, run / "hosts", run / "hosts" / host, run / "hosts" / host / "procs", run / "run.json",
        run / "hosts" / host / "topology.json", part / "hosts" / "hostb" / "run_id",
        part / "hosts" / "hostb" / "agent.lock")}
    assert modes == {p: 0o700 if p.is_dir() else 0o600 for p in modes}


# A forkserver writer of a checkpoint file: journals, I/O journals and stacks of each kind.
WRITER = """
import multiprocessing, os, sys, time
def write():
    with open(sys.argv[1], "wb") as f:
        f.write(bytes(2 << 20))
        os.fsync(f.fileno())
    time.sleep(0.3)
if __name__ == "__main__":
    writer = multiprocessing.get_context("forkserver").Process(target=write)
    writer.start()
    writer.join()
"""


@pytest.mark.parametrize("stacks", ["probe", "py-spy"])
def test_every_file_and_directory_of_a_recording_is_its_owners_alone(tmp_path, stacks):
    run = tmp_path / "run"
    run_writerprof("record", "--stacks-by", stacks, "-o", run, "--", sys.executable, "-c", WRITER,
                   tmp_path / "ckpt")
    found = [run, *run.rglob("*")]
    assert len(found) > 10 and any(p.suffix == ".io" for p in found) and any("stacks" in p.parts for p in found)
    assert {p: oct(p.stat().st_mode & 0o777) for p in found if p.stat().st_mode & 0o077} == {}


def test_a_directory_of_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    done = run_writerprof("record", "-o", theirs, "--", *PYTHON, check=False)
    assert _one_line_error(done, 1) == (f"writerprof record: {theirs}: owned by another user (uid 65534); "
                                        f"choose a run directory of your own")
    assert list(theirs.iterdir()) == []


def test_of_launchers_given_one_directory_at_once_one_records(tmp_path):
    out = tmp_path / "run"
    launchers = [subprocess.Popen(writerprof_command() + ["record", "-o", str(out), "--", sys.executable, "-c",
                                                          f"print({n})"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in range(4)]
    ended = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in launchers]
    recorded = [n for n, (code, _, _) in enumerate(ended) if code == 0]
    assert len(recorded) == 1, ended
    for n, (code, stdout, stderr) in enumerate(ended):
        if n != recorded[0]:
            assert code == 2 and stdout == "" and len(stderr.splitlines()) == 1, stderr  # holds a recording
    assert json.loads((out / "run.json").read_text())["command"][-1] == f"print({recorded[0]})"


def test_merge_refuses_a_part_of_another_recording_with_both_ids(recording, tmp_path):
    run, part = recording
    other, other_part = tmp_path / "other", tmp_path / "other-part"
    run_writerprof("record", "-o", other, "--", "sh", "-c",
                   _stays(f"WRITERPROF_HOST=hostb WRITERPROF_RUN={other_part} {' '.join(PYTHON)}"))
    assert _agents_gone()
    ids = [json.loads((r / "run.json").read_text())["run_id"] for r in (run, other)]
    done = run_writerprof("merge", run, other_part, "-o", tmp_path / "merged", check=False)
    assert _one_line_error(done, 2) == (
        f"writerprof merge: error: {other_part}: host hostb is of another recording: its recording id is "
        f"{ids[1]}, {run}'s is {ids[0]}; not merged")
    assert not (tmp_path / "merged").exists()
    done = run_writerprof("merge", run, part, "-o", tmp_path / "merged")
    assert f"recording {ids[0]}, 2 host(s)" in done.stderr and f"hostb (from {part})" in done.stderr


def test_merge_never_follows_a_link_out_of_a_part(recording, tmp_path):
    run, part = recording
    (part / "hosts" / "etc").symlink_to("/etc")
    try:
        done = run_writerprof("merge", run, part, "-o", tmp_path / "merged", check=False)
    finally:
        (part / "hosts" / "etc").unlink()
    assert _one_line_error(done, 2) == (f"writerprof merge: error: {part / 'hosts' / 'etc'}: a symbolic link, not "
                                        f"a regular file: a part of a recording holds none; not merged")
    assert not (tmp_path / "merged").exists()


def test_an_export_over_the_run_itself_is_refused(recording, tmp_path):
    run, _ = recording
    before = (run / "run.json").read_bytes()
    done = run_writerprof("export", run, "--perfetto", run / "run.json", check=False)
    assert _one_line_error(done, 2) == (f"writerprof export: error: --perfetto {run / 'run.json'} is the run.json of "
                                        f"the run {run}: writing it would destroy the run; choose a place outside "
                                        f"its files")
    assert (run / "run.json").read_bytes() == before
    same = tmp_path / "out.json"
    (tmp_path / "alias").symlink_to(tmp_path)
    done = run_writerprof("export", run, "--perfetto", same, "--speedscope", tmp_path / "alias" / "out.json",
                          check=False)
    assert "are the same file: one would overwrite the other" in _one_line_error(done, 2)
    assert not same.exists()
    done = run_writerprof("report", run, "--html", run / "hosts" / "report.html", check=False)
    assert "is inside the hosts/ of the run" in _one_line_error(done, 2)


@pytest.mark.timeout(120)  # the code before waited for a FIFO's writer, forever
def test_report_of_a_run_with_fifos_links_and_deep_json_ends(recording, tmp_path):
    run, _ = recording
    copy = tmp_path / "run"
    subprocess.run(["cp", "-a", run, copy], check=True)
    host = json.loads((copy / "run.json").read_text())["host"]
    procs = copy / "hosts" / host / "procs"
    journals = sorted(procs.glob("*.events.jsonl"))
    assert journals
    os.mkfifo(procs / "1-1.events.jsonl")  # a journal that is a FIFO
    with journals[0].open("a") as f:  # a line nested deeper than JSON parses
        f.write('{"kind": "hook", "t_ns": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    done = run_writerprof("export", copy, "--perfetto", tmp_path / "trace.json", timeout=60)
    assert "Traceback" not in done.stderr
    assert f"note: hosts/{host}/procs/1-1.events.jsonl: unreadable (a FIFO, not a regular file)" in done.stderr
    assert f"note: hosts/{host}/procs/{journals[0].name}: 1 unreadable line dropped" in done.stderr
    for make, said in ((os.mkfifo, "a FIFO, not a regular file"),
                       (lambda p: p.symlink_to("/dev/zero"), "a symbolic link, not a regular file")):
        (copy / "run.json").unlink()
        make(copy / "run.json")
        # Under a cap: the code before read /dev/zero until the OOM killer came (for anyone).
        done = subprocess.run(writerprof_command() + ["report", str(copy)], capture_output=True, text=True,
                              timeout=60, preexec_fn=_memory_cap)
        assert _one_line_error(done, 1) == f"writerprof report: {copy / 'run.json'}: cannot read it: {said}"
