"""The threads live at a fork, native ones included: the probe lists them
from /proc/self/task (each one's name from its comm) at every fork and at
every Process.start() that does not fork, on each Python from 3.9; the
report names them, and the fork advice names them as fork's deadlock hazard
(a target whose OpenBLAS pool runs in the producer) or says none was live."""

from __future__ import annotations

import json
import os

import pytest

from helpers import TARGETS, run_writerprof, writerprof_command
from test_probe_journal import INTERPRETERS, journals, kinds, run_probed

FORK_ACTION = "start the writers with fork"  # the fork advice, as a writers' run words it

# A thread of C's own, as a library's pool starts one (libc's pause() its
# start routine, named as pools name theirs), a Python thread, a fork and a
# forkserver writer; the fds open before the fork are the ones open after it.
NATIVE_AND_PYTHON_THREADS = """
import ctypes, multiprocessing, os, threading
if __name__ == "__main__":
    libc = ctypes.CDLL(None)
    tid = ctypes.c_ulong()
    assert libc.pthread_create(ctypes.byref(tid), None, ctypes.cast(libc.pause, ctypes.c_void_p), None) == 0
    assert libc.pthread_setname_np(tid, b"native-pool") == 0
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, name="uploader")
    worker.start()
    fds = os.listdir("/proc/self/fd")
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.listdir("/proc/self/fd") == fds, (fds, os.listdir("/proc/self/fd"))
    writer = multiprocessing.get_context("forkserver").Process(target=os.getpid)
    writer.start()
    writer.join()
    stop.set()
    worker.join()
    print("done")
"""


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
def test_the_probe_lists_native_threads_at_a_fork_and_a_start(tmp_path, python):
    script = tmp_path / "threads.py"
    script.write_text(NATIVE_AND_PYTHON_THREADS)
    run, done = run_probed(tmp_path, script, python=INTERPRETERS[python])
    assert done.returncode == 0 and done.stdout == "done\n", done.stderr
    procs = journals(run)
    (main,) = [ev for ev, _ in procs.values() if ev[0]["role"] == "main"]
    (fork,) = kinds(main, "fork")
    (start,) = kinds(main, "process_start")
    assert start["method"] == "forkserver"
    for census in (fork, start):
        assert census["native_only"] == ["native-pool"]
        assert census["python_threads"] == 2 and "uploader" in census["threads"]
        assert census["native_threads"] == 3  # the main thread, the uploader, the pool's
        assert census["forking_thread"] == "MainThread" and census["comm"]


def recorded(run, method: str, blas_threads: int, monkeypatch) -> dict:
    """A recording of the reproducer whose main module runs a product on OpenBLAS's pool."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", str(blas_threads))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [TARGETS, os.environ.get("PYTHONPATH")])))
    run_writerprof("record", "-o", run, "--", *writerprof_command(), "repro", "--saves", "3", "--size", "64MiB",
                   "--start-method", method, "--main-imports", "blas_pool", timeout=300)
    return json.loads(run_writerprof("report", "--json", run).stdout)


def fork_advice(summary) -> list[str]:
    return [a["what"] for d in summary["diagnoses"] for a in d.get("fix") or [] if a["what"].startswith(FORK_ACTION)]


def test_the_fork_advice_names_the_blas_pool_live_as_the_writers_start(tmp_path, monkeypatch):
    pooled = fork_advice(recorded(tmp_path / "pooled", "forkserver", 2, monkeypatch))
    assert pooled and all("native threads, which no Python Thread runs, were live as the writers were started "
                          "(1 with no name of its own)" in w and "deadlock hazard" in w for w in pooled)
    alone = fork_advice(recorded(tmp_path / "alone", "forkserver", 1, monkeypatch))
    assert alone and all("no other thread, native ones included, was live" in w and "deadlock" not in w
                         for w in alone)


def test_a_fork_with_the_blas_pool_live_is_reported_with_it(tmp_path, monkeypatch):
    recorded(tmp_path / "run", "fork", 2, monkeypatch)
    text = run_writerprof("report", tmp_path / "run").stdout
    assert "fork-with-threads" in text
    assert "and native ones run by no Python Thread (1 with no name of its own)" in " ".join(text.split())
