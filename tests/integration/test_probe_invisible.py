"""What a target can see of the probe, compared with the same code run
plainly: its signal dispositions, the functions it pickles, the errors its
calls raise, and how fast a signal ends it. The probe has no signal handler
(one would be inherited by forked children that get the signal before they
can run it, and would wait for a long C call to return)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import writerprof_command

SEEN = """
import os, pickle, signal
print([signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1)])
print(pickle.dumps(os._exit), pickle.dumps(os.write), pickle.dumps(os.pwrite), pickle.dumps(os.fsync))
print(os._exit is __import__("posix")._exit, os.write is __import__("posix").write)
for call in (lambda: os.write(fd=1, data=b""), lambda: os.pwrite(1, b"", offset=0), lambda: os.write(1),
             lambda: os.fsync(fd="x"), lambda: os.read(0, n=1)):
    try:
        call()
    except TypeError as exc:
        print("TypeError:", exc)
"""


def _recorded(tmp_path, name, command, **kwargs):
    return subprocess.run(writerprof_command() + ["record", "-o", str(tmp_path / name), "--", *command],
                          capture_output=True, text=True, timeout=120, **kwargs)


# With the interposer (record's default) and without it, where the probe's os hooks time the calls.
@pytest.mark.parametrize("prefix", [[], ["env", "-u", "LD_PRELOAD"]], ids=["interposed", "os-hooks"])
def test_the_target_sees_its_signals_functions_and_errors_as_plainly(tmp_path, prefix):
    plain = subprocess.run([sys.executable, "-c", SEEN], capture_output=True, text=True, timeout=60)
    recorded = _recorded(tmp_path, "run", prefix + [sys.executable, "-c", SEEN])
    assert recorded.returncode == plain.returncode == 0, recorded.stderr
    assert recorded.stdout == plain.stdout


# Main thread in a C call that releases the GIL for seconds; a second thread
# marks, a second after the test's SIGTERM, that the process still lives.
LONG_C_CALL = """
import hashlib, os, sys, threading, time
here = sys.argv[1]
def watch():
    while not os.path.exists(os.path.join(here, "sent")):
        time.sleep(0.01)
    time.sleep(1.0)
    open(os.path.join(here, "alive-after-sigterm"), "w").close()
threading.Thread(target=watch, daemon=True).start()
with open(os.path.join(here, "pid"), "w") as f:
    f.write(str(os.getpid()))
hashlib.pbkdf2_hmac("sha256", b"x", b"y", 50_000_000)  # tens of seconds, in C
"""


def test_sigterm_ends_a_target_in_a_long_c_call_at_once(tmp_path):
    recorder = subprocess.Popen(writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--",
                                                        sys.executable, "-c", LONG_C_CALL, str(tmp_path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pid_file = tmp_path / "pid"
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.kill(int(pid_file.read_text()), signal.SIGTERM)
        (tmp_path / "sent").touch()
        recorder.communicate(timeout=120)
    finally:
        recorder.kill()
    # Dead of the signal at once: the watching thread never got to look again.
    assert recorder.returncode == -signal.SIGTERM  # record ends as CMD did
    assert not (tmp_path / "alive-after-sigterm").exists()


# A worker terminated right after its start: with a handler inherited across
# fork, a SIGTERM that arrives before the child's Python resets its signal
# state is dropped, and the worker lives on (19 of 72 under the old probe).
TERMINATED_AT_BIRTH = """
import multiprocessing, time
if __name__ == "__main__":
    alive = 0
    for _ in range(40):
        worker = multiprocessing.get_context("fork").Process(target=time.sleep, args=(60,))
        worker.start()
        worker.terminate()
        worker.join(10)
        if worker.is_alive():
            alive += 1
            worker.kill()
            worker.join()
    print("alive after terminate:", alive)
"""


def test_workers_terminated_at_birth_all_end(tmp_path):
    recorded = _recorded(tmp_path, "run", [sys.executable, "-c", TERMINATED_AT_BIRTH])
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "alive after terminate: 0\n"


def test_a_fork_pool_in_a_loop_finishes(tmp_path):
    loop = ("import multiprocessing\n"
            "if __name__ == '__main__':\n"
            "    for i in range(200):\n"
            "        with multiprocessing.get_context('fork').Pool(2) as pool:\n"
            "            assert pool.map(abs, range(-4, 0)) == [4, 3, 2, 1]\n"
            "    print('done')\n")
    recorded = _recorded(tmp_path, "run", [sys.executable, "-c", loop])
    assert recorded.returncode == 0 and recorded.stdout == "done\n", recorded.stderr
