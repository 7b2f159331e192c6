"""A stop signal inside interrupts.deferred() raises when the block ends, not
in it; one that CPython swallows (raised in an at-fork callback) is said by
check(), and not printed."""

import signal
import subprocess
import sys

import pytest

from writerprof import interrupts
from writerprof.errors import Interrupted


@pytest.fixture(autouse=True)
def no_signal_left(monkeypatch):
    monkeypatch.setattr(interrupts, "_received", [])


def test_a_signal_in_a_deferred_block_raises_after_it():
    done = []
    with pytest.raises(Interrupted) as raised:
        with interrupts.deferred():
            interrupts._handler(signal.SIGINT, None)  # what Python runs when SIGINT arrives
            done.append("made and handed over")
    assert done == ["made and handed over"] and raised.value.signum == signal.SIGINT


def test_outside_a_block_a_signal_raises_at_once():
    with pytest.raises(Interrupted):
        interrupts._handler(signal.SIGTERM, None)


# A SIGTERM that arrives as a fork's after-in-parent callback runs (logging has
# one), as a writer is forked: its Interrupted is swallowed there. (The list
# after the kill is bytecode for the handler to run at, inside the callback.)
AT_FORK = """
import os, signal, sys
from writerprof import interrupts
from writerprof.errors import Interrupted
interrupts.install()
os.register_at_fork(after_in_parent=lambda: os.kill(os.getpid(), signal.SIGTERM) or [0] * 1000)
if os.fork() == 0:
    os._exit(0)
os.wait()
try:
    interrupts.check()
except Interrupted as signal_seen:
    sys.exit(f"interrupted by {signal_seen.signum}")
"""


def test_a_signal_swallowed_in_an_at_fork_callback_is_said_by_check_and_not_printed():
    done = subprocess.run([sys.executable, "-c", AT_FORK], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (1, f"interrupted by {int(signal.SIGTERM)}\n")


def test_other_unraisable_exceptions_are_still_printed():
    before = []
    hook = interrupts._Quiet(before.append)
    hook(type("Unraisable", (), {"exc_value": ValueError("x")})())
    hook(type("Unraisable", (), {"exc_value": Interrupted(signal.SIGTERM)})())
    assert [u.exc_value.args for u in before] == [("x",)]
