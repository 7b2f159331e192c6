"""Every diagnosis fires on a run that has its cause and stays quiet on one that
does not. The runs are synthetic (writerprof.synthetic: the files a recording
writes, made from a model of the pipeline) on a 2-node, 16-CPU topology."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from writerprof.analysis import diagnoses
from writerprof.analysis.diagnoses import base as diagnosis_base
from writerprof.analysis.summary import summarize
from writerprof.analysis.threads import STACKS_THREAD
from writerprof.run import load
from writerprof.run.loader import CPU_SAMPLES_DTYPE
from writerprof.synthetic import Scenario, make_topology, write_run

from test_diagnoses_tracker import TRACKER_CHECKS, TRACKER_CODES


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


def test_cpu_contention_the_runs_own(summary_of):
    """Threads that wait 30% of their time for one CPU the producers and writers share: the run's own."""
    summary = summary_of(producer_cpus="0", run_queue_share=0.3)
    over = found(summary, "cpu-contention")
    assert len(over) == 2 and {d["severity"] for d in over} == {"warning"}  # one a producer
    for d in over:
        ev = d["evidence"]
        assert ev["cpus"] == [0] and ev["share"] >= diagnoses.CONTENTION_SHARE and ev["own_share"] > 0.5
        assert d["cost_s"] == pytest.approx(ev["wait_s_per_save"] * ev["saves"])
        # Who waited: this producer's main thread and its writers (one a save); who held CPU 0.
        assert {(w["role"], w["side"]) for w in ev["waited"]} == {("producer", "producer"), ("writer", "writer")}
        assert [w["pids"] for w in ev["waited"] if w["role"] == "producer"] == [[d["pid"]]]
        assert {"producer", "writer"} <= {h["role"] for h in ev["held"]} and ev["others_s_per_save"] is None
        assert f"producer pid {d['pid']} (python3)" in d["message"] and "CPU 0 held by" in d["message"]
        assert "was not read" in d["message"]  # no host CPU times: others unknown


def test_cpu_contention_other_programs(tmp_path):
    """The same waits where the run's threads had CPUs to spare, and the host's were busy: info, naming them."""
    run = load(_synthetic(tmp_path, run_queue_share=0.3))
    (d,) = _contention(run)[:1]
    assert d["severity"] == "info" and d["evidence"]["others_s_per_save"] is None
    busy = _with_host_busy(run)
    for d in _contention(busy):
        ev = d["evidence"]
        assert d["severity"] == "info" and ev["own_share"] < 0.1 and len(ev["cpus"]) == 16
        assert ev["others_s_per_save"] > 10  # 16 busy CPUs, of which the run's threads used ~2
        assert "other programs (not recorded)" in d["message"] and "slowed by them, not by itself" in d["message"]


def test_cpu_contention_counts_no_probe_stack_thread_as_the_runs_own(tmp_path):
    """A stack thread of the probe's in each producer, on the producers' CPU
    all along: the run's own share and demand are what they were without it
    (the profiler's CPU is not the run wanting more CPUs)."""
    run = load(_synthetic(tmp_path, producer_cpus="0", run_queue_share=0.3))
    before = {d["pid"]: d["evidence"] for d in _contention(run)}
    t = run.threads
    producers = np.isin(t["pid"], list(before)) & (t["pid"] == t["tid"])
    stacks = t[producers].copy()
    stacks["tid"] += 1_000_000
    stacks["name"] = STACKS_THREAD
    stacks["cpu"] = 0
    # Busy and waiting the whole time it is read: CPU 0 wanted twice over.
    for field in ("utime_ns", "run_delay_ns"):
        stacks[field] = stacks["t_ns"] - stacks["t_ns"].min()
    with_stacks = dataclasses.replace(run, threads=np.concatenate([t, stacks]))
    after = {d["pid"]: d["evidence"] for d in _contention(with_stacks)}
    assert sorted(after) == sorted(before) and len(before) == 2
    for pid, ev in after.items():
        assert STACKS_THREAD.decode() in {h["name"] for h in ev["held"]}  # it held CPU 0: said so
        assert ev["own_share"] == pytest.approx(before[pid]["own_share"])
        assert ev["demand_cpus"] == pytest.approx(before[pid]["demand_cpus"])


def test_cpu_contention_is_silent_where_the_waits_do_not_cost(summary_of, tmp_path):
    # A few percent of the time waiting, as on a quiet machine: under the share.
    assert found(summary_of(run_queue_share=0.05), "cpu-contention") == []
    assert found(summary_of(**HEALTHY), "cpu-contention") == []
    # A run from before the readings (-1: not read) says nothing, however busy its CPUs.
    run = load(_synthetic(tmp_path, producer_cpus="0", run_queue_share=0.3))
    old = dataclasses.replace(run, threads=_unread(run.threads))
    assert _contention(run) and _contention(old) == []


def _synthetic(tmp_path, **fields):
    path = tmp_path / f"synthetic{len(list(tmp_path.iterdir()))}"
    write_run(path, Scenario(**fields))
    return path


def _contention(run) -> list[dict]:
    summary = summarize(run)
    return diagnoses.cpu_contention(run, summary["processes"], summary["saves"])


def _unread(threads):
    threads = threads.copy()
    threads["run_delay_ns"] = threads["nonvoluntary_ctxt"] = -1
    return threads


def _with_host_busy(run):
    """The run with host CPU times of every CPU busy all along, read every 50 ms."""
    ticks = np.arange(run.threads["t_ns"].min() - 10**8, run.threads["t_ns"].max() + 10**8, 50_000_000)
    cpus = np.zeros(len(ticks) * 16, CPU_SAMPLES_DTYPE)
    cpus["t_ns"] = np.repeat(ticks, 16)
    cpus["cpu"] = np.tile(np.arange(16), len(ticks))
    cpus["busy_ns"] = cpus["t_ns"]  # busy every nanosecond
    return dataclasses.replace(run, cpus=cpus)


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
              "fork_with_threads", "pipeline_balance", "cpu_contention", "page_fault_storm", "fsync_bound",
              "pages_migrated", "generation_undersized"}  # (generation_undersized: test_diagnoses_generation.py)
    tested |= {"stalled"}  # test_stall_waits.py
    tested |= set(TRACKER_CHECKS)  # test_diagnoses_tracker.py
    assert {check.__name__ for check in diagnoses.CHECKS} == tested


def test_every_code_has_a_test_here():
    tested = {"numa-mismatch", "affinity-divergence", "writer-migration", "writer-startup", "main-reimport",
              "fork-with-threads", "generation-bound", "writer-bound", "queue-stall", "cpu-contention",
              "page-fault-storm", "fsync-bound", "pages-migrated", "generation-undersized"}
    tested |= TRACKER_CODES  # test_diagnoses_tracker.py
    tested |= {"stall"}  # test_stall_waits.py
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
              dict(gen_s=0.005, write_s=0.05, producer_cpus="0", run_queue_share=0.3, faults_per_chunk=30000),
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
    # Every code was reported somewhere above; the resource tracker's, read from
    # journals no synthetic run has, in test_diagnoses_tracker.py; a stall, read
    # from a snapshot no synthetic run has, in test_stall_waits.py.
    assert seen == set(diagnoses.CODES) - TRACKER_CODES - {"stall"}


def test_a_severity_a_code_is_not_declared_with_is_refused():
    with pytest.raises(ValueError, match="fsync-bound is not declared with severity 'warning'"):
        diagnosis_base.diagnosis("fsync-bound", None, "m", {}, severity="warning")
