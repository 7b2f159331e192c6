"""The probe's built-in specs for the benchmark's checkpoint code: both package
names (mlpstorage_py, and mlpstorage before it), every storage writer's
write_chunk and close; applied when a module of that name is imported, and
its close's fsync timed as fsync inside it."""

from __future__ import annotations

import os
import sys

import pytest

from writerprof.probes.writerprof_probe import calls, imports, osio, specs
from writerprof.probes.writerprof_probe.format import PHASES
from probe_journal import MemoryJournal as Journal

WRITER = '''
import os


class {cls}:
    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)

    def write_chunk(self, buffer, size):
        return os.write(self.fd, buffer[:size])

    def close(self):
        os.fsync(self.fd)
        os.close(self.fd)
'''


def test_both_package_names_and_every_storage_writer_are_covered():
    for package in ("mlpstorage_py", "mlpstorage"):
        streaming = f"{package}.checkpointing.streaming_checkpoint:StreamingCheckpointing."
        assert streaming + "_writer_process=writer" in specs.BUILT_IN
        assert streaming + "_run_producer=producer" in specs.BUILT_IN
        for module, cls in (("file_writer", "FileStorageWriter"), ("s3dlio_writer", "S3DLIOStorageWriter"),
                            ("minio_writer", "MinIOStorageWriter"), ("s3torch_writer", "S3TorchConnectorWriter")):
            where = f"{package}.checkpointing.storage_writers.{module}:{cls}."
            assert {where + "write_chunk=write", where + "close=close"} <= set(specs.BUILT_IN)
    assert all(specs.parse(spec) for spec in specs.BUILT_IN)
    assert len(set(specs.BUILT_IN)) == len(specs.BUILT_IN)


@pytest.fixture
def older_package(tmp_path, monkeypatch):
    """A stand-in for the older package's file writer, importable by its real name."""
    base = tmp_path / "mlpstorage" / "checkpointing" / "storage_writers"
    base.mkdir(parents=True)
    for directory in (base.parent.parent, base.parent, base):
        (directory / "__init__.py").write_text("")
    (base / "file_writer.py").write_text(WRITER.format(cls="FileStorageWriter"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    for name in [n for n in sys.modules if n == "mlpstorage" or n.startswith("mlpstorage.")]:
        del sys.modules[name]


def test_the_older_package_names_writer_is_hooked_and_its_fsync_is_inside_close(older_package, tmp_path,
                                                                              monkeypatch):
    journal = Journal()
    monkeypatch.setattr(calls, "journal", journal)
    for name in (*osio._TIMED, *osio._REISSUING):  # the os hooks, undone after the test
        if hasattr(os, name):
            monkeypatch.setattr(os, name, getattr(os, name))
    osio.install(lambda *status: None)
    phases = specs.Phases(journal)
    statuses = {}
    for spec in specs.BUILT_IN:
        if spec.startswith("mlpstorage."):
            specs.register(spec, phases, lambda spec, status, reason: statuses.update({spec: status}))
    from mlpstorage.checkpointing.storage_writers.file_writer import FileStorageWriter

    where = "mlpstorage.checkpointing.storage_writers.file_writer:FileStorageWriter."
    assert statuses == {where + "write_chunk=write": "applied", where + "close=close": "applied"}
    writer = FileStorageWriter(str(tmp_path / "ckpt"))
    assert writer.write_chunk(memoryview(b"x" * 4096), 4096) == 4096
    writer.close()
    got = [(r[0], r[1]) for r in journal.records]  # (phase, depth), in the order the calls ended
    assert got == [(PHASES["write"], 0), (PHASES["fsync"], 1), (PHASES["close"], 0)]
    imports._pending.clear()  # the specs of modules never imported here
