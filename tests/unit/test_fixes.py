"""The fix of each warning (analysis.fixes), in the target's terms."""

from __future__ import annotations

import pytest

from writerprof.analysis import fixes
from writerprof.analysis.fixes import Target


def reimport(main="/work/bench/train.py", cost=1.2, writers=3) -> dict:
    return {"code": "main-reimport", "severity": "warning", "host": "h", "pid": 1, "rank": -1, "message": "",
            "evidence": {"per_writer_s": 0.6, "writers": writers, "main": main}, "cost_s": cost}


def test_the_re_run_names_the_script_its_costliest_imports_and_the_options():
    # Shares of the 0.6 s re-run: 0.30 s, 0.15 s, 0.018 s, 0.0006 s per writer.
    target = Target(main="/work/bench/train.py", imports=[("pandas", 0.5, 4), ("scipy", 0.25, 5), ("six", 0.03, 6),
                                                          ("tiny", 0.001, 7)])
    fix = fixes.for_diagnosis(reimport(), target, 3)
    guard, module, preload, fork = fix
    # six and tiny are under 5% of the re-run: not named.
    assert "pandas 0.30 s, scipy 0.15 s of the re-run" in guard["what"] and "six" not in guard["what"]
    assert guard["where"] == "/work/bench/train.py (line 4, line 5)"
    assert guard["recovery_s"] == pytest.approx(1.2 / 3 * 0.75)  # the imports' share of the re-run's cost
    assert "python -m" in module["what"] and module["recovery_s"] == 1.2 / 3
    # An unknown Python: '__main__' may be ignored there, so the modules are what it preloads.
    assert "set_forkserver_preload(['pandas', 'scipy'])" in preload["what"] and "may ignore" in preload["what"]
    assert preload["modules"] == guard["modules"] == ["pandas", "scipy"]
    assert fork["what"].startswith("start the writers with fork") and "deadlock" not in fork["what"]
    assert fork["recovery_s"] is None
    assert [a["recovery"] for a in fix] == ["estimated", "estimated", "estimated", None]


def test_live_threads_at_fork_make_fork_carry_the_hazard_and_the_benchmark_its_switch():
    target = fixes.target_of([{"target": "mlpstorage_py.checkpointing.writer.run"}],
                             [{"code": "fork-with-threads", "severity": "warning"}], "/x/main.py")
    assert target.benchmark and target.threads_at_fork
    fork = fixes.for_diagnosis(reimport(), target, 3)[-1]
    assert "deadlock hazard" in fork["what"]
    assert fork["where"].startswith("MLPS_CHECKPOINT_MP_START_METHOD=fork")
    assert not fixes.target_of([{"target": "mylib.writer.run"}], [], None).benchmark


def test_the_reproducer_main_module_stands_in_for_the_entry_script():
    target = Target(main="/venv/site-packages/writerprof/repro/main.py")
    guard = fixes.for_diagnosis(reimport(main=target.main), target, 3)[0]
    assert guard["where"].startswith("writerprof/repro/main.py (the built-in reproducer's main module, standing in "
                                     "for the benchmark's entry script)")
    assert fixes.for_diagnosis(reimport(main=target.main), target, 3)[-1]["where"] == \
        "writerprof repro --start-method fork"


def test_placement_binds_writer_and_buffers_to_one_node_with_the_cost_when_known():
    numa = {"code": "numa-mismatch", "severity": "warning", "host": "h", "pid": 2, "rank": 0, "message": "",
            "evidence": {"buffer_node": 1}}
    bind, mpi = fixes.for_diagnosis(numa, Target(), 4)
    assert "numactl --cpunodebind=1 --membind=1" in bind["what"] and bind["recovery_s"] is None
    assert "--bind-to numa" in mpi["where"]
    assert fixes.for_diagnosis({**numa, "cost_s": 0.8}, Target(), 4)[0]["recovery_s"] == 0.2
    # Information is not a warning with a cause: no fix.
    assert fixes.for_diagnosis({**numa, "severity": "info"}, Target(), 4) is None


def test_a_contrast_what_if_measures_the_recovery_of_its_action():
    fix = fixes.for_diagnosis(reimport(), Target(main="/a.py", imports=[("pandas", 0.5, 4)]), 3)
    measured = fixes.measured(fix, {"forkserver+preload": {"recovered_s": 0.35, "ci95_s": [0.3, 0.4],
                                                           "modules": ["pandas"]},
                                     "fork": {"recovered_s": 0.5, "ci95_s": None, "modules": None}})
    by_id = {a["id"]: a for a in measured}
    assert by_id["forkserver-preload"]["recovery_s"] == 0.35 and by_id["fork"]["recovery_s"] == 0.5
    assert by_id["forkserver-preload"]["recovery"] == "measured"
    assert by_id["forkserver-preload"]["recovery_ci95_s"] == [0.3, 0.4]
    assert by_id["forkserver-preload"]["measured_by"] == "forkserver+preload"
    assert measured[0] == fix[0]  # not measured by a what-if: the run's estimate, said so
    numa = fixes.for_diagnosis({"code": "numa-mismatch", "severity": "warning", "evidence": {}}, Target(), 1)
    local = {"recovered_s": 0.1, "ci95_s": None, "modules": None}
    assert fixes.measured(numa, {"forkserver+local": local})[0]["recovery_s"] == 0.1


def test_the_imports_come_from_the_writers_stacks_under_spawns_prepare():
    from writerprof.run.stacks import ProcessStacks

    prepare = ("<module> (bench.py:1)", "_main (multiprocessing/spawn.py:120)", "prepare (multiprocessing/spawn.py:230)",
               "_fixup_main_from_path (multiprocessing/spawn.py:290)", "run_path (runpy.py:287)",
               "<module> (train.py:3)", "_find_and_load (<frozen importlib._bootstrap>:1360)")
    samples = {prepare + ("<module> (pandas/__init__.py:10)",): 30,
               prepare[:-2] + ("<module> (train.py:4)", prepare[-1], "<module> (scipy/__init__.py:4)"): 10,
               ("BaseProcess._bootstrap (multiprocessing/process.py:314)", "run (w.py:2)"): 50}
    writer = ProcessStacks(proc=1, pid=9, host="h", role="writer", samples=samples, rate_hz=100.0)
    other = ProcessStacks(proc=0, pid=8, host="h", role="producer", samples=samples, rate_hz=100.0)
    # Shares of the re-run's samples (the writers after the first few are sampled at a lower rate).
    assert fixes.imports_of([writer, other], "train.py") == [("pandas", 0.75, 3), ("scipy", 0.25, 4)]
