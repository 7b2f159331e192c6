"""Journal lines of the synthetic processes, as the probe writes them: the
identity, hook outcomes, the probe's activation, shared-memory buffers and
their placement, exit; and the names (interpreter, argv, hook specs) a
recording of the reproducer has."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe.numa import sample_stride
from writerprof.probes.writerprof_probe.specs import BUILT_IN
from writerprof.synthetic.timeline import ACTIVATE_NS, MS, US

PAGE_SIZE = 4096

PYTHON = "/opt/venv/bin/python3"
SITE = "/opt/venv/lib/python3.11/site-packages"
MAIN_PATH = f"{SITE}/writerprof/repro/main.py"
TARGET = "writerprof.repro.writer.run_writer"
COMM = "python3"  # the producer's name as the kernel has it (its threads' too, unless named)
POOL_THREAD = "tokio-runtime-w"  # a native pool's thread (Scenario.fork_threads), as the kernel truncates its name
FORKSERVER_ARGV = [PYTHON, "-B", "-c", "from multiprocessing.forkserver import main; main(18, 19, "
                   f"['__main__'], **{{'sys_path': ['/opt/venv/bin', '{SITE}']}})"]
TRACKER_ARGV = [PYTHON, "-B", "-c", "from multiprocessing.resource_tracker import main;main(7)"]
SPAWN_ARGV = [PYTHON, "-B", "-c", "from multiprocessing.spawn import spawn_main; "
              "spawn_main(tracker_fd=8, pipe_handle=20)", "--multiprocessing-fork"]
WRITER_ROLE = {"fork": "fork_child", "forkserver": "forkserver_child", "spawn": "spawn_child"}

OS_HOOKS = ("os:write=write", "os:pwrite=write", "os:writev=write", "os:fsync=fsync",
            "os:fdatasync=fsync", "os:posix_fadvise=fadvise", "os:close=close")
# Modules the probe hooks as a whole (its mp and shm hooks); every other
# module's hooks are the probe's built-in specs on it.
_WHOLE_MODULE_HOOKS = {"multiprocessing.process", "multiprocessing.spawn", "multiprocessing.shared_memory"}


def _hook_specs(modules) -> tuple[str, ...]:
    """The specs of the hook events as `modules` are imported, in that order."""
    specs = []
    for module in modules:
        if module in _WHOLE_MODULE_HOOKS:
            specs.append(module)
        else:
            specs += [spec for spec in BUILT_IN if spec.partition(":")[0] == module]
    return tuple(specs)


# In the order the reproducer's producer, a started daemon and a writer import them.
PRODUCER_HOOKS = _hook_specs(("multiprocessing.process", "writerprof.repro.generators", "multiprocessing.spawn",
                              "multiprocessing.shared_memory", "writerprof.repro.writer",
                              "writerprof.repro.save"))
DAEMON_HOOKS = _hook_specs(("multiprocessing.process", "multiprocessing.spawn"))
WRITER_IMPORT_HOOKS = _hook_specs(("multiprocessing.shared_memory", "writerprof.repro.writer"))


def text(lines) -> str:
    """Event lines: dicts, or lines already formatted."""
    return "".join(e if isinstance(e, str) else json.dumps(e) + "\n" for e in lines)


def append(events_file: Path, lines) -> None:
    """Append a process's journal lines: events (as text takes them) to its
    events file, buffer records ((kind, bytes): Buffers) to their files."""
    records: dict[str, list[bytes]] = {}
    for line in lines:
        if isinstance(line, tuple):
            records.setdefault(line[0], []).append(line[1])
    with open(events_file, "a") as f:
        f.write(text(line for line in lines if not isinstance(line, tuple)))
    base = str(events_file)[:-len(journal.EVENTS_SUFFIX)]
    for kind, data in records.items():
        with open(base + journal.RECORD_SUFFIXES[kind], "ab") as f:
            f.write(b"".join(data))


def identity(host, rank, *, t, pid, ppid, created, via, forked_from, role, argv, affinity) -> dict:
    """A process's first line; its clock anchor is read a little after its start."""
    mono = t + (15 * MS if via == "exec" else 150 * US)
    return dict(t_ns=t, schema=journal.SCHEMA, pid=pid, ppid=ppid, host=host.name, argv=argv, executable=PYTHON,
                python="3.11.9", implementation="cpython", created_ns=created, created_via=via,
                forked_from=forked_from, role=role, wall_ns=host.wall(mono), mono_ns=mono,
                env=rank.env, affinity=list(affinity), **rank.who, kind="process")


def hooks(specs, t0, step) -> list[str]:
    # The frequent events are formatted as json.dumps would, for speed.
    return [f'{{"spec": "{spec}", "status": "applied", "reason": null, "kind": "hook", '
            f'"t_ns": {t0 + i * step}}}\n' for i, spec in enumerate(specs)]


def activation(ident_t) -> list:
    """Events of an exec'd process's probe coming up: hooks, then the activated span."""
    end = ident_t + ACTIVATE_NS
    return hooks(OS_HOOKS, end - 400 * US, 12 * US) + [
        {"start_ns": ident_t, "end_ns": end, "kind": "activated", "t_ns": end + 1 * US}]


def exit_event(via, code, t, *, utime_s, stime_s, minflt, majflt, nvcsw, nivcsw, maxrss_kb) -> dict:
    return {"via": via, "code": code, "rusage": {
        "utime_s": utime_s, "stime_s": stime_s, "minflt": minflt, "majflt": majflt, "nvcsw": nvcsw,
        "nivcsw": nivcsw, "maxrss_kb": maxrss_kb}, "kind": "exit", "t_ns": t}


class Buffers:
    """A save's shared-memory buffers (every save's alike): their size in
    pages, the pages the probe's placement reads sample, their names, and
    their SHM and PLACEMENT records."""

    def __init__(self, host_name: str, chunk_size: int, count: int):
        self.host_name, self.size, self.count = host_name, chunk_size, count
        self.pages = -(-chunk_size // PAGE_SIZE)
        self.stride = sample_stride(self.pages)
        self.sampled_pages = -(-self.pages // self.stride)

    def names(self, rank: int, save: int) -> list[str]:
        return ["psm_%08x" % zlib.crc32(f"{self.host_name}/{rank}/{save}/{b}".encode())
                for b in range(self.count)]

    def below(self, top: int) -> list[int]:
        """Start addresses of the buffers mapped one under the other below `top`."""
        return [top - (b + 1) * self.pages * PAGE_SIZE for b in range(self.count)]

    def placement(self, name, index, when, t, node=None):
        sampled = self.sampled_pages
        nodes, unfaulted = ({str(node): sampled}, 0) if node is not None else ({}, sampled)
        return _record("placement", t, dict(name=name, index=index, when=when, source="move_pages", pages=self.pages,
                                            sampled=sampled, stride=self.stride, nodes=nodes, unfaulted=unfaulted))

    def shm(self, op, name, index, start, t):
        return _record("shm", t, dict(op=op, name=name, size=self.size, index=index, start=start,
                                      end=start + self.pages * PAGE_SIZE))


def _record(kind: str, t: int, fields: dict):
    """A buffer event as the probe journals it: its record, (kind, bytes),
    or the event itself where it does not fit one."""
    data = journal.record(kind, t, fields)
    return (kind, data) if data is not None else {**fields, "kind": kind, "t_ns": t}
