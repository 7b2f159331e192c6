"""CPython 3.14's start-up path, emulated on every CPython from 3.9 up: a
program that chooses no start method gets forkserver (3.14's default on
Linux, here WRITERPROF_FORCE_START_METHOD's), and the forkserver is handed
the script's path, as 3.13.8 and 3.14.1 on do (gh-126631), so that it runs
`__main__` once, in its preload, and its children do not. The probe journals
that preload in the daemon as its main_rerun (docs/python-versions.md)."""

from __future__ import annotations

import pytest
from test_probe_journal import INTERPRETERS, journals, kinds, run_probed

SCRIPT = """
import multiprocessing, os
from multiprocessing import spawn

print("ran as", __name__, flush=True)

def work():
    pass

if __name__ == "__main__":
    # What ensure_running hands the forkserver from 3.13.8 and 3.14.1: the
    # script's path as main_path (before, a key get_preparation_data lacks).
    prepare = spawn.get_preparation_data

    def with_main_path(name):
        data = prepare(name)
        if "init_main_from_path" in data:
            data["main_path"] = data["init_main_from_path"]
        return data

    spawn.get_preparation_data = with_main_path
    for _ in range(2):
        child = multiprocessing.Process(target=work)
        child.start()
        child.join()
"""


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_the_forkservers_preload_of_main_is_journaled_as_its_rerun(tmp_path, python):
    script = tmp_path / "preloaded.py"
    script.write_text(SCRIPT)
    run, done = run_probed(tmp_path, script, python=INTERPRETERS[python],
                           extra_env={"WRITERPROF_FORCE_START_METHOD": "forkserver"})
    assert done.returncode == 0, done.stderr
    # Once as the program, once in the forkserver's preload; never in a child.
    assert sorted(done.stdout.splitlines()) == ["ran as __main__", "ran as __mp_main__"]
    procs = {}  # role -> its processes' events
    for events, _ in journals(run).values():
        procs.setdefault(events[0]["role"], []).append(events)
    (main,), (daemon,) = procs["main"], procs["forkserver"]
    assert [e["method"] for e in kinds(main, "process_start")] == ["forkserver"] * 2
    assert [e["path"] for e in kinds(daemon, "main_rerun")] == [str(script)]
    assert len(procs["forkserver_child"]) == 2
    assert all(kinds(child, "target_start") for child in procs["forkserver_child"])
    assert not [e for role in procs.values() for events in role for e in kinds(events, "hook")
                if e["status"] == "failed"]
