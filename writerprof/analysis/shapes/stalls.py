"""The summary's "stalls" section (writerprof.analysis.stalls): what each
stall snapshot of record --stall says."""

from __future__ import annotations

from typing import Any, TypedDict


class StallThread(TypedDict):
    tid: int
    name: str | None  # Python's name of it, else the kernel's (comm)
    state: str | None  # the kernel's: R, S, D, T, ...
    cpu_share: float | None  # of a CPU over the snapshot's window (None: it started within it)
    runnable_share: float | None  # on a CPU or waiting on a run queue for one, of the window
    spins: bool  # runnable_share >= stalls.SPIN_SHARE
    syscall: str | int | None  # the system call it was in, by name where known (None: running)
    wchan: str | None  # where in the kernel it slept
    waits_on: str | None  # what it waited on, in words (None: it spins, runs, or nothing says)
    wait_kind: str | None  # stalls.QUEUE_GET ... stalls.KERNEL
    where: str | None  # its innermost frame of the program's own, "function (file:line)"
    frames: list[str]  # its Python stack, innermost first (stalls.MAX_FRAMES at most; [] for none)


class StallProcess(TypedDict):
    pid: int
    id: int | None  # its row in processes (None: not probed)
    role: str | None  # as in processes
    journal_role: str | None  # its journal's: main, fork_child, forkserver_child, ...
    rank: int | None
    parent: int | None  # the row of the probed process that started it
    ppid: int | None
    comm: str | None
    state: str | None
    cpu_share: float  # its threads' summed
    runnable_share: float  # its most runnable thread's
    spins: bool
    spinning_threads: list[int]
    waits_on: str | None  # its waiting thread's (the main thread's, where that waits)
    wait_kind: str | None
    where: str | None
    waiting_thread: int | None
    named: bool  # in the report's lines: it spins, or waits and is probed and no daemon (which waits by design)
    stack_error: str | None  # why py-spy took no stack of it
    last_op: dict[str, Any] | None  # its last queue, semaphore or shared-memory operation journaled before
    threads: list[StallThread]
    on: list[dict[str, Any]]  # who is on the other side: pid, how ("fed by", "for the end of", ...), threads


class StallSnapshot(TypedDict):
    host: str
    at_s: float  # when the stall was found
    stalled_s: float  # since the host's last progress
    stall_s: float | None  # record --stall's time
    stacks_error: str | None  # why no Python stacks were taken
    processes: list[StallProcess]
    deadlocks: list[list[int]]  # cycles of waits, by pid
    spinning: list[int]  # pids
    says: list[str]  # a line per deadlock, then per process named


class Stalls(TypedDict):
    stall_s: float | None  # record --stall's time; 0: off; None: not recorded (a run from before it)
    snapshots: list[StallSnapshot]
    losses: list[str]  # what of stalls.jsonl could not be read
