"""The shapes of what the analysis returns, written down once: the summary
(`writerprof.summary/1`, what `report --json` prints), the comparison
(`writerprof.compare/1`) and the contrast result (`writerprof.contrast/1`).

They are TypedDicts, so the objects stay plain dicts (and plain JSON); a field
is one line here. Units are in the names: `_s` seconds (on the recording
host's time line where a time of day), `_ns` nanoseconds on the process's
host's monotonic clock, `gib_s` GiB per second, `share` a fraction of 1.
Node numbers are strings where they are keys ({node: share}: JSON keys are
strings), integers elsewhere. `mismatches` checks a real object against its
shape, recursively (the unit tests run it on real summaries, so this
description cannot drift from the code).
"""

from __future__ import annotations

import types
import typing
from typing import Any, TypedDict, Union

# ---- the summary: writerprof.summary/1 -------------------------------------------------------


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
    allowed_nodes: list[int]
    affinity_changes: list[AffinityChange]  # seen by the sampler during its life
    samples: int  # the sampler's readings of it
    cpu_nodes: dict[str, float]  # node -> share of the sampler's readings
    work_nodes: dict[str, float]  # node -> share of its work calls' time (write, gen)
    worked_nodes: dict[str, float]  # work_nodes, else cpu_nodes: what reports and diagnoses read
    worked_nodes_from: str | None  # which of the two worked_nodes is (processes.WORKED_FROM_*)
    buffer_nodes: dict[str, float]  # node -> share of the pages of the buffers it created or attached
    minflt: int | None  # minor page faults
    majflt: int | None
    nonvoluntary_switches: int | None  # preemptions
    voluntary_switches: int | None
    cpu_s: float | None  # user + system
    threads_max: int | None  # the most threads the sampler saw


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
    bytes: int  # written by the writer
    chunks: int  # its writes
    gib_s: float | None
    startup: dict[str, float]  # start-up phase (saves.STARTUP_PHASES) -> seconds; {} when unknown
    startup_s: float | None  # Process.start() to the first write
    gen_s: float  # the producer generating
    put_wait_s: float  # the producer waiting on the full queue
    get_wait_s: float  # the writer waiting for a chunk
    write_s: float
    fadvise_s: float
    fsync_s: float
    close_s: float
    critical_path: dict[str, float]  # component (saves.COMPONENTS) -> seconds; with unexplained_s, the save
    unexplained_s: float
    bottleneck: str  # the group (saves.BOTTLENECK_GROUPS) of the most critical-path time


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


class HostPlacement(TypedDict):
    writer_cpus: list[list[int]]  # the distinct allowed CPUs of the host's writers
    writer_node: list[int | None]  # their distinct dominant worked nodes
    buffer_node: list[int | None]  # their buffers' distinct dominant nodes


class Placement(TypedDict):
    hosts: dict[str, HostPlacement]  # hosts with writers
    consistent: bool  # every host's writers alike
    hosts_alike: bool  # the hosts have the same topology


class _Diagnosis(TypedDict):
    code: str  # diagnoses.CODES says what it means
    severity: str  # "warning" or "info"
    host: str | None
    pid: int | None
    rank: int | None
    message: str
    evidence: dict[str, Any]  # the numbers it was computed from, per code


class Diagnosis(_Diagnosis, total=False):
    cost_s: float  # seconds of save time on the critical path, where it has one


class Binding(TypedDict):
    """A rank whose producer started bound to part of its host (analysis.binding)."""
    host: str
    rank: int
    pid: int
    cpus: list[int]  # the producer's CPUs at its start: the launcher's binding
    host_cpus: int  # CPUs of its host
    writers_inherit: bool  # every writer started with those same CPUs
    writer_cpus: list[list[int]]  # the distinct masks its writers started with


class Stats(TypedDict):
    mean: float
    min: float
    max: float


class RankPerHost(TypedDict):
    host: str
    ranks: int  # ranks on that host
    mean_save_s: float | None
    slowest_save_s: float | None
    slowest_rank: int | None


class ProcessGroup(TypedDict):
    """The processes of one (host, role), as the tables of a many-rank run show them (analysis.groups)."""
    host: str
    role: str
    count: int
    ranks: list[int]
    start_methods: list[str]
    masks: int  # distinct allowed-CPU masks among them
    allowed_cpus: list[int] | None  # the one mask, when masks == 1
    allowed_nodes: list[int]
    spanning: int  # of them allowed on more than one node
    worked_nodes: dict[str, float]  # mean of their worked_nodes shares
    buffer_nodes: dict[str, float]  # mean of their buffers' page shares
    minflt: Stats | None
    nonvoluntary_switches: Stats | None
    cpu_s: Stats | None


class Slowest(TypedDict):
    rank: int | None
    host: str
    duration_s: float


class SaveIndex(TypedDict):
    """One save index across ranks (analysis.groups): mean/min/max of each column."""
    save: int
    ranks: int
    startup_s: Stats | None
    main_rerun_s: Stats | None
    gen_s: Stats | None
    put_wait_s: Stats | None
    get_wait_s: Stats | None
    write_s: Stats | None
    fsync_s: Stats | None
    duration_s: Stats | None
    gib_s: Stats | None
    slowest: Slowest
    bottleneck: str | None  # the component most of its ranks' saves were bound by


class AffinityRow(TypedDict):
    """A process's sampler readings, for runs of few processes (analysis.affinity)."""
    id: int  # its row in processes
    save: int | None
    allowed: list  # [[from_s, to_s, [[first_cpu, last_cpu, node]]]]
    writers: list  # [[created_s, stop_s, save]] of a producer's writers
    t_s: list[float]
    cpu: list[int]
    node: list[int]  # -1: no known node
    host_nodes: list[int]
    cpus: list[int]


class AffinityProcesses(TypedDict):
    end_s: float
    rows: list[AffinityRow]


class AffinityGroup(TypedDict):
    host: str
    role: str
    count: int
    masks: int
    allowed_cpus: list[int] | None
    allowed_nodes: list[int]
    spanning: int
    counts: list[list[int]]  # per node lane (then "no known node"): readings per time bin; [] for none
    alive: list[int]  # processes alive per time bin


class AffinityBins(TypedDict):
    """Past the per-process limit: readings counted per (host, role) and time bin."""
    end_s: float
    centres: list[float]  # the bins' mid times, seconds
    nodes: list[int]
    processes: int
    groups: list[AffinityGroup]


class BufferReading(TypedDict):
    index: int | str
    nodes: dict[str, float]  # node -> pages (scaled from the sample)
    unfaulted: float


class SavePlacement(TypedDict):
    save: int
    host: str
    rank: int | None
    producer: int
    writer_node: int | None
    writer_share: float
    buffers: list[BufferReading]


class PlacementPerSave(TypedDict):
    unit: str
    saves: list[SavePlacement]


class PlacementGroup(TypedDict):
    host: str
    writer_node: int | None
    saves: int
    buffers: int
    shares: dict[str, float]  # node ("-1": not faulted in) -> share of pages
    local: float | None  # share of pages on the writer's node


class PlacementPerNode(TypedDict):
    """Past MAX_BUFFER_BARS buffers: per (host, writer node)."""
    unit: str
    groups: list[PlacementGroup]


class Pick(TypedDict):
    what: str  # slowest / median / fastest
    producer: int
    mean_save_s: float


class TimelinePair(TypedDict):
    producer: int
    producer_spans: dict[str, list]  # phase -> [[from_s, seconds]]
    writer_spans: dict[str, list]  # start-up phase or call -> [[from_s, seconds]]
    saves: list  # [[start_s, save]]


class ChunkTimeline(TypedDict):
    """The representative producer/writer pairs' spans on the run's one time axis (analysis.timeline)."""
    producers: int
    picked: list[Pick] | None  # None: every producer is drawn
    pairs: list[TimelinePair]


class Summary(TypedDict):
    schema: str  # "writerprof.summary/1"
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
    ranks_per_host: list[RankPerHost]
    process_groups: list[ProcessGroup]
    save_indices: list[SaveIndex]
    affinity: AffinityProcesses | AffinityBins | None  # None: no sampler readings
    buffer_placement: PlacementPerSave | PlacementPerNode
    chunk_timeline: ChunkTimeline


# ---- the comparison: writerprof.compare/1 ---------------------------------------------------


class MeanSave(TypedDict):
    duration_s: float  # mean
    components: dict[str, float]  # component -> mean seconds


class SidePlacement(TypedDict):
    writer_cpus: list[list[int]]  # distinct allowed CPUs
    producer_cpus: list[list[int]]
    writer_nodes: dict[str, float]  # mean worked-node shares
    buffer_nodes: dict[str, float]  # mean buffer-page shares of the producers
    writer_parent: list[str | None]  # distinct roles of the writers' parents


class Kernel(TypedDict):
    writer_faults_per_gib: float | None  # minor faults per GiB saved
    producer_faults_per_gib: float | None
    writer_switches_per_save: float | None  # preemptions
    producer_switches_per_save: float | None


class Side(TypedDict):
    name: str  # what the comparison calls it (a start method, by default)
    runs: list[str]  # run paths, one per summary pooled
    start_methods: list[str]
    python: list[str]
    saves: int  # pooled over the runs
    mean_save_s: float
    bytes_per_save: float
    gib_s: float | None
    components: dict[str, float]  # component -> mean seconds per save
    unexplained_s: float  # mean per save
    startup: dict[str, float]  # start-up phase -> mean seconds
    per_save: dict[int, MeanSave]  # save order within its producer -> mean
    per_rank: dict[int, MeanSave]
    aggregate_gib_s: float | None  # the runs' mean aggregate rate
    placement: SidePlacement
    kernel: Kernel
    diagnoses: list[str]  # the warnings' codes
    main: str | None  # the __main__ the writers re-ran, if main-reimport fired


class RankDiff(TypedDict):
    rank: int
    a_s: float  # mean save time
    b_s: float
    diff_s: float
    top: str  # the component that changed the most
    top_s: float


class ComponentDiff(TypedDict):
    name: str
    label: str  # for tables
    description: str  # for sentences
    a_s: float  # mean seconds per save
    b_s: float
    diff_s: float
    share: float | None  # of difference_s


class SaveDiff(TypedDict):
    save: int
    a_s: float
    b_s: float
    diff_s: float
    components: dict[str, float]  # component -> B's seconds minus A's


class ThroughputChange(TypedDict):
    a_gib_s: float | None
    b_gib_s: float | None
    change: float | None  # b over a, minus 1


class Comparison(TypedDict):
    schema: str  # "writerprof.compare/1"
    a: Side
    b: Side
    per_rank: list[RankDiff]
    throughput: ThroughputChange
    difference_s: float  # B's mean save time minus A's: the components and unexplained_s sum to it
    components: list[ComponentDiff]  # in saves.COMPONENTS order
    unexplained_s: float
    per_save: list[SaveDiff]  # saves matched by their order
    verdict: str


# ---- the contrast: writerprof.contrast/1 ----------------------------------------------------


class ContrastRun(TypedDict):
    method: str
    repeat: int  # from 1
    path: str
    saves: int
    gib_s: float | None


class WhatIf(TypedDict):
    method: str  # forkserver+preload, forkserver+pin
    ran: bool
    reason: str | None  # why it was not run
    gib_s: float | None  # its throughput, when it ran and is not the reference
    recovered_s: float | None  # seconds per save it won back of what plain forkserver lost
    recovered_share: float | None  # recovered_s over that loss


class ContrastResult(TypedDict):
    schema: str  # "writerprof.contrast/1"
    command: list[str]
    methods: list[str]  # the reference first
    repeat: int
    runs: list[ContrastRun]  # in the order recorded
    comparisons: dict[str, Comparison]  # method -> the reference against it
    what_ifs: list[WhatIf]
    verdict: str  # the first comparison's


# ---- checking an object against its shape ---------------------------------------------------


def mismatches(value, shape, where: str = "") -> list[str]:
    """Where value differs from shape: a key missing or extra in a TypedDict,
    recursively through lists, dict values and `| None`; one line each, named
    by its path (e.g. "saves[0].critical_path"). Types of plain values are
    not checked: the keys are what drifts."""
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if origin in (Union, types.UnionType):
        if value is None:
            return []
        # One of several shapes: the value is measured against the one it fits best.
        return min((mismatches(value, a, where) for a in args if a is not type(None)), key=len)
    if typing.is_typeddict(shape):
        if not isinstance(value, dict):
            return [f"{where or shape.__name__}: a {type(value).__name__}, not a {shape.__name__}"]
        fields = typing.get_type_hints(shape)
        name = where or shape.__name__
        found = [f"{name}: missing key {key!r} ({shape.__name__})"
                 for key in sorted(shape.__required_keys__ - set(value))]
        found += [f"{name}: extra key {key!r} (not in {shape.__name__})" for key in sorted(set(value) - set(fields))]
        for key in (key for key in fields if key in value):
            found += mismatches(value[key], fields[key], f"{where}.{key}" if where else key)
        return found
    if origin is list and args and isinstance(value, list):
        return [m for i, item in enumerate(value) for m in mismatches(item, args[0], f"{where}[{i}]")]
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return [m for key, item in value.items() for m in mismatches(item, args[1], f"{where}[{key!r}]")]
    return []
