import json
import os
import secrets
from pathlib import Path

import pytest

from writerprof.probes.writerprof_probe.format import RUN_ID_FILE, host_name
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


def test_the_launchers_host_part_carries_the_recording_id(tmp_path):
    run_dir = directory.create(tmp_path / "run", ["python"], **OPTIONS)
    run_id = json.loads((run_dir / layout.RUN_FILE).read_text())["run_id"]
    assert (layout.host_dir(run_dir, host_name()) / RUN_ID_FILE).read_text() == run_id + "\n"
    assert sorted(os.listdir(run_dir)) == [layout.HOSTS_DIR, layout.RUN_FILE]  # nothing made beside it


def test_a_directory_holding_a_recording_or_a_part_of_one_is_refused_as_bad_input(tmp_path):
    run_dir = directory.create(tmp_path / "run", ["python"], **OPTIONS)
    run_id = json.loads((run_dir / layout.RUN_FILE).read_text())["run_id"]
    with pytest.raises(directory.RunDirectoryTaken, match=f"run: holds recording {run_id} already") as taken:
        directory.create(run_dir, ["python"], **OPTIONS)
    assert taken.value.exit_code == 2
    (run_dir / layout.RUN_FILE).unlink()  # a host's part, as a node-local directory of another host holds it
    with pytest.raises(directory.RunDirectoryTaken, match=f"holds a part of recording {run_id} "
                                                          f"\\(hosts/{host_name()}\\) already"):
        directory.create(run_dir, ["python"], **OPTIONS)


def test_refuses_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunDirectoryError, match="not a directory"):
        directory.create(tmp_path / "file", ["python"], **OPTIONS)


def test_finish_refuses_a_foreign_directory(tmp_path):
    with pytest.raises(RunDirectoryError, match="not a writerprof run directory"):
        directory.finish(tmp_path, exit_status=0, ended_by="exit", signal=None)


# --- hostile paths: the run directory is ours alone -----------------------------

def _mode(path) -> int:
    return path.stat().st_mode & 0o777


def test_a_new_run_directory_and_its_files_are_private(tmp_path):
    run_dir = directory.create(tmp_path / "run", ["python"], **OPTIONS)
    directory.write_topology(run_dir, host_name(), {"nodes": {}})
    directory.update_meta(run_dir, stacks=None)
    host = layout.host_dir(run_dir, host_name())
    assert [_mode(p) for p in (run_dir, run_dir / layout.HOSTS_DIR, host, layout.procs_dir(run_dir, host_name()))] \
        == [0o700] * 4
    assert [_mode(p) for p in (run_dir / layout.RUN_FILE, host / layout.TOPOLOGY_FILE)] == [0o600] * 2


def test_each_recording_has_its_own_id(tmp_path):
    ids = [json.loads((directory.create(tmp_path / name, ["python"], **OPTIONS) / layout.RUN_FILE).read_text())
           ["run_id"] for name in ("a", "b")]
    assert ids[0] != ids[1] and all(len(i) == 16 and int(i, 16) >= 0 for i in ids)
    assert load(tmp_path / "a").meta["run_id"] == ids[0]


def test_refuses_an_empty_directory_of_another_user(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    with pytest.raises(RunDirectoryError, match="owned by another user \\(uid 65534\\)"):
        directory.create(theirs, ["python"], **OPTIONS)
    assert list(theirs.iterdir()) == []


def test_refuses_a_link_to_an_empty_directory(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(RunDirectoryError, match="a symbolic link"):
        directory.create(tmp_path / "link", ["python"], **OPTIONS)
    assert list((tmp_path / "real").iterdir()) == []


def test_a_second_launcher_that_found_the_directory_empty_too_is_refused(tmp_path, monkeypatch):
    first = directory.create(tmp_path / "run", ["first"], **OPTIONS)
    # The second checked the directory while it was still empty (a slow file
    # system): its claim, run.json's creation, is what must fail.
    monkeypatch.setattr(directory, "claim", lambda path: path)
    with pytest.raises(RunDirectoryError, match="taken by another writerprof meanwhile"):
        directory.create(tmp_path / "run", ["second"], **OPTIONS)
    assert load(first).meta["command"] == ["first"]


def test_a_link_planted_at_a_temporary_name_is_not_written_through(tmp_path):
    run_dir = directory.create(tmp_path / "run", ["python"], **OPTIONS)
    victim = tmp_path / "victim"
    victim.write_text("theirs")
    # The names a temporary file had: the launcher's pid.
    for name in (f".{layout.RUN_FILE}.{os.getpid()}.tmp", f".{layout.TOPOLOGY_FILE}.{os.getpid()}.tmp"):
        (run_dir / name).symlink_to(victim)
    (layout.host_dir(run_dir, host_name()) / f".{layout.TOPOLOGY_FILE}.{os.getpid()}.tmp").symlink_to(victim)
    directory.update_meta(run_dir, exit_status=3)
    directory.write_topology(run_dir, host_name(), {"nodes": {}})
    assert victim.read_text() == "theirs" and load(run_dir).meta["exit_status"] == 3


def test_a_full_disk_rewrite_in_place_never_writes_through_a_link(tmp_path, monkeypatch):
    run_dir = directory.create(tmp_path / "run", ["python"], **OPTIONS)
    victim = tmp_path / "victim.json"  # another's file, that reads as a run
    victim.write_bytes((run_dir / layout.RUN_FILE).read_bytes())
    before = victim.read_bytes()
    (run_dir / layout.RUN_FILE).unlink()
    (run_dir / layout.RUN_FILE).symlink_to(victim)
    # No temporary file can be made (as on a full disk): directories in their places.
    monkeypatch.setattr(secrets, "token_hex", lambda n: "0" * (2 * n))
    for name in (f".{layout.RUN_FILE}.{os.getpid()}.tmp", f".{layout.RUN_FILE}.{'0' * 16}.tmp"):
        (run_dir / name).mkdir()
    with pytest.raises(RunDirectoryError, match="a symbolic link"):
        directory.update_meta(run_dir, exit_status=0)
    assert victim.read_bytes() == before


def test_a_relative_run_directory_is_made_with_its_levels_private(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_dir = directory.create(Path("run"), ["true"], interval_ns=1, sampler=True, probes=[], env={})
    assert run_dir == Path("run") and (tmp_path / "run" / "run.json").is_file()
    procs = next((tmp_path / "run" / "hosts").iterdir()) / "procs"
    assert procs.is_dir() and procs.stat().st_mode & 0o777 == 0o700
