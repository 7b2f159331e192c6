"""The contrast of a program without saves: the wall time cut into parts
that add up (analysis.program.sweep), and the comparison's causes, verdict
and fixes (analysis.program_contrast), on hand-made runs."""

from __future__ import annotations

import pytest

from writerprof.analysis import program_contrast
from writerprof.analysis.program import PARTS, STARTUP, sweep

S = 10**9


def test_each_instant_goes_to_the_furthest_along_part_and_the_parts_add_up():
    parts = sweep({"work": [(2 * S, 5 * S)], "startup:main_rerun": [(1 * S, 4 * S)], "start": [(0, 3 * S)],
                   "exit": [(9 * S, 12 * S)]}, 0, 10 * S)
    assert parts["work"] == 3 and parts["startup:main_rerun"] == 1 and parts["start"] == 1
    assert parts["exit"] == 1  # clipped at the end of CMD
    assert parts["parent"] == 4
    assert sum(parts.values()) == pytest.approx(10)


def test_a_child_working_hides_another_childs_start_up():
    parts = sweep({"work": [(0, 4 * S)], "startup:main_rerun": [(1 * S, 3 * S)]}, 0, 4 * S)
    assert parts["work"] == 4 and parts["startup:main_rerun"] == 0


def run(wall, main_rerun=0.0, work=1.0, metric=None, pickle_bytes=0, tasks_per_child=8.0, started=2):
    parts = dict.fromkeys(PARTS, 0.0)
    parts.update({"work": work, "startup:main_rerun": main_rerun})
    parts["parent"] = wall - sum(parts.values())
    return {"wall_s": wall, "parts": parts, "metric": metric, "main": "/x/heavy.py", "child_rows": [],
            "children": {"started": started, "methods": ["forkserver"], "targets": {}, "took_tasks": started,
                         "tasks_per_child": tasks_per_child,
                         "phases": {p: main_rerun / started if p == "main_rerun" else 0.0 for p in STARTUP},
                         "startup_s": main_rerun, "first_task_s": 0.001, "start_call_s": 0.01, "pickle_s": 0.0,
                         "pickle_bytes": pickle_bytes},
            "tasks": {"gets": 16, "get_s": 0.001, "pickled_calls": 16, "pickle_s": 1e-5, "pickled_bytes": 100}}


FORK = [run(1.50), run(1.52), run(1.49)]
CONTEXT = {"forkserver": {"main": "/x/heavy.py", "imports": [("numpy", 0.8, 3)], "python": "3.11.7",
                          "forkserver": None, "native_threads": None}}


def test_a_re_run_of_main_is_the_top_cause_with_the_guard_first():
    slow = [run(1.81, main_rerun=0.30), run(1.83, main_rerun=0.32), run(1.80, main_rerun=0.29)]
    result = program_contrast.compare(FORK, slow, ("fork", "forkserver"), fix_context=CONTEXT)
    assert result["causes"][0] == "startup:main_rerun"
    assert result["wall"]["significant"] and result["wall"]["diff_s"] == pytest.approx(0.31, abs=0.01)
    assert 2 <= len(result["verdict"]) <= 3
    assert "re-running the parent's __main__" in result["verdict"][1] and "heavy.py" in result["verdict"][1]
    assert result["fix"][0]["id"] == "guard-imports" and result["fix"][0]["modules"] == ["numpy"]
    assert "per child" in result["fix"][0]["what"] and "writer" not in result["fix"][0]["what"]
    assert any(f["id"] == "fork" for f in result["fix"])


def test_no_difference_names_no_cause():
    same = [run(1.51), run(1.49), run(1.52)]
    result = program_contrast.compare(FORK, same, ("fork", "forkserver"), fix_context=CONTEXT)
    assert not result["causes"] and not result["fix"]
    assert "no cause is named" in result["verdict"][-1]


def test_one_run_a_side_names_no_cause():
    result = program_contrast.compare(FORK[:1], [run(1.9, main_rerun=0.4)], ("fork", "forkserver"))
    assert result["wall"]["ci95_s"] is None and not result["causes"]
    assert "--repeat" in result["verdict"][1]


def test_pickled_arguments_are_named_as_pickling_with_their_fix():
    def pickling(wall, pickle, unpickle):
        r = run(wall, pickle_bytes=40 * 2**20, tasks_per_child=0.0, started=6)
        r["parts"].update({"start:pickle": pickle, "startup:unpickle": unpickle})
        r["parts"]["parent"] = wall - sum(v for k, v in r["parts"].items() if k != "parent")
        return r

    fork = [pickling(1.0, 0.0, 0.0), pickling(1.02, 0.0, 0.0), pickling(0.99, 0.0, 0.0)]
    slow = [pickling(1.5, 0.25, 0.2), pickling(1.52, 0.26, 0.21), pickling(1.49, 0.24, 0.2)]
    result = program_contrast.compare(fork, slow, ("fork", "forkserver"))
    assert set(result["causes"][:2]) == {"start:pickle", "startup:unpickle"}
    assert "startup:main_rerun" not in result["causes"]
    assert result["fix"][0]["id"] == "no-pickled-args" and "40.0 MiB" in result["fix"][0]["what"]


def test_a_metric_is_told_first_with_its_interval():
    fork = [run(1.5, metric=1.2), run(1.52, metric=1.21), run(1.49, metric=1.19)]
    slow = [run(1.81, main_rerun=0.3, metric=1.5), run(1.83, main_rerun=0.32, metric=1.52),
            run(1.8, main_rerun=0.29, metric=1.49)]
    result = program_contrast.compare(fork, slow, ("fork", "forkserver"), metric=r"elapsed ([0-9.]+)")
    assert result["metric"]["diff"] == pytest.approx(0.303, abs=0.01) and result["metric"]["significant"]
    assert result["verdict"][0].startswith("forkserver: the figure /elapsed ([0-9.]+)/ is 1.503")


def test_a_figure_within_the_noise_names_no_cause_whatever_the_wall_time():
    fork = [run(1.5, metric=1.2), run(1.52, metric=1.21), run(1.49, metric=1.19)]
    slow = [run(1.6, metric=1.21), run(1.62, metric=1.19), run(1.59, metric=1.2)]
    slow = [dict(r, parts=dict(r["parts"], forkserver=0.1, parent=r["parts"]["parent"] - 0.1)) for r in slow]
    result = program_contrast.compare(fork, slow, ("fork", "forkserver"), metric=r"elapsed ([0-9.]+)")
    assert result["wall"]["significant"] and result["metric"]["significant"] is False
    assert not result["causes"] and result["verdict"][1].startswith("The figure's difference is within")
