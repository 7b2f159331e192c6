"""The suite's CPU seconds by test file, printed at the end of every run
beside pytest's slowest durations: on 2 CPUs the suite's wall time is at
least half its CPU seconds, whatever the number of workers, so these are
what a faster suite must cut. A phase's CPU is its worker's own and that
of the children it waited for (a recording, the two-node guest), so work
a test leaves running is not counted."""

from __future__ import annotations

import resource
from collections import Counter

import pytest

SHOWN = 15  # files in the table


def _cpu_s() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # makereport runs right after its phase: the phase's CPU is what was spent since the previous report.
    now = _cpu_s()
    spent = now - item.stash.get(_since, now)
    item.stash[_since] = now
    outcome = yield
    outcome.get_result().user_properties.append(("cpu_s", spent))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    item.stash[_since] = _cpu_s()


_since = pytest.StashKey[float]()
_by_file: Counter = Counter()


def pytest_runtest_logreport(report):
    """On the controller (and in a run without workers): each phase's report."""
    for name, value in report.user_properties:
        if name == "cpu_s":
            _by_file[report.nodeid.split("::")[0]] += value


def pytest_terminal_summary(terminalreporter):
    if not _by_file:
        return
    total = sum(_by_file.values())
    terminalreporter.write_sep("=", f"CPU seconds by test file: {total:.0f} in all")
    for path, cpu_s in _by_file.most_common(SHOWN):
        terminalreporter.write_line(f"{cpu_s:8.1f}  {path}")
