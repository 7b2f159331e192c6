"""How `writerprof record` samples Python stacks (StackOptions) and its
rates, apart from py-spy's driver (writerprof.record.pyspy): record reads
them for its arguments and the probe's environment, and imports the driver
(and ctypes, for ptrace) only when py-spy takes the stacks."""

from __future__ import annotations

from collections import namedtuple

RATE_HZ = 100  # the writers' (processes started by a Python process of the tree)
SPARSE_RATE_HZ = 10  # the rest: CMD, MPI ranks; and the writers after their start-up
# multiprocessing's daemons (forkserver, resource tracker) wait on a socket or
# a pipe all their life: a few samples say so (each costs ~0.3 ms of py-spy
# here however shallow the stack: 0.06 CPU s of a 24 s run each at 10 Hz; at
# 2 Hz a run of 2 s had too few for the resource tracker's frames, once).
DAEMON_RATE_HZ = 5
BY_PROBE = "probe"  # StackOptions.by (and stacks.json's "by") when the probe takes the stacks

# A named tuple, not a dataclass: dataclasses imports inspect (~6 ms of CPU
# before CMD starts; the summary's numpy imports it once CMD has ended).
_Fields = namedtuple("StackOptions", ("enabled", "by", "rate_hz", "native", "idle", "nonblocking", "sparse_rate_hz",
                                      "busy_rate_hz"),
                     defaults=(True, BY_PROBE, RATE_HZ, False, True, True, SPARSE_RATE_HZ, None))


class StackOptions(_Fields):
    """How record samples stacks (see writerprof.record.pyspy's docstring for
    why idle and nonblocking are on): whether at all; by whom, the probe in
    each process (writerprof.record.probestacks) or "py-spy"; rate_hz;
    native frames (py-spy); idle; nonblocking; sparse_rate_hz; and
    busy_rate_hz, the full rate while the CPUs are busy (None: rate_hz always)."""

    __slots__ = ()

    def settings(self) -> dict:
        return self._asdict()

    @property
    def by_probe(self) -> bool:
        """Whether the probe takes the stacks (writerprof.record.probestacks), not py-spy."""
        return self.enabled and self.by == BY_PROBE

    @property
    def split(self) -> bool:
        """Whether the writers have py-spys of their own at rate_hz, the tree's
        at sparse_rate_hz (see writerprof.record.pyspy). Only non-blocking: two
        py-spys that pause a process would stand in each other's way."""
        return self.nonblocking and self.sparse_rate_hz < self.rate_hz

    @property
    def tree_rate_hz(self) -> int:
        return self.sparse_rate_hz if self.split else self.rate_hz
