"""Roles come from what each process did (writerprof.run.roles)."""

from io_journal import call, path_records, write_io
from test_run_load import write_journal, write_meta
from writerprof.probes.writerprof_probe import format as journal
from writerprof.run import files, load
from writerprof.run.roles import roles

MIB = 1 << 20


def _start(child_pid, at):
    return {"kind": "process_start", "start_ns": at, "end_ns": at + 100, "method": "forkserver", "target": "w",
            "child_pid": child_pid, "name": f"w-{child_pid}", "writer_seq": 0}


def _pipeline(tmp_path, **meta):
    """A rank that started three children: one wrote a checkpoint file, one
    read a data file (a DataLoader worker), one only ran (an idle pool
    worker); a forkserver, a resource tracker; and a shell, not Python,
    that wrote a log."""
    run_dir = write_meta(tmp_path / "run", **meta)
    write_journal(run_dir, "alpha", 100, 1000, events=[_start(300, 1500), _start(310, 1600), _start(320, 1700)])
    write_journal(run_dir, "alpha", 200, 1100, role="forkserver")
    write_journal(run_dir, "alpha", 250, 1150, role="resource_tracker")
    for pid, created in ((300, 1800), (310, 1900), (320, 2000)):
        write_journal(run_dir, "alpha", pid, created, role="forkserver_child",
                      events=[{"kind": "bootstrap", "target": "w", "name": f"w-{pid}"}])
    write_io(run_dir, "alpha", 300, 1790, [
        *path_records(0, "/ckpt/model-1.pt"), call("open", 0, 1850, 1851, 3),
        call("write", 0, 1852, 1860, 3 * MIB), call("fsync", 0, 1861, 1870), call("close", 0, 1871, 1872),
        *path_records(1, "/usr/lib/python3/x.pyc"), call("read", 1, 1810, 1811, 9000)], created_ns=1800, via=2)
    write_io(run_dir, "alpha", 310, 1890, [
        *path_records(0, "/data/train/img_0.npz"), call("read", 0, 1950, 1951, 4096),
        *path_records(1, "/usr/lib/python3/y.py"), call("read", 1, 1910, 1911, 500)], created_ns=1900, via=2)
    write_io(run_dir, "alpha", 330, 1950, [
        *path_records(0, "/tmp/job.log"), call("write", 0, 1960, 1961, 8000), call("fsync", 0, 1962, 1963)],
        exe="/usr/bin/bash", comm="bash")
    return run_dir


def test_roles_from_what_each_process_did(tmp_path):
    run = load(_pipeline(tmp_path))
    assert dict(zip(run.processes["pid"].tolist(), roles(run).tolist())) == {
        100: "producer", 200: "forkserver", 250: "resource_tracker", 300: "writer", 310: "reader", 320: "other",
        330: "other"}
    bash = run.identity("alpha", 330)
    assert bash["interposed_only"] and bash["executable"] == "/usr/bin/bash" and bash["python"] is None


def test_a_checkpoint_file_is_a_big_write_or_what_save_files_names(tmp_path):
    run = load(_pipeline(tmp_path))
    spans = files.write_spans(run)
    by_path = {run.io_paths[s["path"]]: s for s in spans}
    assert set(by_path) == {"/ckpt/model-1.pt", "/tmp/job.log"}
    ckpt = by_path["/ckpt/model-1.pt"]
    assert ckpt["checkpoint"] and ckpt["bytes"] == 3 * MIB and (ckpt["start_ns"], ckpt["end_ns"]) == (1850, 1872)
    assert (ckpt["writes"], ckpt["write_ns"], ckpt["syncs"], ckpt["sync_ns"], ckpt["close_ns"]) == (1, 8, 1, 9, 1)
    assert not by_path["/tmp/job.log"]["checkpoint"]
    run = load(_pipeline(tmp_path / "globbed", save_files=["*.log"]))
    marked = {run.io_paths[s["path"]]: bool(s["checkpoint"]) for s in files.write_spans(run)}
    assert marked == {"/ckpt/model-1.pt": False, "/tmp/job.log": True}
    assert dict(zip(run.processes["pid"].tolist(), roles(run).tolist()))[330] == "writer"


def test_a_writer_the_interposer_missed_is_known_by_its_write_calls(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, 1000, events=[_start(300, 1500)])
    write = journal.PHASES["write"]
    write_journal(run_dir, "alpha", 300, 1800, role="forkserver_child",
                  events=[{"kind": "bootstrap", "target": "w", "name": "w"}],
                  chunks=[(write, 0, 0, -1, -1, 300, 1810, 1820, 2 * MIB, 0, 0)])
    run = load(run_dir)
    assert roles(run).tolist() == ["producer", "writer"]
