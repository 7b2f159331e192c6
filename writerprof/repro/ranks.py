"""The reproducer under an MPI launcher: which rank this is, and the ranks'
coordination (a barrier before each save, each save's figures gathered to
rank 0, one decision for all ranks to go on or stop).

mpi4py is imported only by `connect`, which only `writerprof repro` calls, in
the rank process: `from mpi4py import MPI` initialises MPI, and no writer child
may do that. Nothing a writer imports or re-runs (the main module as
`__mp_main__`, writer.py, config.py) imports this module.

Every wait polls a non-blocking call and sleeps between polls: MPI's blocking
calls busy-wait, and a rank that finished its save would take the CPUs of the
ranks still saving when ranks outnumber cores (`mpiexec -n 4` on 2 CPUs).
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass

from writerprof.errors import Interrupted, UsageError

MPI_MODES = ("auto", "on", "off")

# (launcher, rank variable, size variable): what the launchers export to each rank.
LAUNCHER_VARIABLES = (
    ("openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("mpich", "PMI_RANK", "PMI_SIZE"),  # Hydra, and PMI-1/2 launchers
    ("pmix", "PMIX_RANK", None),  # PMIx exports no size; MPI says it after init
)

POLL_S = 0.001  # sleep between polls of a pending MPI call
INTERRUPT_GRACE_S = 5.0  # how long an interrupted rank waits for the others to stop too
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# Message tags: a rank's save to rank 0, rank 0's decision, a failed rank's
# request to every other rank to stop its save now.
_STATUS, _VERDICT, _STOP = 1, 2, 3


@dataclass(frozen=True)
class Launch:
    """What the launcher told this process, before MPI is initialised."""

    launcher: str
    variable: str
    rank: int
    size: int | None


def detect_launch(environ) -> Launch | None:
    """The launcher's rank and size variables, first match wins; None outside one."""
    for launcher, rank_name, size_name in LAUNCHER_VARIABLES:
        rank = _whole(environ.get(rank_name))
        if rank is not None:
            size = _whole(environ.get(size_name)) if size_name else None
            return Launch(launcher, rank_name, rank, size)
    return None


def _whole(text) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def mpi4py_importable() -> bool:
    try:
        return importlib.util.find_spec("mpi4py") is not None
    except (ImportError, ValueError):
        return False


def resolve(mode: str, environ, importable) -> tuple[Launch | None, str | None]:
    """--mpi MODE against the environment: (the launch to join MPI for, or None;
    a warning to print, or None). `importable` says whether mpi4py can be imported.

    auto: MPI under a launcher when mpi4py is importable; on: MPI, or a usage error
    saying what is missing; off: never (each process runs alone).
    """
    if mode == "off":
        return None, None
    launch = detect_launch(environ)
    if launch is None:
        if mode == "on":
            raise UsageError("--mpi on: not started by an MPI launcher (no OMPI_COMM_WORLD_RANK,"
                             " PMI_RANK or PMIX_RANK in the environment); run it under mpiexec")
        return None, None
    if not importable():
        if mode == "on":
            raise UsageError("--mpi on: mpi4py is not installed (pip install 'writerprof[mpi]')")
        return None, (f"writerprof repro: warning: started by an MPI launcher ({launch.variable}"
                      f"={launch.rank}) but mpi4py is not installed: this rank runs alone"
                      " (pip install 'writerprof[mpi]'; --mpi off silences this)")
    return launch, None


def connect(launch: Launch) -> "Ranks":
    """Initialise MPI in this rank process (only here is mpi4py imported)."""
    # mpi4py's defaults, as a benchmark script gets them (MPI_THREAD_MULTIPLE,
    # MPI_Finalize at exit): only the main thread calls MPI here, and MPICH
    # starts its own helper thread at any thread level.
    try:
        from mpi4py import MPI
    except ImportError as exc:  # the package is there, its MPI library is not
        raise UsageError(f"--mpi: mpi4py cannot load its MPI library ({exc})") from None
    return Ranks(MPI, launch)


class Ranks:
    """This rank's view of the job, and the coordination of its saves."""

    def __init__(self, MPI, launch: Launch):
        self.MPI = MPI
        world = MPI.COMM_WORLD
        self.comm = world.Dup()  # the saves' messages, apart from anything else on the world
        self.exit_comm = world.Dup()  # only for interrupted ranks' last barrier
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.launcher = launch.launcher
        self.host = socket.gethostname()
        self.library = " ".join(MPI.Get_library_version().strip().splitlines()[0].split())
        # Set once this rank may leave like a normal process: every rank has
        # agreed to stop, so all of them will reach MPI_Finalize. Until then a
        # rank that leaves must abort the job, or the others would wait for it
        # forever (MPI_Finalize waits for every rank).
        self.released = False
        self.signalled = 0  # a signal received while waiting in an exchange
        self._stop_sends: list = []  # this rank's stop requests, once it failed
        self._stop_seen = False

    @property
    def root(self) -> bool:
        return self.rank == 0

    def describe(self) -> dict:
        import mpi4py

        return {"launcher": self.launcher, "library": self.library, "mpi4py": mpi4py.__version__}

    def exchange(self, status, decide):
        """Every rank's `status` to rank 0, which calls `decide(statuses)` (the
        statuses in rank order) for a verdict it sends back to every rank;
        returns (the statuses on rank 0 / None elsewhere, the verdict). No rank
        returns before every rank has called this: it is the barrier before the
        next save.

        A first SIGINT or SIGTERM while waiting here is only recorded, in
        `signalled` (a signal handler that raised could lose a message half
        received): the caller stops at the next exchange. A second one raises."""
        comm, MPI = self.comm, self.MPI
        with self._signals_recorded():
            if not self.root:
                sent = comm.isend(status, dest=0, tag=_STATUS)
                self._poll(lambda: comm.iprobe(source=0, tag=_VERDICT))
                verdict = comm.recv(source=0, tag=_VERDICT)
                self._poll(sent.Test)
                return None, verdict
            statuses = [status] + [None] * (self.size - 1)
            probe = MPI.Status()
            for _ in range(self.size - 1):
                self._poll(lambda: comm.iprobe(source=MPI.ANY_SOURCE, tag=_STATUS, status=probe))
                source = probe.Get_source()
                statuses[source] = comm.recv(source=source, tag=_STATUS)
            verdict = decide(statuses)
            sends = [comm.isend(verdict, dest=rank, tag=_VERDICT) for rank in range(1, self.size)]
            self._poll(lambda: MPI.Request.Testall(sends))
            return statuses, verdict

    @staticmethod
    def _poll(done) -> None:
        while not done():
            time.sleep(POLL_S)

    @contextmanager
    def _signals_recorded(self):
        def record(signum, frame):
            if self.signalled:
                raise Interrupted(signum)
            self.signalled = signum

        previous = {signum: signal.signal(signum, record) for signum in _STOP_SIGNALS}
        try:
            yield
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def request_stop(self) -> None:
        """This rank's save failed: ask every other rank to end its own save
        now rather than finish it (see stop_requested); once."""
        if not self._stop_sends:
            self._stop_sends = [self.comm.isend(None, dest=rank, tag=_STOP)
                                for rank in range(self.size) if rank != self.rank]

    def stop_requested(self) -> bool:
        """Has any other rank's save failed? Polled between chunks of a save."""
        if not self._stop_seen:
            self._stop_seen = self.comm.iprobe(source=self.MPI.ANY_SOURCE, tag=_STOP)
        return self._stop_seen

    def release(self) -> None:
        """Every rank agreed to stop here: each may now leave normally. Stop
        requests are settled first, so that none is pending at MPI_Finalize."""
        self._poll(lambda: self.MPI.Request.Testall(self._stop_sends))
        while self.comm.iprobe(source=self.MPI.ANY_SOURCE, tag=_STOP):
            self.comm.recv(source=self.MPI.ANY_SOURCE, tag=_STOP)
        self.released = True

    def stop_interrupted(self) -> bool:
        """After this rank cleaned up from a signal: wait up to INTERRUPT_GRACE_S
        for every rank to get here too (mpiexec forwards SIGINT and SIGTERM to
        all ranks). True if they all did, and every rank may leave; False if
        not, and the caller must abort the job."""
        for signum in _STOP_SIGNALS:  # a second one must not cut the wait
            signal.signal(signum, signal.SIG_IGN)
        request = self.exit_comm.Ibarrier()
        deadline = time.monotonic() + INTERRUPT_GRACE_S
        while time.monotonic() < deadline:
            if request.Test():
                self.released = True
                return True
            time.sleep(POLL_S)
        return False

    def abort(self, code: int, message: str) -> None:
        """End the whole job from this rank: say why on this rank's stderr, then
        MPI_Abort, with which the launcher kills every rank (and, under Hydra,
        their process groups with them)."""
        print(f"writerprof repro: rank {self.rank}: {message}; aborting the MPI job",
              file=sys.stderr, flush=True)
        sys.stdout.flush()
        self.MPI.COMM_WORLD.Abort(code)
        os._exit(code)  # not reached: Abort does not return
