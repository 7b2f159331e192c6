"""Diagnoses: each a pure function of the process table and the saves, firing
only on measured data, with the numbers it used as evidence and, where the
critical path gives one, its cost in seconds. Thresholds are named below.
A warning with a cause carries its fix (analysis.fixes): what to change,
where, and what it recovers where measured.

Each check declares the codes it reports next to it (@emits): their severity
and their meaning in one line, its thresholds in it. CODES collects them: the
one place that says what each code means (the notebooks show it from there).

Severity: "warning" costs throughput or is a hazard; "info" says what bounds
a run that is otherwise healthy (a checkpoint is meant to be I/O-bound).

The checks live by the kind of cause they find: placement, start-up, the
pipeline, the generator's size, CPU contention and the resource tracker
(base has what they share). CHECKS lists them in report order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from writerprof.analysis import fixes
from writerprof.analysis.diagnoses.base import INFO, SEVERITIES, WARNING, Code
from writerprof.analysis.diagnoses.contention import CONTENTION_FLOOR_S, CONTENTION_SHARE, cpu_contention
from writerprof.analysis.diagnoses.generation import IDLE_CPUS, generation_undersized
from writerprof.analysis.diagnoses.pipeline import (FAULTS_FLOOR, FAULTS_PER_PAGE, FSYNC_SHARE, IO_SHARE, QUEUE_SHARE,
                                                    WAIT_SHARE, fsync_bound, page_fault_storm, pipeline_balance)
from writerprof.analysis.diagnoses.migration import pages_migrated
from writerprof.analysis.diagnoses.placement import (MIGRATION_SHARE, NUMA_MAJORITY, affinity_divergence,
                                                     numa_mismatch, writer_migration)
from writerprof.analysis.diagnoses.stall import stalled
from writerprof.analysis.diagnoses.startup import (REIMPORT_SHARE, STARTUP_SHARE, fork_with_threads,
                                                   main_reimport, writer_startup)
from writerprof.analysis.diagnoses.tracker import attach_registered, leaked_at_exit, unlink_failed, unregister_unknown

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes import Diagnosis

CHECKS = (stalled, numa_mismatch, affinity_divergence, writer_migration, pages_migrated, writer_startup, main_reimport,
          fork_with_threads, pipeline_balance, generation_undersized, cpu_contention, page_fault_storm, fsync_bound,
          attach_registered, unlink_failed, leaked_at_exit, unregister_unknown)
# Every code, in the order of its check: code -> its Code (severities, meaning).
CODES: dict[str, Code] = {c.code: c for check in CHECKS for c in check.codes}


def diagnose(run, procs: list[dict], saves: list[dict], with_fixes: bool = True) -> list[Diagnosis]:
    """Every check's diagnoses, most severe and costly first; with_fixes: each
    warning's fix attached (a count of them, as record's summary, needs none)."""
    found = []
    for check in CHECKS:
        found += check(run, procs, saves)
    if with_fixes:
        fixes.attach(run, found, saves)
    order = {severity: i for i, severity in enumerate(SEVERITIES)}
    return sorted(found, key=lambda d: (order[d["severity"]], -(d.get("cost_s") or 0), d["code"]))


__all__ = ["CHECKS", "CODES", "Code", "SEVERITIES", "WARNING", "INFO", "diagnose",
           "NUMA_MAJORITY", "MIGRATION_SHARE", "STARTUP_SHARE", "REIMPORT_SHARE", "WAIT_SHARE", "IO_SHARE",
           "QUEUE_SHARE", "CONTENTION_SHARE", "CONTENTION_FLOOR_S", "FAULTS_PER_PAGE", "FAULTS_FLOOR",
           "FSYNC_SHARE", "IDLE_CPUS", *(check.__name__ for check in CHECKS)]
