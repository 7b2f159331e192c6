"""The shapes of the views the renderers draw, in the summary (analysis.affinity,
placement, timeline, groups, ranks)."""

from __future__ import annotations

from typing import TypedDict


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
    bottleneck_s: Stats | None  # its critical-path seconds over the ranks' saves (saves.group_seconds)


class AffinityRow(TypedDict):
    """A process's sampler readings, for runs of few processes (analysis.affinity)."""
    id: int  # its row in processes
    save: int | None
    allowed: list  # [[from_s, to_s, [[first_cpu, last_cpu, node]]]]
    writers: list  # [[created_s, stop_s, save]] of a producer's writers
    t_s: list[float]
    cpu: list[int]
    node: list[int]  # -1: no known node
    busy: list[bool]  # it used CPU time since its previous reading (else: where it last ran, idle)
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
    counts: list[list[int]]  # per node lane (then "no known node"): busy readings per time bin; [] for none
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
    moved: float | None  # pages that left a node between its readings (None: fewer than two that compare)


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
