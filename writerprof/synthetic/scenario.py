"""What a synthetic run simulates: the Scenario, its validation, and which of
its settings may change per rank or per save."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Mapping

from writerprof.probes.writerprof_probe.format import START_METHODS
from writerprof.units import format_cpu_list, parse_cpu_list

MIB = 1 << 20


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
    # Relative spread (lognormal sigma) of a whole save's storage: one factor
    # per save and rank on all its writes and its fsync, as a busy machine's
    # device varies from save to save (per-chunk jitter averages out in a save).
    save_jitter: float = 0.0
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
    run_queue_share: float = 0.0  # the share of its time each process's main thread waits on a run queue for a CPU
    # What the probe saw: phases whose calls had no hook ("gen,put,get": a
    # producer whose fill no spec names, a queue that is not multiprocessing's);
    # their records are left out and the save reads them as not measured.
    unhooked: str = ""
    # Pages that move: automatic NUMA balancing on (kernel.numa_balancing=1) and
    # migrating this many of each writer's pages per save (0: balancing off).
    pages_migrated_per_save: int = 0
    # The sampler
    interval_s: float = 0.05
    overrides: Mapping = field(default_factory=dict)

    def __post_init__(self):
        for name in ("producer_cpus", "writer_cpus_inherited", "writer_cpus"):
            object.__setattr__(self, name, _cpus(getattr(self, name)))
        self._check_settings()
        self._check_overrides()

    def _check_settings(self):
        if self.start_method not in START_METHODS:
            raise ValueError(f"start_method {self.start_method!r}: one of {', '.join(START_METHODS)}")
        for name in ("hosts", "ranks_per_host", "saves", "chunks_per_save", "chunk_size", "buffers",
                     "nodes", "cpus_per_node"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.smt and self.cpus_per_node % 2:
            raise ValueError("smt needs an even cpus_per_node (two threads per core)")
        for name in ("gen_s", "write_s", "fsync_s", "jitter", "save_jitter", "main_rerun_s", "unpickle_s",
                     "target_setup_s", "fault_s", "involuntary_per_s", "run_queue_share", "faults_per_chunk",
                     "gen_threads"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        wrong = set(self.unhooked_phases()) - {"gen", "put", "get", "write", "fadvise", "fsync", "close"}
        if wrong:
            raise ValueError(f"unhooked {', '.join(sorted(wrong))}: phases of the producer's or writer's calls")
        if self.fork_threads is not None and self.fork_threads < 1:
            raise ValueError("fork_threads must be at least 1 (the forking thread)")
        if self.interval_s <= 0 or self.remote_factor <= 0 or (self.start_s is not None and self.start_s <= 0):
            raise ValueError("interval_s, remote_factor and start_s must be positive")

    def _check_overrides(self):
        for key, changes in self.overrides.items():
            if not (isinstance(key, tuple) and len(key) == 2 and 0 <= key[0] < self.hosts * self.ranks_per_host
                    and (key[1] is None or 0 <= key[1] < self.saves)):
                raise ValueError(f"overrides key {key!r}: (rank, save) or (rank, None) of this run's "
                                 f"ranks and saves (counted from 0)")
            allowed = SAVE_FIELDS | (RANK_FIELDS if key[1] is None else set())
            wrong = set(changes) - allowed
            if wrong:
                raise ValueError(f"overrides {key!r}: {', '.join(sorted(wrong))} cannot change "
                                 f"{'per rank' if key[1] is None else 'per save'}")

    def unhooked_phases(self) -> list[str]:
        return [p.strip() for p in self.unhooked.split(",") if p.strip()]

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

    def command(self) -> list[str]:
        """The command line run.json records: the settings that differ from the defaults."""
        defaults = Scenario()
        return ["writerprof-synthetic"] + [
            f"--{f.name.replace('_', '-')}={_arg(getattr(self, f.name))}" for f in fields(self)
            if f.name not in ("topology", "overrides") and getattr(self, f.name) != getattr(defaults, f.name)]


def _arg(value) -> str:
    return format_cpu_list(value) if isinstance(value, tuple) else str(value)


RANK_FIELDS = {"producer_cpus", "writer_cpus_inherited", "gen_threads", "fork_threads",
               "involuntary_per_s"}
SAVE_FIELDS = {"gen_s", "write_s", "fsync_s", "jitter", "save_jitter", "start_s", "main_rerun_s", "unpickle_s",
               "target_setup_s", "writer_cpus", "buffer_node", "writer_run_node", "migrate_to_node",
               "remote_factor", "faults_per_chunk", "fault_s"}
