"""A run directory made by someone else, or damaged on purpose: what is in
the place of a run's file that is no regular file (a FIFO, which would hang
the reader; a link to /dev/zero, which never ends; a link anywhere) is
refused with a line naming it, a file with no business being large is read
only below a cap, and a journal line nested deeper than JSON parses is a
damaged line, dropped and said, not the end of the run. Each load runs under
a timeout: the code before waited forever for a FIFO's writer."""

from __future__ import annotations

import json
import os
import resource

import pytest
from test_run_load import chunk, sample, write_journal, write_meta, write_samples

from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe import iofile
from writerprof.run import RunDirectoryError, layout, load, ownfile
from writerprof.run.stacks import load_stacks

pytestmark = pytest.mark.timeout(30)

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def run_dir(tmp_path):
    run = write_meta(tmp_path / "run")
    write_journal(run, "alpha", 100, 1000, chunks=[chunk(4, 1100)])
    write_journal(run, "alpha", 200, 2000, chunks=[chunk(4, 2100)])
    write_samples(run, "alpha", [sample(1500, 100)])
    (layout.host_dir(run, "alpha") / layout.TOPOLOGY_FILE).write_text(json.dumps({"nodes": {}}))
    return run


@pytest.fixture
def memory_cap():
    """2 GiB more address space than this process has, for one test: the
    code before read /dev/zero until the OOM killer came (for anyone)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (used + (2 << 30), hard))
    yield
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _events(run, pid, created):
    return layout.procs_dir(run, "alpha") / f"{pid}-{created}{journal.EVENTS_SUFFIX}"


def _replace(path, by):
    path.unlink()
    by(path)


def test_a_fifo_as_a_journal_is_said_and_the_rest_is_read(run_dir):
    _replace(_events(run_dir, 200, 2000), os.mkfifo)
    run = load(run_dir)
    assert run.processes["pid"].tolist() == [100]
    assert "hosts/alpha/procs/200-2000.events.jsonl: unreadable (a FIFO, not a regular file): its records are lost" \
        in run.losses


@pytest.mark.parametrize("name, said", [
    (f"procs/200-2000{journal.CHUNKS_SUFFIX}", "not a file: its records are lost"),
    (layout.SAMPLES_FILE, "not a file: its records are lost"),
    (layout.SAMPLED_FILE, "unreadable (a FIFO, not a regular file): its records are lost"),
    (layout.TOPOLOGY_FILE, "unreadable, topology unknown (a FIFO, not a regular file)"),
    (f"procs/200-2000{journal.SHM_SUFFIX}", "unreadable (a FIFO, not a regular file): its records are lost"),
    (f"{iofile.IO_DIR}/200-2000{iofile.IO_SUFFIX}", "unreadable (a FIFO, not a regular file): its file I/O is lost"),
])
def test_a_fifo_in_place_of_any_file_of_a_host_is_said(run_dir, name, said):
    path = layout.host_dir(run_dir, "alpha") / name
    path.parent.mkdir(exist_ok=True)
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    assert f"hosts/alpha/{name}: {said}" in load(run_dir).losses


def test_a_fifo_as_the_stacks_index_is_said(run_dir):
    stacks = layout.stacks_dir(run_dir, "alpha")
    stacks.mkdir()
    os.mkfifo(stacks / layout.STACKS_INDEX)
    run = load(run_dir)
    assert load_stacks(run) == []
    assert ("hosts/alpha/stacks/stacks.json: unreadable (a FIFO, not a regular file); segments read without it"
            in run.losses)


def test_a_link_in_place_of_a_journal_is_not_followed(run_dir, tmp_path):
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes(_events(run_dir, 200, 2000).read_bytes())
    _replace(_events(run_dir, 200, 2000), lambda p: p.symlink_to(elsewhere))
    run = load(run_dir)
    assert run.processes["pid"].tolist() == [100]
    assert ("hosts/alpha/procs/200-2000.events.jsonl: unreadable (a symbolic link, not a regular file): its "
            "records are lost") in run.losses


def test_a_link_in_place_of_a_binary_file_is_not_followed(run_dir, tmp_path):
    for name in (f"procs/100-1000{journal.CHUNKS_SUFFIX}", layout.SAMPLES_FILE):
        path = layout.host_dir(run_dir, "alpha") / name
        path.rename(tmp_path / path.name)
        path.symlink_to(tmp_path / path.name)
    run = load(run_dir)
    assert run.chunks["pid"].tolist() == [200] and len(run.samples) == 0
    assert {f"hosts/alpha/procs/100-1000{journal.CHUNKS_SUFFIX}: not a file: its records are lost",
            f"hosts/alpha/{layout.SAMPLES_FILE}: not a file: its records are lost"} <= set(run.losses)


@pytest.mark.parametrize("make, said", [
    (os.mkfifo, "a FIFO, not a regular file"),
    (lambda p: p.symlink_to("/dev/zero"), "a symbolic link, not a regular file"),
    (lambda p: (p.write_bytes(b""), os.truncate(p, (64 << 20) + 1)),
     "67108865 bytes, more than the 64 MiB such a file can have"),
])
def test_a_run_json_that_is_no_small_regular_file_is_refused_in_a_line(run_dir, make, said, memory_cap):
    _replace(run_dir / layout.RUN_FILE, make)
    with pytest.raises(RunDirectoryError) as refused:
        load(run_dir)
    assert str(refused.value) == f"{run_dir / layout.RUN_FILE}: cannot read it: {said}"


def test_a_line_nested_deeper_than_json_parses_is_a_damaged_line(run_dir):
    events = _events(run_dir, 200, 2000)
    lines = events.read_text().splitlines(keepends=True)
    events.write_text(lines[0] + '{"kind": "hook", "t_ns": 2001, "detail": ' + DEEP + "}\n" + "".join(lines[1:]))
    sampled = layout.host_dir(run_dir, "alpha") / layout.SAMPLED_FILE
    sampled.write_text(DEEP + "\n")
    run = load(run_dir)
    assert run.processes["pid"].tolist() == [100, 200] and len(run.chunks) == 2
    assert "hosts/alpha/procs/200-2000.events.jsonl: 1 unreadable line dropped" in run.losses
    assert "hosts/alpha/sampled.jsonl: 1 unreadable line dropped" in run.losses


def test_deep_json_in_run_json_and_topology_is_a_damaged_file(run_dir):
    (layout.host_dir(run_dir, "alpha") / layout.TOPOLOGY_FILE).write_text(DEEP)
    assert any(loss.startswith("hosts/alpha/topology.json: unreadable, topology unknown")
               for loss in load(run_dir).losses)
    (run_dir / layout.RUN_FILE).write_text(DEEP)
    with pytest.raises(RunDirectoryError, match="run.json: not JSON"):
        load(run_dir)


def test_a_file_readers_share_refuses_what_is_not_a_regular_file(tmp_path):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_bytes(b"12345")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    for name, said in (("fifo", "a FIFO, not a regular file"), ("dir", "Is a directory"),
                       ("link", "a symbolic link, not a regular file"), ("file", "5 bytes, more than")):
        with pytest.raises(OSError) as refused:
            ownfile.read(tmp_path / name, limit=4)
        assert refused.value.strerror.startswith(said) and refused.value.filename == str(tmp_path / name)
    assert ownfile.read(tmp_path / "file", limit=5) == b"12345"
    with pytest.raises(FileNotFoundError):
        ownfile.read(tmp_path / "none")
