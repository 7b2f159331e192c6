"""record --stall's look at a host's journals (writerprof.record.progress):
what counts as a save's progress, on real files laid out as the probe and
the interposer write them."""

from __future__ import annotations

import os

import numpy as np

from io_journal import call, write_io
from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe import iofile
from writerprof.record.progress import SCAN_RECORDS, Progress
from writerprof.run import io, layout

HOST = "h"
PID = 4242


def _chunks(run, pid: int, records: int) -> None:
    procs = layout.host_dir(run, HOST) / journal.PROCS_DIR
    procs.mkdir(parents=True, exist_ok=True)
    (procs / f"{pid}-1{journal.CHUNKS_SUFFIX}").write_bytes(b"\0" * journal.CHUNK.size * records)


def _progress(run) -> Progress:
    return Progress(layout.host_dir(run, HOST))


def test_no_journal_yet_is_no_journaling_process(tmp_path):
    assert _progress(tmp_path).look({PID}) == (False, False)


def test_a_chunk_journal_that_grows_is_progress(tmp_path):
    _chunks(tmp_path, PID, 3)
    progress = _progress(tmp_path)
    assert progress.look({PID}) == (True, True)  # its first records
    assert progress.look({PID}) == (True, False)
    _chunks(tmp_path, PID, 4)
    assert progress.look({PID}) == (True, True)
    _chunks(tmp_path, PID, 4)
    assert progress.look({PID}) == (True, False)
    assert progress.look(set()) == (False, False)  # its process gone: nothing journals


def test_file_writes_and_syncs_are_progress_reads_and_failures_are_not(tmp_path):
    reads = [call("open", 0, 1, 2), call("read", 0, 3, 4, result=10), call("pread", 0, 5, 6, result=10)]
    write_io(tmp_path, HOST, PID, 1, reads)
    progress = _progress(tmp_path)
    assert progress.look({PID}) == (True, False)
    failed = call("write", 0, 7, 8)
    failed = failed[:1] + bytes([1]) + failed[2:]  # flags: the call failed
    write_io(tmp_path, HOST, PID, 1, reads + [failed])
    assert progress.look({PID}) == (True, False)
    write_io(tmp_path, HOST, PID, 1, reads + [failed, call("fsync", 0, 9, 10)])
    assert progress.look({PID}) == (True, True)
    write_io(tmp_path, HOST, PID, 1, reads + [failed, call("fsync", 0, 9, 10), call("pwrite", 0, 11, 12, 4096)])
    assert progress.look({PID}) == (True, True)


def test_a_record_being_written_is_read_again_once_finished(tmp_path):
    done = [call("open", 0, 1, 2)]
    write_io(tmp_path, HOST, PID, 1, done, handed_out=1)  # a slot handed out, its op still 0
    progress = _progress(tmp_path)
    assert progress.look({PID}) == (True, False)
    write_io(tmp_path, HOST, PID, 1, done + [call("write", 0, 3, 4, 100)])
    assert progress.look({PID}) == (True, True)


def test_a_journal_written_through_counts_its_records_by_its_size(tmp_path):
    path = write_io(tmp_path, HOST, PID, 1, [call("write", 0, 1, 2, 100)])
    data = bytearray(path.read_bytes())
    header = np.frombuffer(data, io.HEADER, count=1)
    header["flags"], header["next"] = iofile.WRITTEN_THROUGH, 0  # (next stays 0 there)
    path.write_bytes(bytes(data))
    assert _progress(tmp_path).look({PID}) == (True, True)


def test_more_file_calls_than_are_scanned_are_progress(tmp_path):
    write_io(tmp_path, HOST, PID, 1, [call("read", 0, i, i + 1, 1) for i in range(SCAN_RECORDS + 1)])
    assert _progress(tmp_path).look({PID}) == (True, True)


def test_a_process_that_wrote_and_ended_between_two_looks_made_progress(tmp_path):
    progress = _progress(tmp_path)
    _chunks(tmp_path, PID, 1)
    assert progress.look({PID}) == (True, True)
    other = PID + 1
    write_io(tmp_path, HOST, other, 5, [call("write", 0, 1, 2, 100)])  # never seen alive
    os.utime(layout.host_dir(tmp_path, HOST) / iofile.IO_DIR, ns=(1, 1))  # (its directory listed again)
    assert progress.look({PID}) == (True, True)
    assert progress.look({PID}) == (True, False)
