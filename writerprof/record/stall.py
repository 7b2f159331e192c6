"""Stall detection (`record --stall SECONDS`): on each host's sampler tick
(record's own, and a host agent's), every CHECK_SHARE-th of the stall
time, a look at the host's journals (writerprof.record.progress). When no save has made
progress for the stall time while a process that journals is alive, one
snapshot of every process the sampler follows (writerprof.record.snapshot),
taken by a thread of its own while the sampling goes on, and appended to
HOST_DIR/stalls.jsonl. Another only once progress resumed and stopped again,
and MAX_SNAPSHOTS at most.

The clock starts with the host's first save activity: its first progress,
or the first multiprocessing child (a writer to be: a child's journal role)
of a probed process, so that a program's imports and set-up before it saves
are no stall, a fork child that hangs before its first write is. It stands
still while none of the processes that journal is alive and while CMD is
stopped (Ctrl-Z): a shell left running after the Python program, or a job
stopped on purpose, is no stall."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from writerprof.probes.writerprof_probe import quiet
from writerprof.record.progress import Progress
from writerprof.record.system import HOST, System
from writerprof.run import layout, ownfile

STALL_NS = 30_000_000_000  # record's default
MIN_STALL_NS = 1_000_000_000  # below it, a pause between two writes is a stall
# A look costs the sampler ~0.7 ms of CPU (listings, a read of each live
# journal): once a second it was 7% of the sampler's CPU on the 16-save
# reproducer. A stall is seen at most two such shares of its time late (the
# look that saw the last progress, then the first look past the stall time).
CHECK_SHARE = 10
MAX_SNAPSHOTS = 3  # per host and run
_STOPPED = frozenset("Tt")


class StallWatch:
    def __init__(self, host_dir: Path, stall_ns: int, children: frozenset[str], system: System = HOST):
        """children: the journal roles of a multiprocessing child (sampler.WRITER_ROLES)."""
        self.host_dir, self.stall_ns, self.system = Path(host_dir), stall_ns, system
        self._children = children
        self._began = False  # the host's first save activity was seen
        self._progress = Progress(host_dir)
        self._every_ns = stall_ns // CHECK_SHARE
        self._looked_ns = 0
        self._progress_ns: int | None = None  # the last progress, or when the clock last stood
        self._armed = True  # progress since the last snapshot
        self._thread: threading.Thread | None = None
        self.taken: list[dict] = []  # the snapshots written: t_ns, stalled_ns, processes
        self.error: str | None = None  # why a snapshot could not be written

    def tick(self, now_ns: int, live: dict) -> None:
        """After a sampler tick: live, pid -> the sampler's _Process (pid, start_ticks, role, stat)."""
        if now_ns - self._looked_ns < self._every_ns:
            return
        self._looked_ns = now_ns
        journaling, advanced = self._progress.look(set(live))
        self._began = self._began or advanced or any(p.role in self._children for p in live.values())
        stopped = all(p.stat is not None and p.stat.state in _STOPPED for p in live.values())
        if advanced or not (self._began and journaling) or stopped or self._progress_ns is None:
            self._progress_ns = now_ns
            self._armed |= advanced
            return
        if (now_ns - self._progress_ns < self.stall_ns or not self._armed or len(self.taken) >= MAX_SNAPSHOTS
                or self._thread is not None and self._thread.is_alive()):
            return
        self._armed = False
        # (Not a host agent's own process, which the probed process that started it has as its child.)
        processes = [(p.pid, p.start_ticks, p.role or None) for p in live.values() if p.pid != os.getpid()]
        stall = {"t_ns": now_ns, "wall_ns": time.time_ns(), "last_progress_ns": self._progress_ns,
                 "stall_ns": self.stall_ns}
        self._thread = threading.Thread(target=self._take, args=(processes, stall), name="writerprof-stall",
                                        daemon=True)
        quiet.blocking_all(self._thread.start)

    def stop(self) -> None:
        """Wait for a snapshot being taken to be written."""
        if self._thread is not None:
            self._thread.join()

    def _take(self, processes: list[tuple], stall: dict) -> None:
        # Nothing may reach the terminal while CMD runs: a failure is kept, and said after.
        from writerprof.record import snapshot  # (py-spy's driver, only where a save stalled)

        try:
            taken = snapshot.take(self.system, processes, **stall)
            line = (json.dumps(taken, separators=(",", ":")) + "\n").encode()
            fd = ownfile.create(self.host_dir / layout.STALLS_FILE)
            try:
                written = 0
                while written < len(line):  # (O_APPEND: a short write goes on at the end)
                    written += os.write(fd, line[written:])
            finally:
                os.close(fd)
        except OSError as exc:
            self.error = f"no stall snapshot: cannot write {layout.STALLS_FILE}: {exc.strerror or exc}"
            return
        except Exception as exc:  # (a bug of its own must not end the recording)
            self.error = f"no stall snapshot: {type(exc).__name__}: {exc}"
            return
        self.taken.append({"t_ns": stall["t_ns"], "stalled_ns": stall["t_ns"] - stall["last_progress_ns"],
                           "processes": len(taken["processes"])})
