"""The texts an interposer journal carries after a PATH or a REQUEST record
(writerprof.run.io._texts), against the records journal.c writes."""

import numpy as np

from io_journal import call, path_records, request_records
from writerprof.probes.writerprof_probe import iofile
from writerprof.run import io


def _every(records: list[bytes]) -> np.ndarray:
    return np.frombuffer(b"".join(records), io.IO_FILE)


def test_each_text_whole_or_none_where_its_records_are_cut_short():
    long = "/data/ckpt/" + "rank-0007/" * 12 + "model.pt"  # several PATH_DATA records
    odd = "/data/é-ü/☃.bin"
    cut = path_records(4, "/data/cut-" + "x" * 100)  # its second PATH_DATA record lost: a call in its place
    records = [*path_records(1, "/a"), call("write", 1, 10, 20, 5), *path_records(2, long),
               *request_records(2, "PUT /bucket/key", 30, 40), *path_records(3, odd), *path_records(5, ""),
               *cut[:2], call("close", 4, 50, 60), *path_records(6, "/at/the/end/" + "y" * 70)[:2]]
    every = _every(records)
    paths = io._texts(every, "path")
    rows = np.flatnonzero(every["op"] == iofile.OPS["path"]).tolist()
    assert [row for row, _ in paths] == rows
    assert [text for _, text in paths] == ["/a", long, odd, "", None, None]  # the last: the journal ends first
    assert io._texts(every, "request") == [(int(np.flatnonzero(every["op"] == iofile.OPS["request"])[0]),
                                            "PUT /bucket/key")]


def test_a_damaged_count_past_the_journals_end_is_no_text():
    damaged = path_records(7, "/data/x")
    head = np.frombuffer(damaged[0], io.IO_FILE).copy()
    head["count"] = 2**32 - 1  # ~68M records of text: far past the end
    every = _every([head.tobytes(), *damaged[1:], *path_records(8, "/data/y")])
    assert [text for _, text in io._texts(every, "path")] == [None, "/data/y"]


def test_a_journal_without_texts():
    assert io._texts(_every([call("write", 1, 10, 20, 5)]), "path") == []
    assert io._texts(np.zeros(0, io.IO_FILE), "request") == []
