"""Where a process worked, judged by its work in each save's window
(work_windows, processes.with_work), never its start-up: on synthetic runs
(writerprof.synthetic: the files a recording writes, 2 nodes x 8 CPUs, the
buffers on node 1) whose per-thread readings are then put where the case
needs them: a producer's heavy start-up on one node and its fill on the
other, a writer's start-up (its re-run of __main__ under spawn) on one node
and its writes on the other. Both ways: no numa-mismatch where the work ran
with its buffers, a numa-mismatch where it did not, whatever the start-up."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from writerprof.analysis import saves, threads, work_windows
from writerprof.analysis.processes import WORKED_FROM_THREADS, dominant, shares
from writerprof.analysis.samples import thread_rows
from writerprof.analysis.summary import summarize
from writerprof.probes.writerprof_probe.format import SHM_OPS
from writerprof.run import load
from writerprof.synthetic import Scenario, make_topology, write_run

NODE = {node: make_topology()["nodes"][str(node)]["cpus"][0] for node in (0, 1)}  # a CPU of each node
STARTUP_S = 1.0  # CPU seconds the producer's start-up is made to take: most of its life's
# The fill as the probe saw it: a hooked gen call; inferred between hand-offs; neither.
FILLS = ("", "gen", "gen,put")


@pytest.fixture
def recorded(tmp_path):
    def make(**fields):
        path = tmp_path / f"run{len(list(tmp_path.iterdir()))}"
        write_run(path, Scenario(ranks_per_host=1, saves=2, chunks_per_save=8, buffer_node=1, **fields))
        run = load(path)
        return run, saves.find(run)

    return make


def placed(run, row: int, until_ns: int, before_node: int, after_node: int, extra_s: float = 0.0):
    """The run with row's thread readings up to until_ns on before_node, the
    rest on after_node; extra_s more CPU time in its first reading (a longer start-up)."""
    t = run.threads.copy()
    mine = thread_rows(run) == row
    early = mine & (t["t_ns"] <= until_ns)
    t["cpu"][early], t["cpu"][mine & ~early] = NODE[before_node], NODE[after_node]
    t["utime_ns"][mine] += int(extra_s * 1e9)  # cumulative: only its first reading grows
    return dataclasses.replace(run, threads=t)


def process(summary, role: str) -> dict:
    return next(p for p in summary["processes"] if p["role"] == role)


def mismatches(summary, role: str) -> list[dict]:
    pids = {p["pid"] for p in summary["processes"] if p["role"] == role}
    return [d for d in summary["diagnoses"] if d["code"] == "numa-mismatch" and d["pid"] in pids]


def whole_life(run, row: int) -> dict[str, float]:
    """Where the row's threads used their CPU time over its whole life."""
    return shares(threads.worked(run, [])[row]["nodes"])


def spans_of(run, found, row) -> list[tuple[int, int]]:
    rows, starts, ends = (np.concatenate(column) for column in zip(*work_windows.spans(run, found)))
    return sorted(zip(starts[rows == row].tolist(), ends[rows == row].tolist()))


def calls_of(run, row, phase) -> list[tuple[int, int]]:
    c = run.chunk_columns
    code = {name: code for code, name in run.phase_names.items()}[phase]
    mine = (c["proc"] == row) & (c["phase"] == code)
    return list(zip(c["start_ns"][mine].tolist(), c["end_ns"][mine].tolist()))


def test_hooked_the_spans_are_the_fill_and_the_writes(recorded):
    run, found = recorded()
    producer = found[0]["producer"]
    assert spans_of(run, found, producer) == calls_of(run, producer, "gen")
    for save in found:
        assert spans_of(run, found, save["writer"]) == calls_of(run, save["writer"], "write")


def test_an_unhooked_fill_runs_from_the_writers_start_to_the_last_hand_off(recorded):
    run, found = recorded(unhooked="gen")
    started = [e["data"]["end_ns"] for e in run.events_of("process_start")]
    puts = calls_of(run, found[0]["producer"], "put")
    last_put = [max(end for start, end in puts if save["start_ns"] <= start <= save["end_ns"]) for save in found]
    assert spans_of(run, found, found[0]["producer"]) == list(zip(started, last_put))


def test_without_hand_offs_the_fill_is_the_window_from_the_buffers_creation_to_the_writers_close(recorded):
    run, found = recorded(unhooked="gen,put")
    created = run.shm["t_ns"][run.shm["op"] == SHM_OPS["create"]].tolist()
    closes = [calls_of(run, save["writer"], "close")[-1][1] for save in found]
    assert spans_of(run, found, found[0]["producer"]) == list(zip(created[::Scenario().buffers], closes))
    assert all(close < save["end_ns"] for close, save in zip(closes, found))  # not the writer's exit


@pytest.mark.parametrize("unhooked", FILLS)
def test_a_producers_start_up_on_another_node_than_its_fill_is_no_mismatch(recorded, unhooked):
    """Start-up on node 0, most of its CPU time; the fill on node 1, with the buffers."""
    run, found = recorded(unhooked=unhooked)
    producer = found[0]["producer"]
    run = placed(run, producer, found[0]["start_ns"], 0, 1, STARTUP_S)
    assert dominant(whole_life(run, producer))[0] == 0  # over its whole life: node 0
    summary = summarize(run)
    assert process(summary, "producer")["worked_nodes"] == {"1": 1.0}
    assert process(summary, "producer")["worked_nodes_from"] == WORKED_FROM_THREADS
    assert mismatches(summary, "producer") == []


@pytest.mark.parametrize("unhooked", FILLS)
def test_a_fill_on_another_node_than_its_buffers_is_a_mismatch_whatever_its_start_up(recorded, unhooked):
    """Start-up on node 1 with the buffers, most of its CPU time; the fill on node 0."""
    run, found = recorded(unhooked=unhooked)
    producer = found[0]["producer"]
    run = placed(run, producer, found[0]["start_ns"], 1, 0, STARTUP_S)
    assert dominant(whole_life(run, producer))[0] == 1
    (mismatch,) = mismatches(summarize(run), "producer")
    assert mismatch["evidence"]["run_node"] == 0 and mismatch["evidence"]["buffer_node"] == 1
    assert "generated on node 0 (100% of its time)" in mismatch["message"]


def _attached(run, writer) -> int:
    return int(run.shm["t_ns"][(run.shm["proc"] == writer) & (run.shm["op"] == SHM_OPS["attach"])].min())


@pytest.mark.parametrize("startup, writes, flagged", [(0, 1, False), (1, 0, True)])
def test_a_writer_is_judged_by_its_writes_not_its_start_up(recorded, startup, writes, flagged):
    """Spawn writers re-running a heavy __main__ on one node, then writing on another."""
    run, found = recorded(start_method="spawn", main_rerun_s=0.5)
    for save in found:
        run = placed(run, save["writer"], _attached(run, save["writer"]), startup, writes)
    summary = summarize(run)
    writers = [p for p in summary["processes"] if p["role"] == "writer"]
    assert len(writers) == 2 and all(p["worked_nodes"] == {str(writes): 1.0} for p in writers)
    assert len(mismatches(summary, "writer")) == (2 if flagged else 0)
