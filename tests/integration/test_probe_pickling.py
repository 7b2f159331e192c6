"""What multiprocessing pickles, as `writerprof record` journals it on every
CPython from 3.9 up: each Process.start() the seconds and bytes it pickled
(spawn and forkserver pickle the target and its arguments; fork nothing),
and each process the count, seconds and bytes of its queues' pickling (a
pool's tasks, in the parent)."""

from __future__ import annotations

import subprocess

import pytest
from test_probe_journal import INTERPRETERS

from helpers import writerprof_command
from writerprof.probes.writerprof_probe import pickling
from writerprof.run import load

ARGUMENT = 20 << 20  # the bytes one child gets as its argument
TASKS, TASK_BYTES = 40, 4096  # a pool's map, one task a chunk

SCRIPT = f"""
import multiprocessing, sys

def took(data):
    assert len(data) == {ARGUMENT}

if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    child = context.Process(target=took, args=(bytes({ARGUMENT}),))
    child.start()
    child.join()
    with context.Pool(2) as pool:
        sizes = pool.map(len, [bytes({TASK_BYTES})] * {TASKS}, chunksize=1)
    print(child.exitcode, sum(sizes))
"""


@pytest.fixture(scope="module", params=[(python, method) for python in sorted(INTERPRETERS)
                                        for method in ("fork", "forkserver", "spawn")],
                ids="-".join)
def recorded(request, tmp_path_factory):
    python, method = request.param
    directory = tmp_path_factory.mktemp("pickling")
    script, run_dir = directory / "pickles.py", directory / "run"
    script.write_text(SCRIPT)
    done = subprocess.run(writerprof_command() + ["record", "-o", str(run_dir), "--", INTERPRETERS[python],
                                                  str(script), method], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"0 {TASKS * TASK_BYTES}\n"
    return method, load(run_dir)


def test_a_start_journals_what_it_pickled_for_its_child(recorded):
    method, run = recorded
    starts = [e["data"] for e in run.events_of("process_start")]
    (big,) = [s for s in starts if s["target"].endswith(".took")]
    workers = [s for s in starts if s["target"] == "multiprocessing.pool.worker"]
    assert len(workers) == 2 and all(s["method"] == method for s in starts)
    if method == "fork":
        assert all(s.get("pickle_bytes", 0) == 0 and s.get("pickle_ns", 0) == 0 for s in starts)
    else:
        assert big["pickle_bytes"] >= ARGUMENT and big["pickle_ns"] > 0
        # A worker's start counts its own pickling only: its Process, not the big argument.
        assert all(0 < s["pickle_bytes"] < ARGUMENT // 100 and s["pickle_ns"] > 0 for s in workers)


def test_a_pool_journals_the_pickling_of_its_tasks_in_the_parent(recorded):
    method, run = recorded
    (parent,) = {e["pid"] for e in run.events_of("process_start")}
    (pickled,) = [e["data"] for e in run.events_of("pickling") if e["pid"] == parent]
    assert pickled["pickled_calls"] >= TASKS and pickled["pickled_bytes"] >= TASKS * TASK_BYTES
    assert pickled["pickled_ns"] > 0
    hooks = {(e["pid"], e["data"]["spec"]): e["data"]["status"] for e in run.events_of("hook")
             if e["data"]["spec"] in (pickling.DUMP_HOOK, pickling.DUMPS_HOOK)}
    assert hooks[(parent, pickling.DUMP_HOOK)] == hooks[(parent, pickling.DUMPS_HOOK)] == "applied"
    assert set(hooks.values()) == {"applied"}
