"""The suite's CPU seconds by test file, printed at the end of every run
beside pytest's slowest durations: on 2 CPUs the suite's wall time is at
least half its CPU seconds, whatever the number of workers, so these are
what a faster suite must cut. A phase's CPU is its worker's own and that
of the children it waited for (a recording, the two-node guest), so work
a test leaves running is not counted.

And the two-node guest's files one after another, first, on one worker
(pytest-xdist, --dist loadfile): two emulated guests at once on 2 CPUs took
554 CPU s where the same five files one after another took 296 (likely,
not measured: each guest's two vCPUs spin on each other's locks when the
host cannot run both).
"""

from __future__ import annotations

import os
import resource
from collections import Counter

import pytest

SHOWN = 15  # files in the table
GUEST_FILES = "test_numavm"  # the files whose tests run on the two-node guest start so


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """The guest's tests first (a stable sort): under xdist the worker that
    takes them starts at once on the longest unit of the run."""
    items.sort(key=lambda item: not _on_guest(item.nodeid))


def pytest_xdist_make_scheduler(config, log):
    """loadfile, with the guest's files one unit of work (see above)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class GuestFilesTogether(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return GUEST_FILES if _on_guest(nodeid) else super()._split_scope(nodeid)

    return GuestFilesTogether(config, log)


def _on_guest(nodeid: str) -> bool:
    return os.path.basename(nodeid.split("::", 1)[0]).startswith(GUEST_FILES)


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
