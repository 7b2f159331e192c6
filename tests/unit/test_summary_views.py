"""The summary's views for the renderers, on synthetic runs: the chunk
timeline on the aligned time axis of a two-host run, buffer placement per
save and per writer node, the affinity samples and time bins, the groups per
(host, role) and per save index, and the start methods."""

import json

import numpy as np
import pytest

from writerprof.analysis import affinity, groups, placement, starts, timeline
from writerprof.analysis.clocks import host_offsets
from writerprof.analysis.summary import summarize
from writerprof.run import load
from writerprof.synthetic import MIB, Scenario, write_run

SMALL = dict(hosts=1, ranks_per_host=1, saves=3, chunks_per_save=8, chunk_size=4 * MIB, buffers=4, gen_s=0.004,
             write_s=0.008, fsync_s=0.05, interval_s=0.01, start_method="forkserver", buffer_node=0,
             writer_run_node=1)
TWO_HOSTS = dict(hosts=2, ranks_per_host=2, saves=3, chunks_per_save=6, start_method="forkserver",
                 main_rerun_s=0.2)
SCALE = dict(hosts=2, ranks_per_host=32, saves=10, chunks_per_save=4, start_method="forkserver", main_rerun_s=0.4,
             buffer_node=0, writer_run_node=1, remote_factor=1.5, jitter=0.1)

_cache: dict = {}


def recorded(tmp_path_factory, scenario: dict) -> tuple:
    key = repr(sorted(scenario.items()))
    if key not in _cache:
        run = load(write_run(tmp_path_factory.mktemp("synthetic"), Scenario(**scenario)))
        _cache[key] = run, summarize(run)
    return _cache[key]


def test_chunk_timeline_puts_both_hosts_on_the_recording_clock(tmp_path_factory):
    run, summary = recorded(tmp_path_factory, TWO_HOSTS)
    offsets = host_offsets(run)
    assert abs(offsets["host1"]) > 3_000e9  # an hour apart: unaligned spans would be off the plot
    found = summary["chunk_timeline"]
    assert found["picked"] is None and len(found["pairs"]) == 4 == found["producers"]
    codes = {name: code for code, name in run.phase_names.items()}
    origin = run.meta["started_ns"]
    for pair in found["pairs"]:
        proc = summary["processes"][pair["producer"]]
        # The first gen span is the producer's first gen record, moved by its host's offset.
        mine = run.chunks[(run.chunks["proc"] == pair["producer"]) & (run.chunks["phase"] == codes["gen"])]
        first = (int(mine["start_ns"][0]) + offsets[proc["host"]] - origin) / 1e9
        assert pair["producer_spans"]["gen"][0][0] == pytest.approx(first, abs=1e-9)
        # Save marks where the summary's saves start, on the one time line.
        mine_saves = [s for s in summary["saves"] if s["producer"] == pair["producer"]]
        assert [t for t, _ in pair["saves"]] == pytest.approx([s["start_s"] for s in mine_saves], abs=1e-6)
        every = [x for spans in (*pair["producer_spans"].values(), *pair["writer_spans"].values()) for x, _ in spans]
        assert 0 < min(every) and max(every) < 60
        # The producer's setup ends at Process.start(), where its writer's start-up begins.
        setup_ends = [x + w for x, w in pair["producer_spans"]["setup"]]
        assert setup_ends == pytest.approx([x for x, _ in pair["writer_spans"]["start"]], abs=1e-9)
        assert len(pair["writer_spans"]["main_rerun"]) == 3
        assert [w for _, w in pair["writer_spans"]["main_rerun"]] == pytest.approx([0.2] * 3, rel=0.2)


def test_chunk_timeline_representatives_are_the_slowest_median_and_fastest(tmp_path_factory):
    _, summary = recorded(tmp_path_factory, SCALE)
    chosen, picked = timeline.representatives(summary["saves"], max_pairs=4)
    means = {}
    for s in summary["saves"]:
        means.setdefault(s["producer"], []).append(s["duration_s"])
    ranked = sorted(means, key=lambda p: np.mean(means[p]))
    assert [p["what"] for p in picked] == ["slowest", "median", "fastest"]
    assert chosen == [ranked[-1], ranked[len(ranked) // 2], ranked[0]]
    assert summary["chunk_timeline"]["producers"] == 64
    assert [p["producer"] for p in summary["chunk_timeline"]["pairs"]] == chosen  # only these: bounded


def test_estimated_process_start_is_the_first_unit_of_work_less_the_startup():
    save = {"writer": 3, "startup": {"main_rerun": 0.2, "first_chunk": 0.05}}  # the wait for the first chunk too
    assert starts.estimated_start_ns(10_000_000_000, save) == pytest.approx(9_750_000_000)
    assert starts.estimated_start_ns(None, save) is None
    assert starts.estimated_start_ns(1, {"writer": None, "startup": {"main_rerun": 0.2}}) is None


def test_buffer_placement_per_save_and_per_writer_node(tmp_path_factory):
    run, summary = recorded(tmp_path_factory, SMALL)
    found = summary["buffer_placement"]
    assert found["unit"] == "pages" and [s["save"] for s in found["saves"]] == [1, 2, 3]
    for s in found["saves"]:
        assert (s["writer_node"], s["writer_share"]) == (1, 1.0)
        assert [b["nodes"] for b in s["buffers"]] == [{"0": pytest.approx(4 * MIB / 4096)}] * 4
    # Beyond max_bars buffers: one row per (host, writer node) with shares of the pages.
    at_scale = placement.buffer_placement(run, summary["processes"], summary["saves"], max_bars=4)
    (group,) = at_scale["groups"]
    assert (group["host"], group["writer_node"], group["saves"], group["buffers"]) == ("host0", 1, 3, 12)
    assert group["shares"]["0"] == pytest.approx(1.0) and group["local"] == 0
    # A summary without the readings falls back to the process rows' shares.
    shares = placement.from_shares(summary["processes"], summary["saves"])
    assert shares["unit"] == "share of pages" and len(shares["saves"]) == 3


def test_affinity_per_process_is_every_sampler_reading(tmp_path_factory):
    run, summary = recorded(tmp_path_factory, SMALL)
    found = summary["affinity"]
    procs = summary["processes"]
    assert len(found["rows"]) == len(affinity.shown(procs)) <= affinity.MAX_PROCESS_ROWS
    for row in found["rows"]:
        assert len(row["t_s"]) == len(row["cpu"]) == len(row["node"]) == len(row["busy"]) == procs[row["id"]]["samples"]
        assert all(n == (0 if cpu in range(0, 4) or cpu in range(8, 12) else 1)
                   for cpu, n in zip(row["cpu"], row["node"]))
    producer = next(r for r in found["rows"] if procs[r["id"]]["role"] == "producer")
    assert [save for _, _, save in producer["writers"]] == [1, 2, 3]


def test_affinity_at_scale_is_bounded_time_bins_per_host_and_role(tmp_path_factory):
    _, summary = recorded(tmp_path_factory, SCALE)
    found = summary["affinity"]
    assert "rows" not in found and len(found["centres"]) == affinity.TIME_BINS
    assert [(g["host"], g["role"]) for g in found["groups"]][:2] == [("host0", "producer"), ("host0", "writer")]
    for g in found["groups"]:
        shares = affinity.bin_shares(g["counts"])  # node lanes (and "no known node") x time bins
        assert shares.shape == (len(found["nodes"]) + 1, affinity.TIME_BINS)
        assert set(np.round(shares.sum(axis=0), 9)) <= {0.0, 1.0}
        assert 0 < max(g["alive"]) <= g["count"]
    writers = next(g for g in found["groups"] if g["role"] == "writer")
    assert writers["count"] == 320 and max(writers["alive"]) < 320  # they come and go, one save at a time
    assert writers["counts"][-1] == []  # no reading on no known node
    # The busy readings (CPU used since the one before): a writer works from its start to its exit.
    samples = sum(p["samples"] for p in summary["processes"] if (p["host"], p["role"]) == ("host0", "writer"))
    assert 0.7 * samples < sum(map(sum, writers["counts"])) <= samples
    assert len(json.dumps(found)) < 100_000


def test_groups_per_host_and_role_and_per_save_index(tmp_path_factory):
    _, summary = recorded(tmp_path_factory, SCALE)
    rows = summary["process_groups"]
    assert [(g["host"], g["role"], g["count"]) for g in rows[:2]] == [("host0", "producer", 32),
                                                                       ("host0", "writer", 320)]
    writers = rows[1]
    assert writers["ranks"] == list(range(32)) and writers["start_methods"] == ["forkserver"]
    assert next(iter(writers["worked_nodes"])) == "1"
    minflt = [p["minflt"] for p in summary["processes"] if p["host"] == "host0" and p["role"] == "writer"]
    assert writers["minflt"] == {"mean": pytest.approx(np.mean(minflt)), "min": min(minflt), "max": max(minflt)}
    indices = summary["save_indices"]
    assert [r["save"] for r in indices] == list(range(1, 11)) and {r["ranks"] for r in indices} == {64}
    first = [s for s in summary["saves"] if s["save"] == 1]
    assert indices[0]["duration_s"]["mean"] == pytest.approx(np.mean([s["duration_s"] for s in first]))
    assert indices[0]["slowest"]["duration_s"] == max(s["duration_s"] for s in first)
    assert groups.stats([None, 1, 3]) == {"mean": 2, "min": 1, "max": 3} and groups.stats([None]) is None


def test_start_methods_and_a_json_summary(tmp_path_factory):
    run, summary = recorded(tmp_path_factory, TWO_HOSTS)
    assert starts.start_methods(run) == summary["run"]["start_methods"] == ["forkserver"]
    json.dumps(summary)  # what report --json prints
