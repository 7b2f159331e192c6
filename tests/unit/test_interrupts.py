"""A stop signal inside interrupts.deferred() raises when the block ends, not in it."""

import signal

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
