"""Every diagnosis fires on a run that has its cause and stays quiet on one that
does not. The runs are synthetic (writerprof.synthetic: the files a recording
writes, made from a model of the pipeline) on a 2-node, 16-CPU topology."""

from __future__ import annotations

import pytest

from writerprof.analysis import diagnoses
from writerprof.analysis.diagnoses import base as diagnosis_base
from writerprof.analysis.summary import summarize
from writerprof.run import load
from writerprof.synthetic import Scenario, make_topology, write_run


@pytest.fixture
def summary_of(tmp_path):
    def make(**fields) -> dict:
        path = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        write_run(path, Scenario(**fields))
        return summarize(load(path))

    return make


def found(summary, code) -> list[dict]:
    return [d for d in summary["diagnoses"] if d["code"] == code]


def roles(summary) -> dict[int, str]:
    return {p["pid"]: p["role"] for p in summary["processes"]}


NODE0 = make_topology()["nodes"]["0"]["cpus"]  # with SMT siblings: not 0-7
HEALTHY = dict(fsync_s=0.01)  # a fork run with nothing wrong, and no flush to speak of


def test_a_healthy_run_has_no_diagnosis(summary_of):
    summary = summary_of(**HEALTHY)
    assert summary["diagnoses"] == []
    assert len(summary["saves"]) == 6  # 2 ranks x 3 saves: there was something to judge


def test_numa_mismatch_names_the_writers_node_and_the_buffers_node(summary_of):
    summary = summary_of(buffer_node=0, writer_run_node=1)
    mismatches = found(summary, "numa-mismatch")
    writers = {p["pid"] for p in summary["processes"] if p["role"] == "writer"}
    assert {d["pid"] for d in mismatches} == writers  # every writer, and nothing else
    for d in mismatches:
        assert d["severity"] == "warning"
        assert d["evidence"]["run_node"] == 1 and d["evidence"]["run_nodes"] == {"1": 1.0}
        assert d["evidence"]["buffer_node"] == 0 and d["evidence"]["buffer_nodes"] == {"0": 1.0}
        assert "on node 1 (100% of its time)" in d["message"] and "on node 0 (100% of their pages)" in d["message"]


def test_numa_mismatch_stays_quiet_when_writer_and_buffers_share_a_node(summary_of):
    assert found(summary_of(buffer_node=1, writer_run_node=1), "numa-mismatch") == []


def test_numa_mismatch_needs_a_majority_on_each_side(summary_of):
    """A writer that moved halfway between nodes has no node it mostly ran on."""
    summary = summary_of(buffer_node=0, writer_run_node=1, migrate_to_node=0)
    assert found(summary, "numa-mismatch") == []
    assert found(summary, "writer-migration")


def test_affinity_divergence_names_both_masks_and_the_forkserver(summary_of):
    summary = summary_of(start_method="forkserver", producer_cpus=NODE0, writer_cpus_inherited="0-15")
    divergent = found(summary, "affinity-divergence")
    assert len(divergent) == 6 and {roles(summary)[d["pid"]] for d in divergent} == {"writer"}
    for d in divergent:
        assert d["evidence"]["producer_cpus"] == NODE0
        assert d["evidence"]["writer_cpus"] == list(range(16))
        assert d["evidence"]["inherited_from"] == "forkserver" and d["evidence"]["extra_nodes"] == [1]
        assert "node 1, which the producer is not bound to" in d["message"]


def test_affinity_divergence_stays_quiet_when_writers_inherit_the_producers_mask(summary_of):
    assert found(summary_of(start_method="fork", producer_cpus=NODE0), "affinity-divergence") == []


def test_writer_migration(summary_of):
    moved = found(summary_of(migrate_to_node=1), "writer-migration")
    assert len(moved) == 6
    assert all(set(d["evidence"]["nodes"]) == {"0", "1"} for d in moved)
    assert found(summary_of(**HEALTHY), "writer-migration") == []


def test_writer_startup_and_main_reimport_with_their_cost(summary_of):
    summary = summary_of(start_method="forkserver", main_rerun_s=0.8)
    (startup, _), (reimport, _) = found(summary, "writer-startup"), found(summary, "main-reimport")
    assert startup["evidence"]["phases_s"]["main_rerun"] == pytest.approx(0.8, rel=0.01)
    assert reimport["evidence"]["per_writer_s"] == pytest.approx(0.8, rel=0.01)
    assert reimport["evidence"]["python"] == summary["run"]["python"][0]
    assert reimport["evidence"]["main"].endswith("repro/main.py")
    # The cost is the re-run's time on the critical path of this producer's saves.
    mine = [s for s in summary["saves"] if s["producer_pid"] == reimport["pid"]]
    assert reimport["cost_s"] == pytest.approx(sum(s["critical_path"]["startup:main_rerun"] for s in mine))
    assert 0 < reimport["cost_s"] <= 3 * 0.8 + 1e-9
    assert summary["diagnoses"][0]["code"] in ("writer-startup", "main-reimport")  # the costliest first


def test_no_main_reimport_when_the_child_does_not_rerun_main(summary_of):
    for summary in (summary_of(start_method="forkserver", main_rerun_s=0.0), summary_of(**HEALTHY)):
        assert found(summary, "main-reimport") == [] and found(summary, "writer-startup") == []


def test_fork_with_threads(summary_of):
    forked = found(summary_of(fork_threads=3, **HEALTHY), "fork-with-threads")
    assert len(forked) == 2 and all(d["evidence"]["native_threads"] == 3 for d in forked)
    assert found(summary_of(start_method="forkserver", fork_threads=3), "fork-with-threads") == []


def test_generation_bound_and_writer_bound(summary_of):
    gen = summary_of(gen_s=0.05, write_s=0.005, **HEALTHY)
    assert len(found(gen, "generation-bound")) == 2 and found(gen, "writer-bound") == []
    io = summary_of(gen_s=0.005, write_s=0.05, **HEALTHY)
    (bound, _) = found(io, "writer-bound")
    assert found(io, "generation-bound") == []
    assert bound["severity"] == "info" and "I/O-bound" in bound["message"]


def test_queue_stall(summary_of):
    stalled = summary_of(gen_s=0, write_s=0, fsync_s=0, chunk_size=4096, chunks_per_save=2000)
    (stall, _) = found(stalled, "queue-stall")
    assert stall["cost_s"] >= diagnoses.QUEUE_SHARE * sum(s["duration_s"] for s in stalled["saves"]) / 2
    assert found(summary_of(**HEALTHY), "queue-stall") == []


def test_cpu_oversubscription(summary_of):
    (over,) = found(summary_of(producer_cpus="0", involuntary_per_s=1000), "cpu-oversubscription")
    assert over["evidence"]["allowed_cpus"] == [0] and over["evidence"]["cpu_demand"] > 0.95
    assert over["evidence"]["preemptions_per_cpu_s"] >= diagnoses.PREEMPTIONS_PER_CPU_S
    # Preempted often but with CPUs to spare, or saturated but rarely preempted: no.
    assert found(summary_of(involuntary_per_s=1000), "cpu-oversubscription") == []
    assert found(summary_of(producer_cpus="0"), "cpu-oversubscription") == []


def test_page_fault_storm(summary_of):
    storm = found(summary_of(faults_per_chunk=30000), "page-fault-storm")
    assert len(storm) == 6 and all(d["evidence"]["faults_per_page"] > diagnoses.FAULTS_PER_PAGE for d in storm)
    assert found(summary_of(**HEALTHY), "page-fault-storm") == []


def test_fsync_bound(summary_of):
    (bound, _) = found(summary_of(fsync_s=2.0), "fsync-bound")
    assert bound["severity"] == "info" and bound["cost_s"] == pytest.approx(3 * 2.0, rel=0.05)
    assert found(summary_of(**HEALTHY), "fsync-bound") == []


def test_pages_migrated_when_balancing_moved_the_writers_pages(summary_of):
    (moved,) = found(summary_of(pages_migrated_per_save=100, **HEALTHY), "pages-migrated")
    assert moved["severity"] == "info" and moved["host"] == "host0"
    evidence = moved["evidence"]
    assert evidence["numa_balancing"] == 1 and evidence["own_pages_migrated"] == 6 * 100  # 6 writers
    assert evidence["host_pages_migrated"] == 6 * 100 and evidence["saves_with_migrations"] == 6
    assert "kernel.numa_balancing=1" in moved["message"] and "600 pages migrated" in moved["message"]
    assert found(summary_of(**HEALTHY), "pages-migrated") == []  # balancing off: no reading, no code


def test_placement_warnings_have_no_cost_but_say_how_to_measure_it(summary_of):
    summary = summary_of(buffer_node=0, writer_run_node=1)
    for d in found(summary, "numa-mismatch"):
        assert d["cost_s"] is None
        assert d["message"].endswith("writerprof contrast --methods forkserver,forkserver+local -- CMD")


def test_every_check_has_a_test_here():
    tested = {"numa_mismatch", "affinity_divergence", "writer_migration", "writer_startup", "main_reimport",
              "fork_with_threads", "pipeline_balance", "cpu_oversubscription", "page_fault_storm", "fsync_bound",
              "pages_migrated"}
    assert {check.__name__ for check in diagnoses.CHECKS} == tested


def test_every_code_has_a_test_here():
    tested = {"numa-mismatch", "affinity-divergence", "writer-migration", "writer-startup", "main-reimport",
              "fork-with-threads", "generation-bound", "writer-bound", "queue-stall", "cpu-oversubscription",
              "page-fault-storm", "fsync-bound", "pages-migrated"}
    assert set(diagnoses.CODES) == tested


def test_each_code_is_declared_once_with_a_one_line_meaning():
    declared = [c for check in diagnoses.CHECKS for c in check.codes]
    assert len(declared) == len(diagnoses.CODES)  # no code declared by two checks
    for code in declared:
        assert code.severities and set(code.severities) <= set(diagnoses.SEVERITIES)
        assert code.meaning and "\n" not in code.meaning and len(code.meaning) <= 240
    # The thresholds in the meanings are the ones the checks use.
    assert f"≥ {diagnoses.FSYNC_SHARE:.0%} of the save time" in diagnoses.CODES["fsync-bound"].meaning


# A run for every code: each check may report only the codes it declares.
EVERY_CODE = (dict(buffer_node=0, writer_run_node=1, fsync_s=2.0), dict(migrate_to_node=1, pages_migrated_per_save=10),
              dict(start_method="forkserver", main_rerun_s=0.8, producer_cpus=NODE0, writer_cpus_inherited="0-15"),
              dict(fork_threads=3, gen_s=0.05, write_s=0.005, **HEALTHY),
              dict(gen_s=0.005, write_s=0.05, producer_cpus="0", involuntary_per_s=1000, faults_per_chunk=30000),
              dict(gen_s=0, write_s=0, fsync_s=0, chunk_size=4096, chunks_per_save=2000))


def test_each_check_reports_only_the_codes_it_declares(tmp_path):
    seen = set()
    for i, fields in enumerate(EVERY_CODE):
        write_run(tmp_path / f"run{i}", Scenario(**fields))
        run = load(tmp_path / f"run{i}")
        summary = summarize(run)
        for check in diagnoses.CHECKS:
            declared = {c.code: c.severities for c in check.codes}
            for d in check(run, summary["processes"], summary["saves"]):
                assert d["code"] in declared, f"{check.__name__} reports {d['code']}, which it does not declare"
                assert d["severity"] in declared[d["code"]]
                seen.add(d["code"])
    assert seen == set(diagnoses.CODES)  # every code was reported somewhere above


def test_a_severity_a_code_is_not_declared_with_is_refused():
    with pytest.raises(ValueError, match="fsync-bound is not declared with severity 'warning'"):
        diagnosis_base.diagnosis("fsync-bound", None, "m", {}, severity="warning")
