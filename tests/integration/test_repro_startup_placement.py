"""Start-up realism and the placement knobs, observed in the real writer."""

from __future__ import annotations

import statistics

import pytest
from helpers import repro_records

QUICK = ("--saves", 2, "--size", "8MiB", "--chunk-size", "2MiB", "--no-fsync")
HEAVY = "numpy,matplotlib.pyplot"


def _startup(method: str, main_imports: str) -> float:
    saves, summary = repro_records("--start-method", method, "--main-imports", main_imports, *QUICK)
    assert summary["main_imports"] == [m for m in main_imports.split(",") if m]
    # The second save's writer: under forkserver the daemon is already up.
    return statistics.fmean(s["writer_startup_s"] for s in saves[1:])


def test_main_imports_slow_forkserver_writers_but_not_fork():
    forkserver_light = _startup("forkserver", "")
    forkserver_heavy = _startup("forkserver", HEAVY)
    fork_light = _startup("fork", "")
    fork_heavy = _startup("fork", HEAVY)
    import_cost = forkserver_heavy - forkserver_light
    # Every forkserver child re-runs the main module, and so its imports ...
    assert import_cost > 0
    # ... while a forked child inherits them: it pays none of that cost.
    assert fork_heavy - fork_light < import_cost / 2
    assert fork_heavy < forkserver_heavy


def test_spawn_writers_pay_the_main_imports_too():
    assert _startup("spawn", HEAVY) > _startup("spawn", "")


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_writer_cpus_pins_the_writer(method, cpus):
    wanted = cpus[-1]
    saves, _ = repro_records("--start-method", method, "--writer-cpus", wanted, *QUICK)
    for record in saves:
        assert record["writer_cpus"] == [wanted]
        assert record["writer_inherited_cpus"] == cpus


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_pin_parent_at_start_reaches_every_writer(method, cpus):
    wanted = cpus[0]
    saves, _ = repro_records("--start-method", method, "--pin-parent", wanted, *QUICK)
    for record in saves:
        assert record["producer_cpus"] == [wanted]
        assert record["writer_inherited_cpus"] == [wanted]
        assert record["writer_cpus"] == [wanted]


def test_pin_after_first_writer_forkserver_keeps_the_old_mask(cpus):
    wanted = cpus[0]
    args = ("--pin-parent", wanted, "--pin-when", "after-first-writer", *QUICK)
    fork, _ = repro_records("--start-method", "fork", *args)
    forkserver, _ = repro_records("--start-method", "forkserver", *args)
    for saves in (fork, forkserver):
        assert saves[0]["writer_inherited_cpus"] == cpus  # started before the pin
        assert saves[1]["producer_cpus"] == [wanted]
    # A forked writer takes its parent's new mask; the forkserver daemon's
    # children take the daemon's, frozen when it started.
    assert fork[1]["writer_inherited_cpus"] == [wanted]
    assert forkserver[1]["writer_inherited_cpus"] == cpus


def test_touch_cpus_is_applied(cpus):
    saves, _ = repro_records("--touch-cpus", cpus[-1], "--verify", *QUICK)
    assert all(s["touch_cpus"] == [cpus[-1]] and s["verified"] for s in saves)
