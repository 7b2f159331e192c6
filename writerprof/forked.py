"""Work done in a forked process, its result sent back pickled (or
marshalled) over a pipe: for the caller to use another CPU (the report's
figures, a large run's journals and chunk records, two parts of a large
run's analysis, a large run's parts shared out one at a time). A worker
that fails or cannot be forked gives no result, and the caller does the
work itself."""

from __future__ import annotations

import os
import pickle
import signal
import threading

LOADAVG = "/proc/loadavg"  # its 4th field: the tasks runnable now / all tasks


def free_cpus() -> int:
    """CPUs of this process's affinity that no other task wants now."""
    return max(0, round(len(os.sched_getaffinity(0)) - _others_runnable()))


def _others_runnable() -> float:
    """The other tasks runnable at this instant; where that is not known, the
    load average. Not the load average first: it lags a minute, so a report
    run just after another would count the one before as load."""
    try:
        with open(LOADAVG) as source:
            return int(source.read().split()[3].split("/")[0]) - 1  # this process is one of them
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0]


def spare_cpu() -> bool:
    """Would a worker forked now have a CPU of its own (this process has
    one)? Else it would only queue beside this process, and its
    copy-on-write faults cost more than it saves. Only in a process of one
    thread: a child has only the thread that forked, another's locks stay
    locked in it (a notebook's kernel has several)."""
    return hasattr(os, "fork") and threading.active_count() == 1 and free_cpus() >= 2


def fork(child) -> tuple[int, int] | None:
    """(pid, read end) of a process that runs child() -> bytes, writes them
    to the pipe and leaves without the parent's exit handlers; None if it
    could not be forked."""
    if not hasattr(os, "fork"):
        return None
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:
        status = 1
        try:
            os.close(read_end)
            write_all(write_end, child())
            status = 0
        except BaseException:  # noqa: BLE001 (the caller does the work instead)
            pass
        finally:
            os._exit(status)
    os.close(write_end)
    return pid, read_end


def collect(pid: int, read_end: int, default=None, loads=pickle.loads):
    """A worker's result (loads of what it sent; default if it failed), its
    pipe closed and the worker reaped (killed first if this process is
    interrupted while it waits)."""
    try:
        data = read_all(read_end)
    except BaseException:
        end(pid)
        raise
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        return default
    try:
        return loads(data)
    except Exception:  # noqa: BLE001 (cut short: done here instead)
        return default


def discard(pid: int, read_end: int) -> None:
    """End a worker whose result will not be collected (the caller failed)."""
    os.close(read_end)
    end(pid)


def end(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def dumps(value) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def read_all(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as source:
        return source.read()


def write_all(fd: int, data: bytes) -> None:
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def beside(child, parent) -> tuple:
    """(child(), parent()), child() run in a forked worker while parent()
    runs here. Where the fork fails, or the worker does, child() runs here
    after parent(): its exception, if it raises again, is then this process's."""
    worker = fork(lambda: dumps(child()))
    if worker is None:
        return in_turn(child, parent)
    try:
        mine = parent()
    except BaseException:
        discard(*worker)
        raise
    done = collect(*worker, default=_FAILED)
    return (child() if done is _FAILED else done), mine


_FAILED = object()  # collect's default: a worker's result may be None


def in_turn(child, parent) -> tuple:
    """(child(), parent()) in this process: beside's results, where a fork does not pay."""
    return child(), parent()


# Items shared out through a pipe of their numbers, 4 bytes each, written
# whole before the fork in one write that cannot block: as many as fit in
# PIPE_BUF (4 KiB, a pipe's least room: a user over their pipe quota gets that).
SHARED_ITEMS = 1024


def shared(count: int, each, first, fork_worker: bool = True) -> tuple[list, object]:
    """([each(0), ..., each(count - 1)], first()), the items taken one at a
    time, in order, by a forked worker and, once first() is done, by this
    process too: each takes the next item not taken yet, so both end
    together (to within an item) whatever first() costs. A static split
    left one waiting for the other by seconds where first()'s cost moved
    with the machine. Without a fork (fork_worker false, a fork that fails,
    too many items) all is done here; items the worker took and did not
    send back (it failed) are done here after the rest."""
    worker = _sharing(count, each) if fork_worker and count <= SHARED_ITEMS else None
    if worker is None:
        return [each(i) for i in range(count)], first()
    pid, read_end, numbers = worker
    try:
        mine = first()
        done = dict(_taken(numbers, each))
    except BaseException:
        os.close(numbers)
        discard(pid, read_end)
        raise
    os.close(numbers)
    done.update(collect(pid, read_end, default=()))
    return [done[i] if i in done else each(i) for i in range(count)], mine


def _sharing(count: int, each) -> tuple[int, int, int] | None:
    """(pid, result pipe, numbers pipe) of a worker taking items; None if it could not be forked."""
    numbers, write_end = os.pipe()
    try:
        os.write(write_end, b"".join(i.to_bytes(4, "little") for i in range(count)))
    finally:
        os.close(write_end)  # before the fork: the last number read, both see the end
    worker = fork(lambda: dumps(_taken(numbers, each)))
    if worker is None:
        os.close(numbers)
        return None
    return (*worker, numbers)


def _taken(numbers: int, each) -> list[tuple[int, object]]:
    """(i, each(i)) of the items taken from the numbers pipe until it is
    empty (a read of 4 bytes from a pipe takes 4, whole, or none)."""
    out = []
    while number := os.read(numbers, 4):
        i = int.from_bytes(number, "little")
        out.append((i, each(i)))
    return out
