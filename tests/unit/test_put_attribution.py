"""A producer's put is the wait of the save whose writer takes the chunk
(saves._put_waits): the save whose window and thread hold it, else the save
of the writer the producer started last before it (its writer_seq), while
that save lasts."""

from __future__ import annotations

import numpy as np

from writerprof.analysis import saves

PUT, GEN = 2, 1


def test_puts_go_to_the_writer_on_the_other_end():
    # Producer row 0 started writer 0 (save 0, until t=1000) and writer 1 (save 1, until 2000).
    found = [{"proc": 0, "start": {"writer_seq": 0}, "w1": 1000}, {"proc": 0, "start": {"writer_seq": 1}, "w1": 2000}]
    rows = [  # proc, phase, writer_seq, start, end, owner (the window and thread's save)
        (0, PUT, 0, 100, 150, 0),    # owned: save 0
        (0, PUT, 0, 200, 260, -1),   # another thread, after writer 0 started: save 0
        (0, PUT, 1, 1200, 1300, -1), # after writer 1 started: save 1
        (0, PUT, 0, 1500, 1600, -1), # writer 0's save is over: nobody's
        (0, PUT, -1, 10, 20, -1),    # before any writer: nobody's
        (1, PUT, 0, 300, 400, -1),   # another process's: nobody's
        (0, GEN, 0, 400, 500, 0),    # not a put
    ]
    c = {name: np.array([r[i] for r in rows], dtype=np.int64)
         for i, name in enumerate(("proc", "phase", "writer_seq", "start_ns", "end_ns"))}
    c["own_ns"] = c["end_ns"] - c["start_ns"]
    owner = np.array([r[5] for r in rows], dtype=np.int64)
    seconds, count = saves._put_waits(c, owner, found, PUT, 2)
    assert count.tolist() == [2, 1]
    assert np.allclose(seconds, [110e-9, 100e-9])


def test_a_save_without_puts_has_none_measured():
    assert saves.measured(0.0, 0) is None and saves.measured(0.0, 3) == 0.0
