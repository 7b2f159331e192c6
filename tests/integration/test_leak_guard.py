"""The suite's shared-memory leak guard (conftest.leaks) blames a test for
the segments its own recorded processes created and left, and for nothing
else in /dev/shm: other programs' segments come and go beside it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from multiprocessing import resource_tracker, shared_memory
from pathlib import Path

from conftest import _segments, leaks
from helpers import run_writerprof, writerprof_command

# A target that leaves its segment behind: kept from its resource tracker, never unlinked.
LEAKER = ("from multiprocessing import resource_tracker, shared_memory\n"
          "m = shared_memory.SharedMemory(create=True, size=4096)\n"
          "resource_tracker.unregister(m._name, 'shared_memory')\n"
          "print(m.name)\n")


def test_a_recorded_leak_is_blamed_and_another_programs_segment_is_not(tmp_path):
    before = _segments()
    other = shared_memory.SharedMemory(create=True, size=4096)  # another program's, unrecorded
    resource_tracker.unregister(other._name, "shared_memory")
    leaked = None
    try:
        done = run_writerprof("record", "-o", tmp_path / "run", "--", sys.executable, "-c", LEAKER)
        leaked = done.stdout.split()[-1]
        assert leaks(before, tmp_path, settle_s=0.2) == {leaked}
    finally:
        for name in (other.name, leaked):
            if name:
                segment = shared_memory.SharedMemory(name=name)
                resource_tracker.unregister(segment._name, "shared_memory")
                segment.close()
                segment.unlink()
        other.close()
    assert not leaks(before, tmp_path, settle_s=0)


def _unlink(name: str) -> None:
    segment = shared_memory.SharedMemory(name=name)
    resource_tracker.unregister(segment._name, "shared_memory")
    segment.close()
    segment.unlink()


def test_the_guard_reads_a_passed_tests_journals_before_its_directory_goes(tmp_path):
    """The suite removes a passed test's directory as it ends
    (tmp_path_retention_policy): the guard must have read it first."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(textwrap.dedent(f"""
        import importlib.util, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        spec = importlib.util.spec_from_file_location("guard", {str(Path(__file__).parent / "conftest.py")!r})
        guard = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(guard)
        no_shared_memory_leak = guard.no_shared_memory_leak
    """))
    named = tmp_path / "leaked"
    (suite / "test_leaking.py").write_text(textwrap.dedent(f"""
        import subprocess, sys
        def test_leaks(tmp_path):
            done = subprocess.run({writerprof_command()!r} + ["record", "-o", str(tmp_path / "run"), "--",
                                  sys.executable, "-c", {LEAKER!r}], capture_output=True, text=True, check=True)
            open({str(named)!r}, "w").write(done.stdout.split()[-1])
    """))
    inner = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                            "-o", "tmp_path_retention_policy=failed", "--basetemp", str(tmp_path / "base"),
                            str(suite)], capture_output=True, text=True, cwd=suite, timeout=240)
    leaked = named.read_text()
    _unlink(leaked)
    assert "1 passed, 1 error" in inner.stdout, inner.stdout
    assert f"shared-memory segments left in /dev/shm: ['{leaked}']" in inner.stdout
