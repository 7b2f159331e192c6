from test_run_load import sample, write_journal, write_meta, write_samples
from writerprof.analysis.samples import sample_rows
from writerprof.run import load


def test_samples_go_to_the_process_that_had_the_pid_then(tmp_path):
    """A pid reused within a run: each sample lands on the process alive then,
    and none on a probed process after it exited."""
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, 1_000_000_000, events=[{"kind": "exit", "t_ns": 2_000_000_000}])
    write_journal(run_dir, "alpha", 100, 5_000_000_000, events=[{"kind": "exit", "t_ns": 6_000_000_000}])
    write_samples(run_dir, "alpha", [sample(t, 100) for t in (1_500_000_000, 3_000_000_000, 5_500_000_000)]
                  + [sample(1_500_000_000, 200)])
    run = load(run_dir)
    rows = sample_rows(run)
    created = run.processes["created_ns"]
    assert [int(created[r]) if r >= 0 else None for r in rows] == [1_000_000_000, None, 5_000_000_000, None]
