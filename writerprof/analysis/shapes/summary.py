"""The summary, writerprof.summary/1: what `report --json` prints."""

from __future__ import annotations

from typing import Any, TypedDict

from writerprof.analysis.shapes.stalls import Stalls
from writerprof.analysis.shapes.views import (AffinityBins, AffinityProcesses, ChunkTimeline, PlacementPerNode,
                                              PlacementPerSave, ProcessGroup, RankPerHost, SaveIndex)


class SignalReceived(TypedDict):
    signal: str  # its name
    at_s: float  # when record received it


class RecordingCut(TypedDict):
    """Of a recording whose run.json was never finished: the end its journals show."""
    at_s: float | None  # the latest time any record shows (None: none)
    processes: int  # probed processes
    exited: int  # of them, those that left an exit record


class Ending(TypedDict):
    cut_short: bool  # by a signal, a time limit, or with its recording (analysis.ending)
    failed: bool  # not cut short, and CMD exited non-zero
    by: str | None  # what cut it short (ending.SLURM_TIME_LIMIT ... RECORDING_CUT); None if not cut short
    signal: str | None  # the signal that cut it short, where one is known
    at_s: float | None  # when it was cut short
    exit_status: int | None  # CMD's
    exit_signal: str | None  # the N of an exit status 128+N (129-192), by name
    ended_by: str | None  # run.json's: "exit", "signal", "not_started"
    signals: list[SignalReceived]  # every signal asking CMD to end that record passed on
    recording_cut: RecordingCut | None  # None where run.json was finished
    saves: dict[str, int]  # status (ending.STATUSES) -> saves


class World(TypedDict):
    """The job's ranks and hosts against those the run holds (analysis.world)."""
    partial: bool  # ranks (or hosts) of the job are missing: every figure is over the ranks seen
    launcher: str | None  # whose variables numbered the ranks (openmpi, mpich, slurm, ...); None: no ranks
    ranks_expected: int | None  # the world size the ranks journaled; None: no ranks, or none journaled a size
    ranks_seen: int  # ranks a probed process journaled
    missing_ranks: list[int]  # of range(ranks_expected), those not seen
    hosts: list[str]  # seen: the run's parts (hosts/HOST) and the hosts ranks journaled
    ranks_by_host: dict[str, list[int]]  # host -> the ranks seen on it
    hosts_expected: int | None  # the job's hosts, where its launcher says (hosts_expected_from); else None
    hosts_expected_from: str | None  # the variable that said it
    missing_hosts: int  # hosts_expected less the hosts with a rank seen (their names are not known)
    inside_rank: int | None  # record ran inside this rank (a record per rank): the others are not its own
    launched_by: list[str]  # where no rank was recorded: the MPI launchers CMD ran (its ranks are elsewhere)


class RunInfo(TypedDict):
    path: str
    command: list[str] | None
    complete: bool  # the recording ended normally (run.json was closed)
    exit_status: int | None  # the command's
    synthetic: bool  # made by writerprof.synthetic, not measured
    hosts: list[str]
    python: list[str]  # the versions the processes ran
    start_methods: list[str]  # the writers'
    started_ns: int  # the recording's start, the origin of every "_s" time
    losses: list[str]  # what could not be read, one line each
    incomplete: list[str]  # what the recording itself could not write, and why (run.json)
    outlived_cmd: list[dict[str, Any]]  # processes still running after CMD ended: pid, cmdline
    probes_unmatched: dict[str, str]  # --probe spec applied in no process -> why
    not_probed: list[dict[str, Any]]  # Python processes the probe was not in, per reason (analysis.unprobed)
    ending: Ending  # how the run ended (analysis.ending)
    slurm: dict[str, Any] | None  # the Slurm job it ran in (run.json's "slurm"), None outside one


class HostTopology(TypedDict):
    nodes: dict[str, list[int]]  # NUMA node -> its CPUs
    cpus: int  # CPUs on the host
    cpu_model: str | None


class ClockAlignment(TypedDict):
    offset_ns: int  # added to the host's monotonic readings: the recording host's clock
    anchors: int  # (wall, monotonic) pairs the offset rests on
    spread_ns: int | None  # how far those anchors disagree: the alignment is no better
    aligned: bool  # the recording host, or anchors were found


class AffinityChange(TypedDict):
    t_s: float
    cpus: list[int]  # the allowed CPUs from then on


class ThreadWork(TypedDict):
    tid: int
    name: str | None  # its comm, as the kernel has it
    main: bool  # the process's main thread (tid == pid)
    cpu_s: float  # its CPU time inside the process's work spans
    nodes: dict[str, float]  # node -> share of that CPU time


class MemoryBinding(TypedDict):
    """A process's memory binding as the probe read it (its identity's "memory")."""
    policy: str | None  # the memory policy's mode: default, bind, interleave, prefer, local, ...; None: not read
    nodes: list[int] | None  # the policy's nodes; None: it names none
    allowed: list[int] | None  # the nodes its cpuset allows (Mems_allowed_list); None: not read


class Process(TypedDict):
    id: int  # its row in the run (saves' producer/writer, processes' parent)
    host: str
    rank: int  # MPI rank; -1 without MPI
    pid: int
    ppid: int
    parent: int | None  # the row of the probed process that started it
    role: str  # producer, writer, forkserver, resource_tracker, other
    start_method: str | None  # a writer's; a producer's: the methods it used, comma-separated
    python: str | None
    created_s: float
    exited_s: float | None
    allowed_cpus: list[int]  # what it worked with: the inherited CPUs, or the pin what-if's
    inherited_cpus: list[int]  # its affinity when the probe started in it
    memory: MemoryBinding | None  # its memory binding when the probe started in it; None: not recorded
    allowed_nodes: list[int]
    affinity_changes: list[AffinityChange]  # seen by the sampler during its life
    samples: int  # the sampler's readings of it
    cpu_nodes: dict[str, float]  # node -> share of the sampler's readings
    work_nodes: dict[str, float]  # node -> share of its work calls' time (write, gen)
    # node -> share of its threads' CPU time inside its work in each save (analysis.work_windows),
    # never its start-up; a process in no save: inside its work calls (all its life without any)
    thread_nodes: dict[str, float]
    thread_cpu_s: float | None  # that CPU time; None without per-thread readings
    threads: list[ThreadWork]  # the busiest of those threads (analysis.threads.MAX_THREADS)
    worked_nodes: dict[str, float]  # thread_nodes, else work_nodes, else cpu_nodes: what reports and diagnoses read
    worked_nodes_from: str | None  # which of the three worked_nodes is (processes.WORKED_FROM_*)
    buffer_nodes: dict[str, float]  # node -> share of the pages of the buffers it created or attached
    minflt: int | None  # minor page faults
    majflt: int | None
    nonvoluntary_switches: int | None  # preemptions
    voluntary_switches: int | None
    cpu_s: float | None  # user + system
    threads_max: int | None  # the most threads the sampler saw


class UploadRequest(TypedDict):
    role: str  # "create", "part", "complete", "abort", "put"; "connection" (an inferred upload's)
    part: int | None  # its partNumber
    tid: int
    start_s: float  # from the upload's start
    seconds: float  # to its response's end
    bytes: int  # its Content-Length, -1 unknown
    sent_bytes: int  # sent on its connection between its start and its response, its header too
    status: int | None  # its response's HTTP status; None: no response


class Upload(TypedDict):
    """An object's upload (analysis.uploads)."""
    kind: str  # "single" (a PUT), "multipart", "inferred" (bytes to one peer, no HTTP request read)
    key: str | None  # the request target's path, /bucket/key; None: inferred
    peer: str  # tcp:HOST:PORT
    upload_id: str | None
    bytes: int  # the parts' Content-Length summed
    sent_bytes: int  # what was sent for them, headers included
    mismatches: list[str]  # each part whose Content-Length the bytes sent do not bear out
    parts: int | None
    critical_s: float  # the union of its requests' times: the save's write_s
    threads_s: float  # their sum
    status: str | None  # "ok", "failed", "no response", "not completed"; None: inferred
    http_status: int | None  # a failed one's
    requests: list[UploadRequest]


class Save(TypedDict):
    save: int  # its order within its producer, from 1
    host: str
    rank: int
    producer: int  # process row
    producer_pid: int
    writer: int | None  # process row (None: the probe was not in the writer)
    writer_pid: int | None
    start_method: str | None
    target: str | None  # the writer's target, module.function
    start_ns: int
    end_ns: int
    start_s: float
    end_s: float
    duration_s: float
    path: str | None  # the checkpoint file, an upload's key (None: not known, the interposer did not see its writer)
    bytes: int  # written by the writer
    chunks: int  # its writes (an upload's: its send calls)
    parts: int | None  # an upload's parts (a single PUT: 1); None: a file's, or an inferred upload's
    gib_s: float | None
    startup: dict[str, float]  # start-up phase (saves.STARTUP_PHASES) -> seconds; {} when unknown
    startup_s: float | None  # startup's phases but first_chunk: to the first unit of work, less the wait for it
    gen_s: float | None  # the producer generating; None: not measured (no hooked gen, no hand-offs)
    gen_from: str | None  # "calls" (a hooked gen), "between hand-offs" (inferred: analysis.handoffs), None
    gen_cpu_s: float | None  # inferred generation: the producer's CPU seconds in it (None: no reading)
    put_wait_s: float | None  # the producer waiting on the full queue; None: no hooked put (not measured)
    free_wait_s: float | None  # the producer's hooked gets in its loop (a freed buffer, a reply); None: no put
    producer_loop_s: float | None  # Process.start()'s end to its last put: its fill and waits (None: no put)
    writer_loop_s: float | None  # its first wait for a chunk (or first work) to its last call (None: no call)
    get_wait_s: float | None  # the writer waiting for a chunk; None: no hooked get (not measured)
    write_s: float  # each phase's own time: less the hooked calls inside its calls (an fsync inside close)
    fadvise_s: float
    fsync_s: float
    close_s: float
    write_threads_s: float | None  # an upload's requests' times summed over its threads (write_s: their union)
    critical_path: dict[str, float]  # component (saves.COMPONENTS) -> seconds; with unexplained_s, the save
    unexplained_s: float
    bottleneck: str  # the group (saves.BOTTLENECK_GROUPS) of the most critical-path time
    bottleneck_s: float  # that group's critical-path seconds (saves.bound_by)
    upload: Upload | None  # the object it uploaded (None: a file's save)
    # "complete"; in a run cut short "interrupted" (bytes: those written before the cut; gib_s None)
    # or "unconfirmed" (its owner left no record after it): listed, not in the figures (ending.complete)
    status: str


class Throughput(TypedDict):
    saves: int
    bytes: int
    save_s: float  # all saves' durations summed
    mean_save_s: float | None
    gib_s: float | None  # bytes over save_s


class RankRow(TypedDict):
    host: str
    rank: int
    producer: int  # process row
    producer_pid: int
    saves: int
    mean_save_s: float
    slowest_save_s: float
    gib_s: float | None


class AggregateSave(TypedDict):
    save: int  # the n-th save of every rank
    ranks: int
    bytes: int  # summed over the ranks
    rank0: int  # the lowest rank present
    rank0_s: float  # its save's duration
    gib_s: float | None  # bytes over rank0_s, as the benchmark reports it
    span_s: float  # first rank's start to last rank's end
    span_gib_s: float | None


class Aggregate(TypedDict):
    saves: list[AggregateSave]
    mean_gib_s: float | None  # the mean of the saves' gib_s, as the benchmark averages them


class Straggler(TypedDict):
    save: int
    host: str
    rank: int  # the slowest rank of this save
    duration_s: float
    median_s: float  # the median rank's
    excess_s: float  # duration_s - median_s
    component: str  # the critical-path component most above the median rank's
    component_excess_s: float


class PlacementShape(TypedDict):
    """What of a rank's placement compares across ranks (analysis.binding.Host.shape)."""
    bound: bool  # fewer CPUs than its host's
    cpus: int
    cores: int
    nodes: int
    writers: str | None  # binding.WRITERS_*: their dominant worked node against their CPUs' nodes; None: not measured
    buffers: str | None  # binding.BUFFERS_*: their buffers' dominant node against the writers'; None: not measured


class RankPlacement(TypedDict):
    """A rank's writers with the same CPUs and nodes."""
    rank: int | None
    writers: int  # how many
    cpus: list[int]  # their allowed CPUs
    nodes: list[int]  # the nodes of those CPUs
    writer_node: int | None  # their dominant worked node
    buffer_node: int | None  # their buffers' dominant node
    shape: PlacementShape


class SharedCpus(TypedDict):
    cpus: list[int]
    ranks: list[int]  # the bound ranks whose writers were all given them


class HostPlacement(TypedDict):
    ranks: list[RankPlacement]  # by rank
    differs: list[str]  # the binding.ASPECTS in which the shapes of its ranks are not all alike
    shared: list[SharedCpus]


class Placement(TypedDict):
    hosts: dict[str, HostPlacement]  # hosts with writers
    consistent: bool  # on every host one shape for every rank's writers, and no CPU shared by bound ranks
    hosts_alike: bool  # the hosts have the same topology


class _Diagnosis(TypedDict):
    code: str  # diagnoses.CODES says what it means
    severity: str  # "warning" or "info"
    host: str | None
    pid: int | None
    rank: int | None
    message: str
    evidence: dict[str, Any]  # the numbers it was computed from, per code


class Fix(TypedDict):
    """One action that removes (part of) a warning's cause (analysis.fixes)."""
    id: str  # the fix's identity: a list of fixes holds each once
    what: str  # what to change, in the target's terms
    where: str  # the file, command line or setting it is changed in
    recovery_s: float | None  # seconds per save it wins back (None: neither the run nor a what-if says)
    recovery: str | None  # "estimated" (from the run) | "measured" (by a contrast what-if or the reference)
    recovery_ci95_s: list[float] | None  # measured: its 95% interval
    measured_by: str | None  # measured: the contrast method that measured it
    capped_from_s: float | None  # the recovery before it was capped at a measured difference (None: not capped)
    modules: list[str]  # the modules it preloads or moves (set_forkserver_preload's list exactly), else []


class Diagnosis(_Diagnosis, total=False):
    cost_s: float | None  # seconds of save time on the critical path, where it has one; None: a
    # placement warning whose cost only contrast's what-ifs measure, not run
    cost_from: str | None  # in contrast.json's placement_costs: the what-if that measured cost_s
    fix: list[Fix]  # warnings with a cause: what to do about it, the likeliest first


class Binding(TypedDict):
    """A rank whose producer started bound to part of its host (analysis.binding)."""
    host: str
    rank: int
    pid: int
    cpus: list[int]  # the producer's CPUs at its start: the launcher's binding
    host_cpus: int  # CPUs of its host
    writers_inherit: bool  # every writer started with those same CPUs
    writer_cpus: list[list[int]]  # the distinct masks its writers started with


class WriterMemory(TypedDict):
    memory: MemoryBinding
    bound: bool | None  # as RankBinding's memory_bound


class RankBinding(TypedDict):
    """A rank's CPU and memory binding at its start, and whether its writers
    inherited it (analysis.binding.per_host). A rank: a producer."""
    rank: int  # -1 without MPI
    pid: int
    cpus: list[int]  # its allowed CPUs when it started its last writer (at its start where it started none)
    started_cpus: list[int]  # those it started with (the launcher's binding)
    cpus_bound: bool  # fewer than its host's
    cpu_nodes: list[int]  # the nodes of those CPUs
    memory: MemoryBinding | None  # None: not recorded (a run from before it, a rank the probe was not in)
    memory_bound: bool | None  # a policy that names nodes, or a cpuset of fewer nodes than the host's; None: not recorded
    writers: int  # its writers seen
    writers_inherit_cpus: bool | None  # every writer started with its CPUs; None: no writer
    writers_inherit_memory: bool | None  # ... with its memory binding; None: no writer, or not recorded
    writer_cpus: list[list[int]]  # the CPUs its writers started with, where any differ from its own
    writer_memory: list[WriterMemory]  # ... their memory bindings, where any differ


class HostBinding(TypedDict):
    host: str
    cpus: int  # the host's
    nodes: list[int]  # the host's
    ranks: list[RankBinding]


class NumaSave(TypedDict):
    """One save's NUMA counter deltas (analysis.numa_activity); None: not measured."""
    save: int
    host: str
    rank: int | None
    host_counters: dict[str, int] | None  # /proc/vmstat's numa_* and pgmigrate_* over the save
    producer_counters: dict[str, int] | None  # its /proc/PID/sched numa_pages_migrated
    writer_counters: dict[str, int] | None  # the same, since the writer started


class NumaActivity(TypedDict):
    numa_balancing: dict[str, int | None]  # host -> kernel.numa_balancing (None: no such setting)
    during_saves: dict[str, dict[str, int] | None]  # host -> its counters' deltas while any save ran
    saves: list[NumaSave]


class Summary(TypedDict):
    schema: str  # "writerprof.summary/1"
    world: World  # the job's ranks and hosts, and whether this run holds them all (first: it says what the rest is of)
    run: RunInfo
    topology: dict[str, HostTopology]  # per host
    clocks: dict[str, ClockAlignment]  # per host
    processes: list[Process]  # in row order
    saves: list[Save]  # in start order
    throughput: Throughput
    ranks: list[RankRow]
    aggregate: Aggregate
    stragglers: list[Straggler]  # per save index with two ranks or more
    placement: Placement
    diagnoses: list[Diagnosis]  # warnings first, then by cost
    binding: list[Binding]  # ranks bound by their launcher, by rank
    host_binding: list[HostBinding]  # every rank's CPU and memory binding, per host (the report's first lines)
    ranks_per_host: list[RankPerHost]
    process_groups: list[ProcessGroup]
    save_indices: list[SaveIndex]
    affinity: AffinityProcesses | AffinityBins | None  # None: no sampler readings
    buffer_placement: PlacementPerSave | PlacementPerNode
    chunk_timeline: ChunkTimeline
    numa_activity: NumaActivity
    stalls: Stalls  # record --stall's snapshots, each with the waits it names
