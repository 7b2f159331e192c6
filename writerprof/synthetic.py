"""Synthetic run directories, for tests and benchmarks of the analysis: the
files `writerprof record` and the probe write (run.json, per host
topology.json, samples.bin, sampled.jsonl and one journal pair per process),
made from a model of the reproducer's pipeline instead of a measurement.
run.json says so: "synthetic": true, and the scenario it was made from.

The model is a small deterministic discrete simulation, vectorised over the
ranks of a host, one save at a time. Per rank a producer (an exec'd "main"
process with its MPI rank) runs `saves` saves; each save creates `buffers`
shared-memory buffers, starts one writer (fork, forkserver or spawn, with the
start-up each method has), fills a buffer per chunk (`gen`) and queues it
(`put`, blocked while `buffers` chunks are queued); the writer attaches the
buffers, takes each chunk (`get`, blocked while none is queued), writes it,
fsyncs, closes and leaves with os._exit. The sampler's view (a record per
live process per interval, first sight, affinity, numa_maps, gone) is derived
from the same timeline. Each host has its own CLOCK_MONOTONIC, as real hosts
do; the identity's wall_ns/mono_ns anchor relates it to wall time.

    from writerprof.synthetic import Scenario, write_run
    write_run("RUN", Scenario(start_method="forkserver", main_rerun_s=0.8))
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Mapping

import numpy as np

import writerprof
from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe.numa import sample_stride
from writerprof.record.sampler import NUMA_MAPS_EVERY_NS
from writerprof.run import layout
from writerprof.run import topology as topology_module
from writerprof.run.load import CHUNK_DTYPE, SAMPLE_DTYPE, RunDirectoryError
from writerprof.units import format_cpu_list, parse_cpu_list

START_METHODS = ("fork", "forkserver", "spawn")
PAGE_SIZE = 4096
MIB = 1 << 20

_US, _MS, _S = 1_000, 1_000_000, 1_000_000_000
_CLK_TICK_NS = 10_000_000  # /proc times and start times count in 100 Hz clock ticks
# The pipeline's own machinery, measured on the reproducer; not knobs.
_LAUNCH_NS = 20 * _MS  # recording start to a rank's exec
_INTERPRETER_NS = 40 * _MS  # exec to the probe's first line
_ACTIVATE_NS = 20 * _MS  # the probe's own start-up
_IMPORTS_NS = 150 * _MS  # activation to the first save (the reproducer's imports)
_TRACKER_LAUNCH_NS = 5 * _MS  # the first SharedMemory starts the resource tracker
_FORKSERVER_LAUNCH_NS = 65 * _MS  # the first forkserver start() starts the daemon
_SHM_CREATE_NS, _PLACEMENT_NS = 350 * _US, 150 * _US
_PUT_MIN_NS, _GET_MIN_NS = 40 * _US, 50 * _US  # an unblocked put / get
_QUEUE_LATENCY_NS = 80 * _US  # put returned -> the item readable in the writer
_WAKE_NS = 60 * _US  # a get freed a slot -> the blocked put returns
_GAP_NS = 50 * _US  # between consecutive hooked calls of a thread
_CLOSE_NS = 15 * _US
_CLEANUP_PLACEMENT_NS = 1 * _MS  # the producer's unlink + close + move_pages, per buffer
_BETWEEN_SAVES_NS = 20 * _MS  # results printed, file removed
_EXIT_AFTER_NS = 30 * _MS  # last save -> the producer's exit; its daemons follow
_FIRST_SAMPLE_NS = 25 * _MS
_DEFAULT_START_S = {"fork": 0.002, "forkserver": 0.0015, "spawn": 0.004}

_PYTHON = "/opt/venv/bin/python3"
_EXE = "/usr/lib/python3.11/bin/python3.11"
_SITE = "/opt/venv/lib/python3.11/site-packages"
_MAIN_PATH = f"{_SITE}/writerprof/repro/main.py"
_TARGET = "writerprof.repro.writer.run_writer"
_FORKSERVER_ARGV = [_PYTHON, "-B", "-c", "from multiprocessing.forkserver import main; main(18, 19, "
                    f"['__main__'], **{{'sys_path': ['/opt/venv/bin', '{_SITE}']}})"]
_TRACKER_ARGV = [_PYTHON, "-B", "-c", "from multiprocessing.resource_tracker import main;main(7)"]
_SPAWN_ARGV = [_PYTHON, "-B", "-c", "from multiprocessing.spawn import spawn_main; "
               "spawn_main(tracker_fd=8, pipe_handle=20)", "--multiprocessing-fork"]
_OS_HOOKS = ("os:write=write", "os:pwrite=write", "os:writev=write", "os:fsync=fsync",
             "os:fdatasync=fsync", "os:posix_fadvise=fadvise", "os:close=close")
_PRODUCER_HOOKS = (
    "multiprocessing.process", "writerprof.repro.generators:FastGenerator.fill=gen",
    "writerprof.repro.generators:RandomGenerator.fill=gen",
    "writerprof.repro.generators:DgenGenerator.fill=gen", "multiprocessing.spawn",
    "multiprocessing.shared_memory", "writerprof.repro.writer:next_chunk=get",
    "writerprof.repro.writer:run_writer=writer", "writerprof.repro.save:_Save._put=put",
    "writerprof.repro.save:run_save=save")
_WRITER_IMPORT_HOOKS = ("multiprocessing.shared_memory", "writerprof.repro.writer:next_chunk=get",
                        "writerprof.repro.writer:run_writer=writer")
_PHASE = journal.PHASES
_WRITER_ROLE = {"fork": "fork_child", "forkserver": "forkserver_child", "spawn": "spawn_child"}
# Order of a rank's processes within a sampler tick.
_PRODUCER, _TRACKER, _DAEMON, _WRITER = range(4)


def _cpus(value) -> tuple[int, ...] | None:
    if value is None:
        return None
    cpus = parse_cpu_list(value) if isinstance(value, str) else value
    return tuple(sorted({int(cpu) for cpu in cpus}))


@dataclass(frozen=True)
class Scenario:
    """What to simulate. Times in seconds; CPU masks as CPU lists ("0-3,8")
    or iterables of CPUs; nodes by number. `overrides` maps (rank, save) to
    field changes for that save (saves count from 0), (rank, None) to changes
    for every save of that rank."""

    # Shape of the run
    hosts: int = 1
    ranks_per_host: int = 2
    saves: int = 3
    chunks_per_save: int = 32
    chunk_size: int = 32 * MIB
    buffers: int = 4  # shared-memory buffers per save, and the queue's maxsize
    start_method: str = "fork"
    # The machine (every host alike): `nodes` x `cpus_per_node`, with SMT
    # sibling numbering as Linux does it; or a topology snapshot dict.
    nodes: int = 2
    cpus_per_node: int = 8
    smt: bool = True
    topology: dict | None = None
    # Per chunk, per save
    gen_s: float = 0.010  # one gen call, once its buffer's pages are in
    write_s: float = 0.020  # one os.write of a chunk, from a buffer on the writer's node
    fsync_s: float = 0.300
    jitter: float = 0.0  # relative spread (lognormal sigma) of gen and write times
    seed: int = 0
    # Writer start-up. start_s: Process.start() in the producer (None: 2 ms
    # fork, 1.5 ms forkserver, 4 ms spawn); main_rerun_s and unpickle_s:
    # forkserver and spawn only (re-running the parent's __main__, unpickling
    # the Process, which imports the target's module); target_setup_s: the
    # target's first line to its first get (attaching the buffers).
    start_s: float | None = None
    main_rerun_s: float = 0.020
    unpickle_s: float = 0.012
    target_setup_s: float = 0.003
    # Placement. writer_cpus_inherited: the mask a writer starts with (None:
    # the producer's; under forkserver the daemon's, frozen when it started);
    # writer_cpus: the mask the writer pins itself to at its target's start
    # (None: it keeps the inherited one); writer_run_node: where the writer
    # runs (None: buffer_node if its mask allows); migrate_to_node: the writer
    # moves there halfway through each save's chunks; remote_factor: write_s
    # multiplier for a write whose CPU is on another node than the buffers.
    producer_cpus: tuple[int, ...] | None = None  # the producer's allowed CPUs; None: all
    writer_cpus_inherited: tuple[int, ...] | None = None
    writer_cpus: tuple[int, ...] | None = None
    buffer_node: int = 0  # node of the buffers' pages (where they were first touched)
    writer_run_node: int | None = None
    migrate_to_node: int | None = None
    remote_factor: float = 1.0
    # Faults and contention. fault_s: the cost of a minor fault, added to the
    # call that takes it (first touch included); fork_threads: native threads
    # alive at each fork (an extension's pool; None: from gen_threads).
    faults_per_chunk: int = 0  # extra minor faults in every write (a fault storm)
    fault_s: float = 1e-6
    gen_threads: int = 0  # the producer's generator threads (started at its first fill)
    fork_threads: int | None = None
    involuntary_per_s: float = 20.0  # involuntary context switches a second, per producer and writer
    # The sampler
    interval_s: float = 0.05
    overrides: Mapping = field(default_factory=dict)

    def __post_init__(self):
        for name in ("producer_cpus", "writer_cpus_inherited", "writer_cpus"):
            object.__setattr__(self, name, _cpus(getattr(self, name)))
        if self.start_method not in START_METHODS:
            raise ValueError(f"start_method {self.start_method!r}: one of {', '.join(START_METHODS)}")
        for name in ("hosts", "ranks_per_host", "saves", "chunks_per_save", "chunk_size", "buffers",
                     "nodes", "cpus_per_node"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.smt and self.cpus_per_node % 2:
            raise ValueError("smt needs an even cpus_per_node (two threads per core)")
        for name in ("gen_s", "write_s", "fsync_s", "jitter", "main_rerun_s", "unpickle_s",
                     "target_setup_s", "fault_s", "involuntary_per_s", "faults_per_chunk", "gen_threads"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.fork_threads is not None and self.fork_threads < 1:
            raise ValueError("fork_threads must be at least 1 (the forking thread)")
        if self.interval_s <= 0 or self.remote_factor <= 0 or (self.start_s is not None and self.start_s <= 0):
            raise ValueError("interval_s, remote_factor and start_s must be positive")
        for key, changes in self.overrides.items():
            if not (isinstance(key, tuple) and len(key) == 2 and 0 <= key[0] < self.hosts * self.ranks_per_host
                    and (key[1] is None or 0 <= key[1] < self.saves)):
                raise ValueError(f"overrides key {key!r}: (rank, save) or (rank, None) of this run's "
                                 f"ranks and saves (counted from 0)")
            allowed = _SAVE_FIELDS | (_RANK_FIELDS if key[1] is None else set())
            wrong = set(changes) - allowed
            if wrong:
                raise ValueError(f"overrides {key!r}: {', '.join(sorted(wrong))} cannot change "
                                 f"{'per rank' if key[1] is None else 'per save'}")

    def for_rank(self, rank: int) -> Scenario:
        changes = self.overrides.get((rank, None))
        return replace(self, overrides={}, **changes) if changes else self

    def jsonable(self) -> dict:
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "overrides":
                value = [{"rank": r, "save": s, "set": dict(c)} for (r, s), c in value.items()]
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out


_RANK_FIELDS = {"producer_cpus", "writer_cpus_inherited", "gen_threads", "fork_threads",
                "involuntary_per_s"}
_SAVE_FIELDS = {"gen_s", "write_s", "fsync_s", "jitter", "start_s", "main_rerun_s", "unpickle_s",
                "target_setup_s", "writer_cpus", "buffer_node", "writer_run_node", "migrate_to_node",
                "remote_factor", "faults_per_chunk", "fault_s"}


def make_topology(nodes: int = 2, cpus_per_node: int = 8, smt: bool = True) -> dict:
    """A writerprof.record.topology.snapshot() of a machine with one package per node:
    with smt, cpu N and N + nodes*cores are siblings, as Linux numbers them
    (2 x 8 with smt is the tests' numa2 fixture)."""
    threads = 2 if smt else 1
    cores = cpus_per_node // threads
    where = {thread * nodes * cores + node * cores + core: (node, core)
             for thread in range(threads) for node in range(nodes) for core in range(cores)}
    online = sorted(where)
    siblings = {(node, core): sorted(c for c, w in where.items() if w == (node, core))
                for node, core in set(where.values())}
    return {
        "schema": topology_module.SCHEMA,
        "numa": True,
        "nodes": {str(node): {"cpus": sorted(c for c, w in where.items() if w[0] == node),
                              "distances": {str(other): 10 if other == node else 21 for other in range(nodes)},
                              "memory_total_bytes": 32 << 30, "memory_free_bytes": 30 << 30}
                  for node in range(nodes)},
        "cpus": {str(cpu): {"node": where[cpu][0], "package": where[cpu][0], "core": where[cpu][1],
                            "siblings": siblings[where[cpu]]} for cpu in online},
        "online_cpus": online,
        "cpu_model": "Synthetic CPU (writerprof.synthetic)",
        "smt": smt,
    }


def write_run(path, scenario: Scenario | None = None) -> Path:
    """Write the run directory of `scenario` at `path` (new or empty)."""
    sc = scenario or Scenario()
    path = Path(path)
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise RunDirectoryError(f"{path}: exists and is not an empty directory")
    path.mkdir(parents=True, exist_ok=True)
    topo = sc.topology or make_topology(sc.nodes, sc.cpus_per_node, sc.smt)
    machine = _Machine(topo)
    last = 0
    for host in range(sc.hosts):
        last = max(last, _Host(sc, machine, path, host).write())
    defaults = Scenario()
    command = ["writerprof-synthetic"] + [
        f"--{f.name.replace('_', '-')}={_arg(getattr(sc, f.name))}" for f in fields(sc)
        if f.name not in ("topology", "overrides") and getattr(sc, f.name) != getattr(defaults, f.name)]
    meta = {
        "format": layout.FORMAT, "schema": layout.SCHEMA, "writerprof_version": writerprof.__version__,
        "command": command, "cwd": "/synthetic", "host": _host_name(0),
        "started_wall_ns": _WALL_BASE, "started_ns": _clock_base(0),
        "ended_ns": _clock_base(0) + last + 40 * _MS, "exit_status": 0, "ended_by": "exit",
        "signal": None, "interval_ns": _ns(sc.interval_s), "sampler": True, "probes": [], "env": {},
        "what_if": {}, "synthetic": True, "scenario": sc.jsonable(),
    }
    (path / layout.RUN_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return path


# --- the machine -----------------------------------------------------------------

_WALL_BASE = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z


def _clock_base(host: int) -> int:
    """The host's CLOCK_MONOTONIC when the recording started: each host booted at its own time."""
    return 90_000 * _S + host * 3_600_123_456_789


def _arg(value) -> str:
    return format_cpu_list(value) if isinstance(value, tuple) else str(value)


def _host_name(host: int) -> str:
    return f"host{host}"


def _ns(seconds: float) -> int:
    return int(round(seconds * _S))


class _Machine:
    def __init__(self, topo: dict):
        self.topology = topo
        self.node_of = topology_module.cpu_nodes(topo)
        self.online = tuple(sorted(int(c) for c in topo["cpus"]))
        self.node_cpus = {int(n): tuple(info["cpus"]) for n, info in topo["nodes"].items()}

    def mask(self, cpus, what: str) -> tuple[int, ...]:
        if cpus is None:
            return self.online
        outside = set(cpus) - set(self.online)
        if outside or not cpus:
            raise ValueError(f"{what} {format_cpu_list(cpus) or '(empty)'}: not within the online "
                             f"CPUs {format_cpu_list(self.online)}")
        return tuple(cpus)

    def on_node(self, mask, node: int, what: str) -> tuple[int, ...]:
        if node not in self.node_cpus:
            raise ValueError(f"{what} node {node}: the machine has nodes {sorted(self.node_cpus)}")
        cpus = tuple(c for c in mask if self.node_of.get(c) == node)
        if not cpus:
            raise ValueError(f"{what} node {node}: none of CPUs {format_cpu_list(mask)} is on it")
        return cpus

    def pick(self, mask, node: int | None, k: int) -> int:
        """A CPU of `mask`, on `node` where the mask has one there."""
        cpus = [c for c in mask if self.node_of.get(c) == node] or list(mask)
        return cpus[k % len(cpus)]


# --- counters over time ----------------------------------------------------------

def _busy(starts, ends, t):
    """Time spent inside the sorted, disjoint intervals up to each of t."""
    if len(starts) == 0:
        return np.zeros(len(t), np.int64)
    length = ends - starts
    done = np.concatenate(([0], np.cumsum(length)))
    k = np.searchsorted(ends, t, side="right")
    kk = np.minimum(k, len(starts) - 1)  # the interval in progress, if any
    part = np.minimum(np.maximum(t - starts[kk], 0), length[kk])
    return done[k] + np.where(k < len(starts), part, 0)


def _step(times, values, t):
    """Sum of the values whose time is at or before each of t (times sorted)."""
    total = np.concatenate(([0], np.cumsum(values, dtype=np.int64)))
    return total[np.searchsorted(times, t, side="right")]


def _text(lines) -> str:
    """Event lines: dicts, or lines already formatted."""
    return "".join(e if isinstance(e, str) else json.dumps(e) + "\n" for e in lines)


def _ticks_floor(ns):
    return ns // _CLK_TICK_NS * _CLK_TICK_NS


# --- the sampler's files -----------------------------------------------------------

class _Records:
    """sampled.jsonl records, kept as their lines until they are sorted."""

    def __init__(self):
        self.lines: list[tuple] = []  # (t_ns, slot in the tick, order, line)

    def last(self) -> int:
        return max((r[0] for r in self.lines), default=0)

    def write(self, path: Path):
        self.lines.sort(key=lambda r: r[:3])
        with open(path, "w") as f:
            f.writelines(r[3] for r in self.lines)
        self.lines = []

    def append(self, record: tuple):
        t, slot, order, data = record
        kind = data["kind"]
        # The many small ones formatted as json.dumps would, for speed.
        if kind == "numa_maps":
            pages = data["pages"]
            pages = "{" + ", ".join(f'"{n}": {c}' for n, c in pages.items()) + "}"
            line = (f'{{"kind": "numa_maps", "t_ns": {t}, "pid": {data["pid"]}, "address": {data["address"]}, '
                    f'"file": "{data["file"]}", "pages": {pages}, "huge": false}}\n')
        elif kind == "gone":
            line = f'{{"kind": "gone", "t_ns": {t}, "pid": {data["pid"]}}}\n'
        elif kind == "affinity":
            line = f'{{"kind": "affinity", "t_ns": {t}, "pid": {data["pid"]}, "cpus": "{data["cpus"]}"}}\n'
        else:
            line = json.dumps(data) + "\n"
        self.lines.append((t, slot, order, line))


class _Spool:
    """samples.bin in time order, as the sampler appends it, without holding
    a host's samples: they go to a temporary file per window of ticks, and
    each window is sorted alone at the end."""

    WINDOW_TICKS = 64
    MAX_PENDING = 1 << 18  # samples held before they are spooled (24 MiB)

    def __init__(self, directory: Path, tick0: int, interval: int):
        self.directory, self.tick0 = directory, tick0
        self.window_ns = interval * self.WINDOW_TICKS
        self.files: dict[int, object] = {}
        self.pending: list[np.ndarray] = []
        self.pending_count = 0

    def _file(self, window: int):
        f = self.files.get(window)
        if f is None:
            f = self.files[window] = open(self.directory / f".samples.{window}.tmp", "wb")
        return f

    def add(self, samples: np.ndarray):
        self.pending.append(samples)
        self.pending_count += len(samples)
        if self.pending_count > self.MAX_PENDING:
            self.flush()

    def flush(self):
        """Spool what was added (a save's worth), a write per window."""
        if not self.pending:
            return
        samples = np.concatenate(self.pending)
        self.pending, self.pending_count = [], 0
        windows = (samples["t_ns"] - self.tick0) // self.window_ns
        order = np.argsort(windows, kind="stable")
        samples, windows = samples[order], windows[order]
        cuts = np.flatnonzero(np.diff(windows)) + 1
        for start, end in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [len(samples)]))):
            samples[start:end].tofile(self._file(int(windows[start])))

    def finish(self, path: Path):
        self.flush()
        with open(path, "wb") as out:
            for window in sorted(self.files):
                f = self.files.pop(window)
                f.close()
                part = np.fromfile(f.name, dtype=SAMPLE_DTYPE)
                part[np.argsort(part["t_ns"], kind="stable")].tofile(out)
                Path(f.name).unlink()


# --- one host --------------------------------------------------------------------

class _Rank:
    """A rank's processes and what carries from one save to the next."""

    def __init__(self, host: _Host, local: int):
        sc = host.sc
        self.local = local
        self.rank = host.index * sc.ranks_per_host + local
        self.overrides = sc.overrides
        self.sc = replace(sc.for_rank(self.rank), overrides={}) if sc.overrides else sc
        m = host.machine
        self.producer_mask = m.mask(self.sc.producer_cpus, f"rank {self.rank} producer_cpus")
        inherited = self.sc.writer_cpus_inherited
        if inherited is not None and sc.start_method != "forkserver" and tuple(inherited) != self.producer_mask:
            raise ValueError(f"rank {self.rank}: under {sc.start_method} a writer inherits the "
                             f"producer's mask; writer_cpus_inherited differs only under forkserver")
        self.daemon_mask = m.mask(inherited, f"rank {self.rank} writer_cpus_inherited") \
            if inherited is not None else self.producer_mask
        world = sc.hosts * sc.ranks_per_host
        self.env = {"OMPI_COMM_WORLD_LOCAL_RANK": str(local),
                    "OMPI_COMM_WORLD_LOCAL_SIZE": str(sc.ranks_per_host), "OMPI_COMM_WORLD_RANK": str(self.rank), "OMPI_COMM_WORLD_SIZE": str(world),
                    "PYTHONPATH": f"{_SITE}/writerprof/probes", "PYTHONUNBUFFERED": "1"}
        self.who = {"rank": self.rank, "local_rank": local, "world_size": world, "source": "openmpi"}
        self.argv = [_PYTHON, "/opt/venv/bin/writerprof", "repro", "--saves", str(sc.saves), "--size",
                     str(sc.chunks_per_save * sc.chunk_size), "--chunk-size", str(sc.chunk_size),
                     "--buffers", str(sc.buffers), "--start-method", sc.start_method]
        self.exec_t = host.base + _LAUNCH_NS + local * 3 * _MS
        self.created = host.tick_round(self.exec_t)
        self.ident_t = self.exec_t + _INTERPRETER_NS
        self.first_save = self.ident_t + _ACTIVATE_NS + _IMPORTS_NS
        self.pid = 0
        self.tracker_pid = self.daemon_pid = 0
        self.tracker = self.daemon = None  # (exec_t, created, ident_t) once started
        self.daemon_forks: list[int] = []
        self.reaped: list[tuple[int, int]] = []  # the daemon's reaped writers: (time, bytes written)
        # The producer's counters at the end of its last sampled segment.
        self.carry = dict(utime=0, stime=0, vol=0, minflt=0, wbytes=0)
        self.sample_from = self.exec_t
        self.numa_read = None  # when the sampler next reads its numa_maps
        self.mappings: list[tuple] = []  # its shared-memory mappings, for numa_maps
        self.numa_seen: dict[int, tuple] = {}
        self.exit_t = 0

    def save_scenario(self, save: int) -> Scenario:
        changes = self.overrides.get((self.rank, save))
        return replace(self.sc, **changes) if changes else self.sc


class _Host:
    def __init__(self, sc: Scenario, machine: _Machine, run: Path, index: int):
        self.sc, self.machine, self.index = sc, machine, index
        self.name = _host_name(index)
        self.base = _clock_base(index)
        self.boot_offset = 1_137 + 211 * index  # sub-tick part of /proc start times on this clock
        self.dir = layout.host_dir(run, self.name)
        self.procs = layout.procs_dir(run, self.name)
        self.procs.mkdir(parents=True)
        self.interval = _ns(sc.interval_s)
        self.tick0 = self.base + _FIRST_SAMPLE_NS
        self.next_pid = 1200 + 40 * index
        self.samples = _Spool(self.dir, self.tick0, self.interval)
        self.sampled = _Records()
        self.pages = -(-sc.chunk_size // PAGE_SIZE)
        self.stride = sample_stride(self.pages)
        self.sampled_pages = -(-self.pages // self.stride)
        self.ranks = [_Rank(self, local) for local in range(sc.ranks_per_host)]
        for rank in self.ranks:
            rank.pid = self._pid()

    # clocks and ticks

    def tick_round(self, t: int) -> int:
        """A start time as /proc has it: clock-tick precision."""
        return (t - self.boot_offset) // _CLK_TICK_NS * _CLK_TICK_NS + self.boot_offset

    def offset(self, local: int, kind: int) -> int:
        return ((local * 4 + kind) * 2 * _US) % (self.interval // 2)

    def ticks(self, lo: int, hi: int, off: int) -> np.ndarray:
        """Sample times in [lo, hi) of a process read `off` into each tick."""
        first = max(0, -(-(lo - self.tick0 - off) // self.interval))
        last = -(-(hi - self.tick0 - off) // self.interval)
        return self.tick0 + off + np.arange(first, max(first, last), dtype=np.int64) * self.interval

    def next_tick(self, t: int, off: int) -> int:
        return self.tick0 + off + max(0, -(-(t - self.tick0 - off) // self.interval)) * self.interval

    def wall(self, t: int) -> int:
        return _WALL_BASE + (t - self.base)

    def _pid(self) -> int:
        self.next_pid += 1
        return self.next_pid

    # files

    def _files(self, pid: int, created: int):
        base = self.procs / f"{pid}-{created}"
        return (base.parent / (base.name + journal.EVENTS_SUFFIX),
                base.parent / (base.name + journal.CHUNKS_SUFFIX))

    def _identity(self, rank: _Rank, *, t, pid, ppid, created, via, forked_from, role, argv, affinity):
        mono = t + (15 * _MS if via == "exec" else 150 * _US)
        return dict(t_ns=t, schema=1, pid=pid, ppid=ppid, host=self.name, argv=argv, executable=_PYTHON,
                    python="3.11.9", implementation="cpython", created_ns=created, created_via=via,
                    forked_from=forked_from, role=role, wall_ns=self.wall(mono), mono_ns=mono,
                    env=rank.env, affinity=list(affinity), **rank.who, kind="process")

    @staticmethod
    def _hooks(specs, t0, step):
        # The frequent events are formatted as json.dumps would, for speed.
        return [f'{{"spec": "{spec}", "status": "applied", "reason": null, "kind": "hook", '
                f'"t_ns": {t0 + i * step}}}\n' for i, spec in enumerate(specs)]

    def _activation(self, ident_t):
        """Events of an exec'd process's probe coming up: hooks, then the activated span."""
        end = ident_t + _ACTIVATE_NS
        return self._hooks(_OS_HOOKS, end - 400 * _US, 12 * _US) + [
            {"start_ns": ident_t, "end_ns": end, "kind": "activated", "t_ns": end + 1 * _US}]

    def _seen(self, rank: _Rank, kind: int, pid: int, ppid: int, alive_from: int, exit_t: int, argv,
              masks, mappings=()):
        """The sampler's rare records of one process: first sight with its
        affinity, affinity changes (masks: [(from, mask)]), numa_maps of its
        shared-memory mappings (mappings: [(address, file, mapped, unmapped,
        faulted, pages)]) at first sight and every NUMA_MAPS_EVERY_NS, gone.
        Returns the sample times of its life."""
        off = self.offset(rank.local, kind)
        ticks = self.ticks(alive_from, exit_t, off)
        slot = rank.local * 4 + kind
        if len(ticks) == 0:
            return ticks
        first = int(ticks[0])
        out = self.sampled
        out.append((first, slot, 0, {"kind": "seen", "t_ns": first, "pid": pid, "ppid": ppid,
                                     "created_ns": self.tick_round(alive_from), "cmdline": argv, "exe": _EXE}))
        current = [mask for since, mask in masks if since <= first][-1]
        out.append((first, slot, 1, {"kind": "affinity", "t_ns": first, "pid": pid,
                                     "cpus": format_cpu_list(current)}))
        for since, mask in masks:
            t = self.next_tick(since, off)
            if since > first and t < exit_t and mask != current:
                out.append((t, slot, 1, {"kind": "affinity", "t_ns": t, "pid": pid,
                                         "cpus": format_cpu_list(mask)}))
                current = mask
        if mappings:
            recorded = {}
            t = first
            while t < exit_t:
                for address, file, mapped, unmapped, faulted, pages in mappings:
                    if mapped <= t < unmapped:
                        placed = (file, pages if faulted is not None and t >= faulted else {})
                        if recorded.get(address) != placed:
                            recorded[address] = placed
                            out.append((t, slot, 2, {"kind": "numa_maps", "t_ns": t, "pid": pid,
                                                     "address": address, "file": file,
                                                     "pages": placed[1], "huge": False}))
                t = self.next_tick(t + NUMA_MAPS_EVERY_NS, off)
        gone = self.next_tick(exit_t, off)
        out.append((gone, slot, 3, {"kind": "gone", "t_ns": gone, "pid": pid}))
        return ticks

    def _samples(self, ticks, **columns):
        out = np.zeros(len(ticks), SAMPLE_DTYPE)
        out["t_ns"] = ticks
        for name, value in columns.items():
            out[name] = value
        self.samples.add(out)

    # the run of this host

    def write(self) -> int:
        sc = self.sc
        for rank in self.ranks:
            self._producer_start(rank)
        t_b = np.array([rank.first_save for rank in self.ranks], dtype=np.int64)
        for save in range(sc.saves):
            t_b = self._save(save, t_b)
        for rank, end in zip(self.ranks, t_b):
            self._producer_end(rank, int(end) - _BETWEEN_SAVES_NS + _EXIT_AFTER_NS)
        # The recording ends after the last process and the sampler's last look at it.
        end = max(max(rank.exit_t for rank in self.ranks), self.sampled.last())
        self._flush_sampler()
        return end - self.base

    def _producer_start(self, rank: _Rank):
        t = rank.ident_t
        lines = [self._identity(rank, t=t, pid=rank.pid, ppid=1000 + self.index, created=rank.created,
                                via="exec", forked_from=None, role="main", argv=rank.argv,
                                affinity=rank.producer_mask)]
        lines += self._activation(t)
        lines += self._hooks(_PRODUCER_HOOKS, t + _ACTIVATE_NS + 100 * _MS, 1400 * _US)
        events, chunks = self._files(rank.pid, rank.created)
        events.write_text(_text(lines))
        chunks.write_bytes(b"")
        rank.files = (events, chunks)
        # Until the first save: importing, on one CPU.
        self._producer_segment(rank, rank.first_save, None)

    def _producer_segment(self, rank: _Rank, hi: int, v: dict | None, i: int = 0):
        """The producer's samples from where the last segment ended to hi, with
        its counters carried across; v: the save's timeline (row i), None before the first."""
        sc, carry = rank.sc, rank.carry
        off = self.offset(rank.local, _PRODUCER)
        ticks = self.ticks(rank.sample_from, hi, off)
        t = np.append(ticks, hi)
        cpu = self.machine.pick(rank.producer_mask, sc.buffer_node, 2 * rank.local)
        threads = np.full(len(t), 1, np.int64)
        rss = np.full(len(t), 60 * MIB, np.int64)
        if v is None:
            utime = carry["utime"] + _busy(np.array([rank.ident_t]), np.array([hi]), t)
            stime, vol, minflt, wbytes = (np.full(len(t), carry[k], np.int64)
                                          for k in ("stime", "vol", "minflt", "wbytes"))
            minflt = minflt + _step(np.array([rank.ident_t]), np.array([20_000]), t)
        else:
            cpu = v["producer_cpu"][i]
            gs, ge, ps, pe = v["gs"][i], v["ge"][i], v["ps"][i], v["pe"][i]
            gen_threads = rank.sc.gen_threads
            factor = min(max(1, gen_threads), len(rank.producer_mask))
            utime = carry["utime"] + _busy(gs, ge, t) * factor
            touch = v["gen_faults"][i]
            stime = carry["stime"] + _step(ge, touch * v["fault_ns"][i], t)
            vol = carry["vol"] + _step(pe, (pe - ps > 100 * _US).astype(np.int64), t) + \
                _step(v["join"][i:i + 1], [3], t)
            minflt = carry["minflt"] + _step(ge, touch, t) + _step(v["save_end"][i:i + 1], [20], t)
            wbytes = np.full(len(t), carry["wbytes"], np.int64)
            if sc.start_method != "forkserver":  # the kernel adds a reaped child's I/O to its parent's
                wbytes = wbytes + _step(v["join"][i:i + 1], [v["written"]], t)
            in_save = (t >= v["t_b"][i]) & (t < v["cleaned"][i])
            rss = rss + np.where(in_save, _step(ge, v["first_pages"][i], t) * PAGE_SIZE, 0)
            # The generator's pool starts at its first fill; the queue's feeder thread
            # at the first put, until the queue is closed.
            pool = (t >= gs[0]) if v["save"] == 0 else np.ones(len(t), bool)
            threads = threads + gen_threads * pool + ((t >= pe[0]) & (t < v["save_end"][i]))
        threads = np.maximum(threads, sc.fork_threads or 1)
        rss = rss + 8 * MIB * sc.gen_threads
        for name, values in (("utime", utime), ("stime", stime), ("vol", vol), ("minflt", minflt),
                             ("wbytes", wbytes)):
            carry[name] = int(values[-1])
        rank.sample_from = hi
        if len(ticks):
            n = len(ticks)
            self._samples(ticks, pid=rank.pid, cpu=cpu, threads=threads[:n], utime_ns=_ticks_floor(utime[:n]),
                          stime_ns=_ticks_floor(stime[:n]), voluntary_ctxt=vol[:n],
                          nonvoluntary_ctxt=(t[:n] - rank.exec_t) * sc.involuntary_per_s // _S,
                          minflt=minflt[:n], majflt=1, rss_bytes=rss[:n], write_bytes=wbytes[:n],
                          wchar=wbytes[:n] + 4096)
        return cpu

    # one save, every rank of the host at once

    def _save(self, save: int, t_b: np.ndarray) -> np.ndarray:
        sc, m = self.sc, self.machine
        R, n, B = len(self.ranks), sc.chunks_per_save, sc.buffers
        params = [rank.save_scenario(save) for rank in self.ranks]

        def col(name, scale=_S):
            return np.array([round(getattr(p, name) * scale) for p in params], dtype=np.int64)

        def fcol(name):
            return np.array([getattr(p, name) for p in params], dtype=float)

        method = sc.start_method
        first = save == 0
        # Where each writer runs: before its target pins it, and per chunk after.
        producer_cpu, start_cpu = np.empty(R, np.int64), np.empty(R, np.int64)
        chunk_cpu = np.empty((R, n + 1), np.int64)
        masks = []
        for i, (rank, p) in enumerate(zip(self.ranks, params)):
            what = f"rank {rank.rank} save {save}"
            m.on_node(m.online, p.buffer_node, f"{what}: buffer_node")
            inherited = rank.daemon_mask if method == "forkserver" else rank.producer_mask
            mask = m.mask(p.writer_cpus, f"{what}: writer_cpus") if p.writer_cpus is not None else inherited
            run_node = p.writer_run_node
            if run_node is None:
                run_node = p.buffer_node if any(m.node_of.get(c) == p.buffer_node for c in mask) \
                    else m.node_of[mask[0]]
            run = m.on_node(mask, run_node, f"{what}: writer_run_node")
            cpu = run[(2 * rank.local + 1) % len(run)]
            chunk_cpu[i] = cpu
            if p.migrate_to_node is not None:
                moved = m.on_node(mask, p.migrate_to_node, f"{what}: migrate_to_node")
                chunk_cpu[i, n // 2:] = moved[(2 * rank.local + 1) % len(moved)]
            producer_cpu[i] = m.pick(rank.producer_mask, p.buffer_node, 2 * rank.local)
            start_cpu[i] = m.pick(inherited, run_node, 2 * rank.local + 1)
            masks.append((inherited, mask))
        node_of = np.vectorize(m.node_of.get, otypes=[np.int64])
        remote = node_of(chunk_cpu[:, :n]) != col("buffer_node", 1)[:, None]

        # Durations of the calls.
        rng = np.random.default_rng([sc.seed, self.index, save])
        jitter = fcol("jitter")[:, None] if any(p.jitter for p in params) else None

        def spread():
            if jitter is None:
                return 1.0
            return np.exp(rng.normal(0.0, 1.0, (R, n)) * jitter - jitter ** 2 / 2)

        fault_ns = fcol("fault_s") * _S  # per fault, fractional
        first_pass = np.arange(n) < B  # a buffer's first chunk of the save faults its pages in
        gen_faults = np.where(first_pass, self.pages, 0)[None, :].repeat(R, 0)
        write_faults = np.where(first_pass, self.pages // 16, 0)[None, :] + col("faults_per_chunk", 1)[:, None]
        gen_dur = (col("gen_s")[:, None] * spread() + gen_faults * fault_ns[:, None]).astype(np.int64)
        write_factor = np.where(remote, fcol("remote_factor")[:, None], 1.0)
        write_dur = (col("write_s")[:, None] * spread() * write_factor
                     + write_faults * fault_ns[:, None]).astype(np.int64)
        gen_dur, write_dur = np.maximum(gen_dur, 1 * _US), np.maximum(write_dur, 1 * _US)

        # Start-up.
        begin_create = t_b + 200 * _US + (_TRACKER_LAUNCH_NS if first else 0)
        shm_t = begin_create[:, None] + np.arange(B) * _SHM_CREATE_NS
        place_t = shm_t + _PLACEMENT_NS
        t_ps = place_t[:, -1] + 400 * _US
        start_ns = np.array([_ns(p.start_s if p.start_s is not None else _DEFAULT_START_S[method])
                             for p in params], dtype=np.int64)
        start_dur = start_ns + (_FORKSERVER_LAUNCH_NS if method == "forkserver" and first else 0)
        ps_end = t_ps + start_dur
        fork_at = ps_end - start_ns // 2
        v = dict(save=save, t_b=t_b, shm_t=shm_t, place_t=place_t, t_ps=t_ps, ps_end=ps_end,
                 fork_at=fork_at, producer_cpu=producer_cpu, start_cpu=start_cpu, chunk_cpu=chunk_cpu,
                 masks=masks, params=params, fault_ns=fault_ns)
        main_rerun, unpickle = col("main_rerun_s"), col("unpickle_s")
        if method == "fork":
            created = fork_at + 300 * _US
            v["boot"] = created + 1400 * _US
            v["ts"] = v["boot"] + 400 * _US
        else:
            if method == "forkserver":
                created = fork_at + 900 * _US
                v["mr_s"] = created + 2 * _MS
            else:
                v["exec"] = t_ps + start_dur // 2
                created = np.array([self.tick_round(int(t)) for t in v["exec"]], dtype=np.int64)
                v["ident"] = v["exec"] + _INTERPRETER_NS + 10 * _MS
                v["mr_s"] = v["ident"] + _ACTIVATE_NS + 15 * _MS
            v["mr_e"] = v["mr_s"] + main_rerun
            v["up_s"] = v["mr_e"] + 50 * _US
            v["up_e"] = v["up_s"] + unpickle
            v["boot"] = v["up_e"]
            v["ts"] = v["boot"] + 200 * _US
        v["created"] = created
        setup = np.maximum(col("target_setup_s"), 500 * _US)
        spacing = setup // (B + 2)
        v["attach_t"] = v["ts"][:, None] + (np.arange(B) + 1) * spacing[:, None]
        v["attach_place_t"] = v["attach_t"] + spacing[:, None] * 2 // 5
        ready = v["ts"] + setup

        # The pipeline: put i waits for get i-B to free a slot, get i for put i.
        gs = np.empty((R, n), np.int64)
        ge, ws, we = np.empty_like(gs), np.empty_like(gs), np.empty_like(gs)
        ps, pe = np.empty((R, n + 1), np.int64), np.empty((R, n + 1), np.int64)
        gts, gte = np.empty_like(ps), np.empty_like(ps)
        t, wt = ps_end + 100 * _US, ready
        for c in range(n + 1):
            if c < n:
                gs[:, c] = t
                ge[:, c] = t + gen_dur[:, c]
                t = ge[:, c] + _GAP_NS
            ps[:, c] = t
            end = t + _PUT_MIN_NS
            if c >= B:
                end = np.maximum(end, gte[:, c - B] + _WAKE_NS)
            pe[:, c] = end
            gts[:, c] = wt
            gte[:, c] = np.maximum(wt + _GET_MIN_NS, end + _QUEUE_LATENCY_NS)
            if c < n:
                ws[:, c] = gte[:, c] + _GAP_NS
                we[:, c] = ws[:, c] + write_dur[:, c]
                wt = we[:, c] + _GAP_NS
            t = end + _GAP_NS
        fs = gte[:, n] + 20 * _US
        fe = fs + col("fsync_s")
        cs = fe + 70 * _US
        ce = cs + _CLOSE_NS
        wend = ce[:, None] + 150 * _US + np.arange(B) * 300 * _US
        inherited_end = wend[:, -1:] + 100 * _US + np.arange(B) * 100 * _US
        w_exit = (inherited_end[:, -1] if method == "fork" else wend[:, -1]) + 150 * _US
        recv = np.maximum(pe[:, n], w_exit - 100 * _US) + 80 * _US
        join = np.maximum(recv, w_exit + 200 * _US)
        cleanup = join[:, None] + 300 * _US + np.arange(B) * _CLEANUP_PLACEMENT_NS
        save_end = cleanup[:, -1] + 300 * _US
        v.update(gs=gs, ge=ge, ps=ps, pe=pe, gts=gts, gte=gte, ws=ws, we=we, fs=fs, fe=fe, cs=cs,
                 ce=ce, wend=wend, inherited_end=inherited_end, w_exit=w_exit, join=join,
                 cleanup=cleanup, cleaned=cleanup[:, -1], save_end=save_end, gen_faults=gen_faults,
                 first_pages=np.where(first_pass, self.pages, 0)[None, :].repeat(R, 0),
                 write_faults=write_faults, written=n * sc.chunk_size)

        self._new_pids(save, v)
        self._chunk_records(v)
        for i, rank in enumerate(self.ranks):
            self._save_events(rank, v, i)
            self._writer(rank, v, i)
            self._producer_segment(rank, int(save_end[i]) + _BETWEEN_SAVES_NS, v, i)
        self.samples.flush()
        return save_end + _BETWEEN_SAVES_NS

    def _new_pids(self, save: int, v: dict):
        """Pids in order of creation: resource trackers and forkserver daemons
        (first save), then writers."""
        born = []
        for i, rank in enumerate(self.ranks):
            if save == 0:
                tracker_exec = int(v["t_b"][i]) + 300 * _US
                born.append((tracker_exec, i, "tracker"))
                if self.sc.start_method == "forkserver":
                    born.append((int(v["t_ps"][i]) + 500 * _US, i, "daemon"))
            born.append((int(v["exec"][i]) if "exec" in v else int(v["created"][i]), i, "writer"))
        v["writer_pid"] = np.empty(len(self.ranks), np.int64)
        for t, i, what in sorted(born):
            rank, pid = self.ranks[i], self._pid()
            if what == "writer":
                v["writer_pid"][i] = pid
            else:
                created = self.tick_round(t)
                start = (t, created, t + _INTERPRETER_NS - 5 * _MS)
                if what == "tracker":
                    rank.tracker_pid, rank.tracker = pid, start
                else:
                    rank.daemon_pid, rank.daemon = pid, start

    def _chunk_records(self, v: dict):
        """Every rank's producer records of this save, appended to its file,
        and its writer's records, as the probe lays them out: in order of
        the calls' ends, the save record (depth 0) after what it encloses."""
        sc = self.sc
        R, n, B, save = len(self.ranks), sc.chunks_per_save, sc.buffers, v["save"]
        pid = np.array([rank.pid for rank in self.ranks], dtype=np.int64)[:, None]
        p = np.zeros((R, 2 * n + 2), CHUNK_DTYPE)
        # gen 0, put 0, ..., gen n-1, put n-1, put of the end marker, save.
        gen, put = np.arange(0, 2 * n, 2), np.append(np.arange(1, 2 * n, 2), 2 * n)
        p["phase"][:, gen], p["phase"][:, put], p["phase"][:, -1] = _PHASE["gen"], _PHASE["put"], _PHASE["save"]
        p["depth"] = 1
        p["depth"][:, -1] = 0
        p["cpu"] = v["producer_cpu"][:, None]
        p["buffer"] = -1
        p["buffer"][:, gen] = save * B + np.arange(n) % B
        p["writer_seq"] = save
        p["tid"] = pid
        p["start_ns"][:, gen], p["end_ns"][:, gen] = v["gs"], v["ge"]
        p["start_ns"][:, put], p["end_ns"][:, put] = v["ps"], v["pe"]
        p["start_ns"][:, -1], p["end_ns"][:, -1] = v["t_b"], v["save_end"]
        p["bytes"] = -1
        p["bytes"][:, gen] = sc.chunk_size
        p["bytes"][:, put] = np.maximum(v["pe"] - v["ps"] - 3 * _US, 0)  # _put returns its wait, in ns
        p["minflt"][:, gen] = v["gen_faults"]
        p["minflt"][:, -1] = 20
        w = np.zeros((R, 2 * n + 3), CHUNK_DTYPE)
        get, write = slice(0, 2 * n + 1, 2), slice(1, 2 * n, 2)
        w["phase"][:, get], w["phase"][:, write] = _PHASE["get"], _PHASE["write"]
        w["phase"][:, -2], w["phase"][:, -1] = _PHASE["fsync"], _PHASE["close"]
        w["depth"] = 1  # inside run_writer, whose own record os._exit never lets be written
        w["cpu"][:, get] = v["chunk_cpu"]
        w["cpu"][:, write] = v["chunk_cpu"][:, :n]
        w["cpu"][:, -2:] = v["chunk_cpu"][:, -1:]
        w["buffer"] = -1
        base = (save + 1) * B if sc.start_method == "fork" else 0  # a fork child knows its parent's buffers too
        w["buffer"][:, write] = base + np.arange(n) % B
        w["writer_seq"] = -1
        w["tid"] = v["writer_pid"][:, None]
        w["start_ns"][:, get], w["end_ns"][:, get] = v["gts"], v["gte"]
        w["start_ns"][:, write], w["end_ns"][:, write] = v["ws"], v["we"]
        w["start_ns"][:, -2], w["end_ns"][:, -2] = v["fs"], v["fe"]
        w["start_ns"][:, -1], w["end_ns"][:, -1] = v["cs"], v["ce"]
        w["bytes"] = -1
        w["bytes"][:, write] = sc.chunk_size
        w["minflt"][:, write] = v["write_faults"]
        w["minflt"][:, 0] = 150
        v["producer_records"], v["writer_records"] = p, w

    def _addresses(self, rank: _Rank, top: int, count: int):
        size = self.pages * PAGE_SIZE
        top -= (rank.local % 64) << 36
        return [top - (b + 1) * size for b in range(count)]

    def _buffer_names(self, rank: _Rank, save: int):
        return ["psm_%08x" % zlib.crc32(f"{self.name}/{rank.rank}/{save}/{b}".encode())
                for b in range(self.sc.buffers)]

    def _placement(self, name, index, when, t, node=None):
        sampled = self.sampled_pages
        nodes, unfaulted = (f'{{"{node}": {sampled}}}', 0) if node is not None else ("{}", sampled)
        return (f'{{"name": "{name}", "index": {index}, "when": "{when}", "source": "move_pages", '
                f'"pages": {self.pages}, "sampled": {sampled}, "stride": {self.stride}, "nodes": {nodes}, '
                f'"unfaulted": {unfaulted}, "kind": "placement", "t_ns": {t}}}\n')

    def _shm(self, op, name, index, start, t):
        return (f'{{"op": "{op}", "name": "{name}", "size": {self.sc.chunk_size}, "index": {index}, '
                f'"start": {start}, "end": {start + self.pages * PAGE_SIZE}, "kind": "shm", "t_ns": {t}}}\n')

    def _save_events(self, rank: _Rank, v: dict, i: int):
        """The producer's events of this save, and its chunk records, appended."""
        sc = self.sc
        save, B, n = v["save"], sc.buffers, sc.chunks_per_save
        node = v["params"][i].buffer_node
        names = self._buffer_names(rank, save)
        addresses = self._addresses(rank, 0x7F80_0000_0000, B)
        v["names"], v["addresses"] = names, addresses
        lines = []
        for b in range(B):
            index = save * B + b
            lines.append(self._shm("create", names[b], index, addresses[b], int(v["shm_t"][i, b])))
            lines.append(self._placement(names[b], index, "create", int(v["place_t"][i, b])))
        if sc.start_method == "fork":
            native = rank.sc.fork_threads if rank.sc.fork_threads is not None else \
                1 + (rank.sc.gen_threads if save > 0 else 0)
            python = ["MainThread"] + ([f"writerprof-gen_{k}" for k in range(rank.sc.gen_threads)]
                                       if save > 0 and rank.sc.fork_threads is None else [])
            lines.append({"native_threads": native, "python_threads": len(python), "threads": python[:32],
                          "forking_thread": "MainThread", "kind": "fork", "t_ns": int(v["fork_at"][i])})
        elif sc.start_method == "forkserver":
            rank.daemon_forks.append(int(v["fork_at"][i]))
            rank.reaped.append((int(v["w_exit"][i]) + 100 * _US, v["written"]))
        t_ps = int(v["t_ps"][i])
        lines.append({"t_ns": t_ps, "start_ns": t_ps, "end_ns": int(v["ps_end"][i]), "method": sc.start_method,
                      "target": _TARGET, "child_pid": int(v["writer_pid"][i]), "name": f"writer-{save + 1}",
                      "writer_seq": save, "started": True, "kind": "process_start"})
        for b in range(B):
            lines.append(self._placement(names[b], save * B + b, "end", int(v["cleanup"][i, b]),
                                         node if b < n else None))
        events, chunks = rank.files
        with open(events, "a") as f:
            f.write(_text(lines))
        with open(chunks, "ab") as f:
            v["producer_records"][i].tofile(f)
        if save == 0:
            self._daemons_start(rank)
        # The producer's buffers in numa_maps: faulted in by its first gen into each.
        ge = v["ge"][i]
        rank.mappings = [(addresses[b], "/dev/shm/" + names[b], int(v["shm_t"][i, b]),
                          int(v["cleanup"][i, b]), int(ge[b]) if b < n else None,
                          {str(node): self.pages}) for b in range(B)]
        self._producer_numa(rank, int(v["save_end"][i]) + _BETWEEN_SAVES_NS)

    def _producer_numa(self, rank: _Rank, hi: int):
        """The sampler's numa_maps reads of the producer up to hi."""
        off = self.offset(rank.local, _PRODUCER)
        slot = rank.local * 4 + _PRODUCER
        t = rank.numa_read
        if t is None:
            t = self.next_tick(rank.exec_t, off)
        while t < hi:
            for address, file, mapped, unmapped, faulted, pages in rank.mappings:
                if mapped <= t < unmapped:
                    placed = (file, pages if faulted is not None and t >= faulted else {})
                    if rank.numa_seen.get(address) != placed:
                        rank.numa_seen[address] = placed
                        self.sampled.append((t, slot, 2, {"kind": "numa_maps", "t_ns": t, "pid": rank.pid,
                                                          "address": address, "file": file,
                                                          "pages": placed[1], "huge": False}))
            t = self.next_tick(t + NUMA_MAPS_EVERY_NS, off)
        rank.numa_read = t

    def _daemons_start(self, rank: _Rank):
        """The resource tracker (and forkserver daemon) journal their start; the rest at the end."""
        rank.daemon_lines = {}
        for kind, pid, start, argv, mask in (
                ("tracker", rank.tracker_pid, rank.tracker, _TRACKER_ARGV, rank.producer_mask),
                ("daemon", rank.daemon_pid, rank.daemon, _FORKSERVER_ARGV, rank.daemon_mask)):
            if start is None:
                continue
            exec_t, created, ident = start
            role = "resource_tracker" if kind == "tracker" else "forkserver"
            lines = [self._identity(rank, t=ident, pid=pid, ppid=rank.pid, created=created, via="exec",
                                    forked_from=None, role=role, argv=argv, affinity=mask)]
            lines += self._activation(ident)
            lines += self._hooks(("multiprocessing.process", "multiprocessing.spawn"),
                                 ident + _ACTIVATE_NS + 2 * _MS, 8 * _MS)
            rank.daemon_lines[kind] = lines

    def _writer(self, rank: _Rank, v: dict, i: int):
        """One writer's journal and its sampler view."""
        sc = self.sc
        save, B, n, method = v["save"], sc.buffers, sc.chunks_per_save, sc.start_method
        p = v["params"][i]
        pid, created = int(v["writer_pid"][i]), int(v["created"][i])
        inherited_mask, mask = v["masks"][i]
        names, producer_addresses = v["names"], v["addresses"]
        if method == "fork":
            ppid, forked_from, via, argv = rank.pid, rank.pid, "fork", rank.argv
            ident = created
        elif method == "forkserver":
            ppid, forked_from, via, argv = rank.daemon_pid, rank.daemon_pid, "fork", _FORKSERVER_ARGV
            ident = created
        else:
            ppid, forked_from, via, argv = rank.pid, None, "exec", _SPAWN_ARGV
            ident = int(v["ident"][i])
        lines = [self._identity(rank, t=ident, pid=pid, ppid=ppid, created=created, via=via,
                                forked_from=forked_from, role=_WRITER_ROLE[method], argv=argv,
                                affinity=inherited_mask)]
        if method == "fork":
            for b in range(B):
                lines.append(self._shm("inherited", names[b], save * B + b, producer_addresses[b],
                                       created + 1 * _MS + b * 40 * _US))
        else:
            if method == "spawn":
                lines += self._activation(ident)
                lines += self._hooks(("multiprocessing.process", "multiprocessing.spawn"),
                                     ident + _ACTIVATE_NS + 2 * _MS, 5 * _MS)
            mr_s, mr_e = int(v["mr_s"][i]), int(v["mr_e"][i])
            up_s, up_e = int(v["up_s"][i]), int(v["up_e"][i])
            lines.append({"t_ns": mr_s, "start_ns": mr_s, "end_ns": mr_e, "path": _MAIN_PATH,
                          "kind": "main_rerun"})
            lines += self._hooks(_WRITER_IMPORT_HOOKS, up_s + (up_e - up_s) * 2 // 3, 50 * _US)
            lines.append({"t_ns": up_s, "start_ns": up_s, "end_ns": up_e, "kind": "unpickle"})
        boot, ts = int(v["boot"][i]), int(v["ts"][i])
        lines.append({"t_ns": boot, "target": _TARGET, "name": f"writer-{save + 1}", "kind": "bootstrap"})
        lines.append({"kind": "target_start", "t_ns": ts})
        base = (save + 1) * B if method == "fork" else 0
        top = producer_addresses[-1] if method == "fork" else 0x7F40_0000_0000 + ((rank.local % 64) << 36)
        addresses = [top - (b + 1) * self.pages * PAGE_SIZE for b in range(B)]
        for b in range(B):
            lines.append(self._shm("attach", names[b], base + b, addresses[b], int(v["attach_t"][i, b])))
            lines.append(self._placement(names[b], base + b, "attach", int(v["attach_place_t"][i, b])))
        for b in range(B):
            lines.append(self._placement(names[b], base + b, "end", int(v["wend"][i, b]),
                                         p.buffer_node if b < n else None))
        if method == "fork":  # still mapped at os._exit, never touched here
            for b in range(B):
                lines.append(self._placement(names[b], save * B + b, "end", int(v["inherited_end"][i, b])))
        exit_t = int(v["w_exit"][i])

        # Counters, for the samples and the exit's rusage.
        masks = [(created, inherited_mask)] + ([(ts, mask)] if mask != inherited_mask else [])
        mappings = []
        if method == "fork":
            mappings += [(producer_addresses[b], "/dev/shm/" + names[b], created, exit_t, None, {})
                         for b in range(B)]
        mappings += [(addresses[b], "/dev/shm/" + names[b], int(v["attach_t"][i, b]), int(v["wend"][i, b]),
                      int(v["we"][i, b]) if b < n else None, {str(p.buffer_node): self.pages})
                     for b in range(B)]
        alive_from = int(v["exec"][i]) if method == "spawn" else created
        ticks = self._seen(rank, _WRITER, pid, ppid, alive_from, exit_t, argv, masks, mappings)
        t = np.append(ticks, exit_t)
        records = v["writer_records"][i]
        ws, we = v["ws"][i], v["we"][i]
        # User time: its start-up to the last attach, and a little of each write.
        utime = _busy(np.array([alive_from]), v["attach_place_t"][i, -1:], t) + _busy(ws, we, t) // 20
        stime = _busy(ws, we, t) * 9 // 10 + _busy(v["fs"][i:i + 1], v["fe"][i:i + 1], t) // 10
        vol = _step(v["gte"][i], np.ones(n + 1, np.int64), t) + _step(we, np.ones(n, np.int64), t)
        base_faults = {"fork": 150, "forkserver": 1800, "spawn": 4000}[method]
        minflt = base_faults + _step(records["end_ns"], records["minflt"], t)
        first_writes = np.where(np.arange(n) < B, sc.chunk_size, 0)
        rss = {"fork": 60, "forkserver": 16, "spawn": 16}[method] * MIB + _step(we, first_writes, t)
        written = _step(we, np.full(n, sc.chunk_size), t)
        invol = (t - created) * rank.sc.involuntary_per_s // _S
        cpus = np.where(t < ts, v["start_cpu"][i], v["chunk_cpu"][i, 0])
        started = np.searchsorted(records["start_ns"], t, side="right") - 1
        cpus = np.where(started >= 0, records["cpu"][np.maximum(started, 0)], cpus)
        k = len(ticks)
        if k:
            self._samples(ticks, pid=pid, cpu=cpus[:k], threads=1, utime_ns=_ticks_floor(utime[:k]),
                          stime_ns=_ticks_floor(stime[:k]), voluntary_ctxt=vol[:k], nonvoluntary_ctxt=invol[:k],
                          minflt=minflt[:k], majflt=0, rss_bytes=rss[:k], write_bytes=written[:k],
                          wchar=written[:k] + 512)
        lines.append({"via": "os._exit", "code": 0, "rusage": {
            "utime_s": int(utime[-1]) / _S, "stime_s": int(stime[-1]) / _S, "minflt": int(minflt[-1]),
            "majflt": 0, "nvcsw": int(vol[-1]), "nivcsw": int(invol[-1]), "maxrss_kb": int(rss[-1]) // 1024},
            "kind": "exit", "t_ns": exit_t})
        events, chunks = self._files(pid, created)
        events.write_text(_text(lines))
        records.tofile(chunks)

    def _producer_end(self, rank: _Rank, exit_t: int):
        sc = rank.sc
        rank.exit_t = exit_t
        self._producer_tail(rank, exit_t)
        carry = rank.carry
        events = rank.files[0]
        exit_line = {"via": "atexit", "code": None, "rusage": {
            "utime_s": carry["utime"] / _S, "stime_s": carry["stime"] / _S, "minflt": carry["minflt"],
            "majflt": 1, "nvcsw": carry["vol"],
            "nivcsw": int((exit_t - rank.exec_t) * sc.involuntary_per_s // _S),
            "maxrss_kb": (60 * MIB + 8 * MIB * sc.gen_threads + self.sc.buffers * self.sc.chunk_size) // 1024},
            "kind": "exit", "t_ns": exit_t}
        with open(events, "a") as f:
            f.write(json.dumps(exit_line) + "\n")
        masks = [(rank.exec_t, rank.producer_mask)]
        self._seen(rank, _PRODUCER, rank.pid, 1000 + self.index, rank.exec_t, exit_t, rank.argv, masks)
        # Daemons: the tracker and the forkserver leave after the producer.
        for kind, pid, start, argv, mask, code in (
                ("tracker", rank.tracker_pid, rank.tracker, _TRACKER_ARGV, rank.producer_mask, _TRACKER),
                ("daemon", rank.daemon_pid, rank.daemon, _FORKSERVER_ARGV, rank.daemon_mask, _DAEMON)):
            if start is None:
                continue
            exec_t, created, ident = start
            end = exit_t + (30 if kind == "tracker" else 31) * _MS
            lines = rank.daemon_lines[kind]
            forks = rank.daemon_forks if kind == "daemon" else []
            lines += [{"native_threads": 1, "python_threads": 1, "threads": ["MainThread"],
                       "forking_thread": "MainThread", "kind": "fork", "t_ns": t} for t in forks]
            ticks = self._seen(rank, code, pid, rank.pid, exec_t, end, argv, [(exec_t, mask)])
            t = np.append(ticks, end)
            utime = _busy(np.array([exec_t]), np.array([ident + _ACTIVATE_NS + 10 * _MS]), t)
            vol = 5 + _step(np.array(forks, dtype=np.int64), np.full(len(forks), 2), t)
            reaped = rank.reaped if kind == "daemon" else []
            written = _step(np.array([r[0] for r in reaped], dtype=np.int64),
                            np.array([r[1] for r in reaped], dtype=np.int64), t)
            invol = (t - exec_t) * sc.involuntary_per_s // _S // 20
            minflt = np.where(t >= ident, 1950 + 6 * vol, 900)
            k = len(ticks)
            if k:
                self._samples(ticks, pid=pid, cpu=self.machine.pick(mask, None, 2 * rank.local), threads=1,
                              utime_ns=_ticks_floor(utime[:k]), stime_ns=_ticks_floor(utime[:k] // 4),
                              voluntary_ctxt=vol[:k], nonvoluntary_ctxt=invol[:k], minflt=minflt[:k],
                              majflt=0, rss_bytes=14 * MIB, write_bytes=written[:k], wchar=written[:k] + 2048)
            lines.append({"via": "atexit", "code": None, "rusage": {
                "utime_s": int(utime[-1]) / _S, "stime_s": int(utime[-1]) // 4 / _S, "minflt": int(minflt[-1]),
                "majflt": 0, "nvcsw": int(vol[-1]), "nivcsw": int(invol[-1]), "maxrss_kb": 14 * 1024},
                "kind": "exit", "t_ns": end})
            events, chunks = self._files(pid, created)
            events.write_text(_text(lines))
            chunks.write_bytes(b"")
            rank.exit_t = max(rank.exit_t, end)

    def _producer_tail(self, rank: _Rank, exit_t: int):
        """After the last save: the producer idles until it exits."""
        hi = exit_t
        off = self.offset(rank.local, _PRODUCER)
        ticks = self.ticks(rank.sample_from, hi, off)
        carry, sc = rank.carry, rank.sc
        if len(ticks):
            self._samples(ticks, pid=rank.pid, cpu=self.machine.pick(rank.producer_mask, sc.buffer_node,
                                                                     2 * rank.local),
                          threads=max(1 + sc.gen_threads, sc.fork_threads or 1),
                          utime_ns=_ticks_floor(carry["utime"]), stime_ns=_ticks_floor(carry["stime"]),
                          voluntary_ctxt=carry["vol"],
                          nonvoluntary_ctxt=(ticks - rank.exec_t) * sc.involuntary_per_s // _S,
                          minflt=carry["minflt"], majflt=1, rss_bytes=60 * MIB + 8 * MIB * sc.gen_threads,
                          write_bytes=carry["wbytes"], wchar=carry["wbytes"] + 4096)
        self._producer_numa(rank, hi)
        rank.sample_from = hi

    def _flush_sampler(self):
        """samples.bin in tick order, as the sampler appends it; sampled.jsonl likewise."""
        self.samples.finish(self.dir / layout.SAMPLES_FILE)
        self.sampled.write(self.dir / layout.SAMPLED_FILE)
        (self.dir / layout.TOPOLOGY_FILE).write_text(json.dumps(self.machine.topology, indent=2) + "\n")
