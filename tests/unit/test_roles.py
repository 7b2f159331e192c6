from test_run_load import write_journal, write_meta
from writerprof.run import load
from writerprof.run.roles import roles


def test_roles_from_what_each_process_did(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, 1000, events=[
        {"kind": "process_start", "start_ns": 1500, "end_ns": 1600, "method": "forkserver",
         "target": "w", "child_pid": 300, "name": "writer-0", "writer_seq": 0}])
    write_journal(run_dir, "alpha", 200, 1100, role="forkserver", events=[
        {"kind": "fork", "native_threads": 1, "python_threads": 1, "threads": ["MainThread"]}])
    write_journal(run_dir, "alpha", 250, 1150, role="resource_tracker")
    write_journal(run_dir, "alpha", 300, 1700, role="forkserver_child",
                  events=[{"kind": "bootstrap", "target": "w", "name": "writer-0"}])
    write_journal(run_dir, "alpha", 400, 1800)  # a Python helper that did neither
    run = load(run_dir)
    assert dict(zip(run.processes["pid"].tolist(), roles(run).tolist())) == {
        100: "producer", 200: "forkserver", 250: "resource_tracker", 300: "writer", 400: "other"}

