import json

import pytest

from writerprof.probes.writerprof_probe.format import host_name
from writerprof.run import RunDirectoryError, directory, layout, load

OPTIONS = dict(interval_ns=50_000_000, sampler=True, probes=["m:f=phase"], env={"OMP_NUM_THREADS": "4"})


def test_create_writes_a_recording_run(tmp_path):
    run_dir = directory.create(tmp_path / "run", ["python", "bench.py"], **OPTIONS)
    assert run_dir == tmp_path / "run"
    assert layout.procs_dir(run_dir, host_name()).is_dir()
    meta = json.loads((run_dir / layout.RUN_FILE).read_text())
    assert meta["format"] == layout.FORMAT and meta["schema"] == layout.SCHEMA
    assert meta["command"] == ["python", "bench.py"] and meta["host"] == host_name()
    assert (meta["ended_ns"], meta["exit_status"], meta["ended_by"], meta["signal"]) == (None,) * 4
    assert (meta["interval_ns"], meta["sampler"], meta["probes"], meta["env"]) == tuple(OPTIONS.values())
    assert meta["started_ns"] > 0 and meta["started_wall_ns"] > 0
    assert not load(run_dir).complete


def test_finish_ends_the_run(tmp_path):
    run_dir = directory.create(tmp_path / "run", ["python"], **OPTIONS)
    directory.finish(run_dir, exit_status=130, ended_by="signal", signal="SIGINT")
    run = load(run_dir)
    assert run.complete and run.losses == []
    assert run.meta["ended_ns"] >= run.meta["started_ns"]
    assert (run.meta["exit_status"], run.meta["ended_by"], run.meta["signal"]) == (130, "signal", "SIGINT")
    # Written whole through a temporary file, which is gone.
    assert sorted(p.name for p in run_dir.iterdir()) == [layout.HOSTS_DIR, layout.RUN_FILE]


def test_update_meta_sets_items_and_keeps_the_rest(tmp_path):
    run_dir = directory.create(tmp_path / "run", ["python"], **OPTIONS, stacks={"enabled": True})
    directory.update_meta(run_dir, stacks={"enabled": True, "taken": False, "reason": "no py-spy"})
    meta = json.loads((run_dir / layout.RUN_FILE).read_text())
    assert meta["stacks"] == {"enabled": True, "taken": False, "reason": "no py-spy"}
    assert meta["command"] == ["python"] and meta["probes"] == OPTIONS["probes"] and meta["ended_ns"] is None
    assert sorted(p.name for p in run_dir.iterdir()) == [layout.HOSTS_DIR, layout.RUN_FILE]

def test_write_topology(tmp_path):
    run_dir = directory.create(tmp_path / "run", ["python"], **OPTIONS)
    directory.write_topology(run_dir, "other host", {"nodes": {"0": {"cpus": [0]}}})
    assert load(run_dir).topology == {"other_host": {"nodes": {"0": {"cpus": [0]}}}}


def test_default_names_do_not_collide(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(directory.time, "strftime", lambda pattern: "writerprof-20250101-120000")
    made = [directory.create(None, ["python"], **OPTIONS) for _ in range(3)]
    assert [str(p) for p in made] == [
        "writerprof-20250101-120000", "writerprof-20250101-120000-2", "writerprof-20250101-120000-3"]


def test_empty_existing_directory_is_used(tmp_path):
    assert directory.create(tmp_path, ["python"], **OPTIONS) == tmp_path


def test_refuses_a_directory_that_is_not_empty(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(RunDirectoryError, match="exists and is not empty"):
        directory.create(tmp_path, ["python"], **OPTIONS)
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_refuses_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunDirectoryError, match="not a directory"):
        directory.create(tmp_path / "file", ["python"], **OPTIONS)


def test_finish_refuses_a_foreign_directory(tmp_path):
    with pytest.raises(RunDirectoryError, match="not a writerprof run directory"):
        directory.finish(tmp_path, exit_status=0, ended_by="exit", signal=None)
