"""The comparison (writerprof.compare/1) and the contrast result
(writerprof.contrast/1)."""

from __future__ import annotations

from typing import TypedDict

from writerprof.analysis.shapes.summary import Diagnosis, Fix, World


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
    own: dict[str, float | None]  # component -> its hooked calls' mean seconds per save (None: no own calls)
    unexplained_s: float  # mean per save
    startup: dict[str, float]  # start-up phase -> mean seconds
    per_save: dict[int, MeanSave]  # save order within its producer -> mean
    per_rank: dict[int, MeanSave]
    aggregate_gib_s: float | None  # the runs' mean aggregate rate
    placement: SidePlacement
    kernel: Kernel
    diagnoses: list[str]  # the warnings' codes
    main: str | None  # the __main__ the writers re-ran, if main-reimport fired
    fix: list[CodedFix]  # the warnings' fixes, deduplicated


class CodedFix(Fix):
    code: str  # the warning it is the fix of


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
    ci95_s: list[float] | None  # [lo, hi]: 95% interval of diff_s (None: no spread to tell it by)
    significant: bool | None  # the interval excludes zero and diff_s is not negligible
    a_own_s: float | None  # the component's own duration (its hooked calls), mean per save
    b_own_s: float | None
    own_diff_s: float | None
    runs_needed: int | None  # a side of one run: runs a side to resolve diff_s (None: over repeats, or unknown)


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


class Spread(TypedDict):
    """How one side's units (repeats, or saves) vary by themselves."""
    count: int
    gib_s: list[float]  # each unit's throughput
    cv: float | None  # coefficient of variation of gib_s
    min_gib_s: float | None
    max_gib_s: float | None
    sd_s: float | None  # standard deviation of the units' mean save time (a run's: from its saves)


class Noise(TypedDict):
    unit: str  # "repeat" (both sides have several runs) or "run" (a side has one)
    a: Spread
    b: Spread
    sd_s: float | None  # the two sides' sd_s pooled
    effect_s: float  # the difference in mean save time
    have: int  # units on the smaller side
    needed: int | None  # units per side to resolve effect_s at sd_s (analysis.noise.needed)
    hides: bool  # repeats: needed > have; runs: the interval of effect_s includes zero
    message: str | None  # the warning, when hides


class Total(TypedDict):
    ci95_s: list[float] | None
    significant: bool | None


class VerdictDetail(TypedDict):
    heading: str  # "Other causes", "Offsets", "Noise", "Not distinguishable from noise", ...
    lines: list[str]


class Comparison(TypedDict):
    schema: str  # "writerprof.compare/1"
    a: Side
    b: Side
    per_rank: list[RankDiff]
    throughput: ThroughputChange
    difference_s: float  # B's mean save time minus A's: the components and unexplained_s sum to it
    components: list[ComponentDiff]  # in saves.COMPONENTS order
    writer_startup: ComponentDiff  # the start-up phases together (name "startup"; no own duration)
    unexplained_s: float
    total: Total  # the interval of difference_s
    per_save: list[SaveDiff]  # saves matched by their order
    noise: Noise
    causes: list[str]  # the components the verdict names as causes, largest first
    fix: list[CodedFix]  # what to do about the causes, from the slower side's warnings
    verdict: str  # at most three lines, "\n" between them: the difference, the top cause, the best fix
    details: list[VerdictDetail]  # what the verdict leaves out, under headings


class ContrastRun(TypedDict):
    method: str
    repeat: int  # from 1
    path: str
    saves: int
    gib_s: float | None
    world: World  # its job's ranks and hosts, and whether it holds them all


class WhatIf(TypedDict):
    method: str  # forkserver+preload, forkserver+guard, forkserver+pin, forkserver+local, forkserver+first-touch
    ran: bool
    reason: str | None  # why it was not run
    gib_s: float | None  # its throughput, when it ran and is not the reference
    recovered_s: float | None  # seconds per save it won back of what plain forkserver lost
    recovered_ci95_s: list[float] | None  # its 95% interval (plain forkserver's saves against the what-if's)
    recovered_share: float | None  # recovered_s over that loss
    modules: list[str] | None  # the modules it ran the advice with (preload, guard), else None


class ContrastNoise(TypedDict):
    sides: dict[str, Spread]  # method -> its repeats' spread
    warnings: list[str]  # per comparison whose noise hides its effect


class ContrastResult(TypedDict):
    schema: str  # "writerprof.contrast/1"
    command: list[str]
    methods: list[str]  # the reference first
    repeat: int
    runs: list[ContrastRun]  # in the order recorded
    comparisons: dict[str, Comparison]  # method -> the reference against it
    what_ifs: list[WhatIf]
    noise: ContrastNoise
    fix: list[CodedFix]  # the first comparison's, with recovery_s from the what-ifs that measured it
    placement_costs: list[Diagnosis]  # plain forkserver's numa-mismatch, affinity-divergence with cost_s
    verdict: str  # the first comparison's, its best fix with what the what-ifs measured
    details: list[VerdictDetail]  # the first comparison's, and the what-ifs not tested
