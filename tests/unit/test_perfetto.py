"""The Perfetto export, and the sampler rows it counts on: samples go to the
process alive then; many hosts share one time line."""

from collections import defaultdict

import pytest

from test_run_load import sample, write_journal, write_meta, write_samples
from writerprof.analysis.clocks import host_offsets
from writerprof.analysis.samples import sample_rows
from writerprof.exports import perfetto
from writerprof.run import load
from writerprof.synthetic import MIB, Scenario, write_run


def test_samples_go_to_the_process_that_had_the_pid_then(tmp_path):
    """A pid reused within a run: each sample lands on the process alive then,
    and none on a probed process after it exited."""
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, 1_000_000_000, events=[{"kind": "exit", "t_ns": 2_000_000_000}])
    write_journal(run_dir, "alpha", 100, 5_000_000_000, events=[{"kind": "exit", "t_ns": 6_000_000_000}])
    write_samples(run_dir, "alpha", [sample(t, 100) for t in (1_500_000_000, 3_000_000_000, 5_500_000_000)]
                  + [sample(1_500_000_000, 200)])
    run = load(run_dir)
    rows = sample_rows(run)
    created = run.processes["created_ns"]
    assert [int(created[r]) if r >= 0 else None for r in rows] == [1_000_000_000, None, 5_000_000_000, None]


# --- many hosts on one time line ---------------------------------------------------

@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    """Two hosts whose monotonic clocks are an hour apart; their ranks start
    together and save in step, as ranks behind a barrier do."""
    sc = Scenario(hosts=2, ranks_per_host=2, saves=3, chunks_per_save=8, chunk_size=1 * MIB, buffers=3,
                  gen_s=0.002, write_s=0.004, fsync_s=0.02, interval_s=0.01)
    run = load(write_run(tmp_path_factory.mktemp("two-hosts"), sc))
    assert abs(host_offsets(run)["host1"]) > 3_000 * 10**9  # the premise: clocks far apart
    return run, perfetto.trace(run)


def _host_of_track(run, trace) -> dict[int, str]:
    hosts = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            hosts[e["pid"]] = next(h for h in run.hosts if e["args"]["name"].endswith(f" on {h}"))
    return hosts


def test_one_save_of_ranks_on_two_hosts_lands_at_one_time(two_hosts):
    run, trace = two_hosts
    host_of = _host_of_track(run, trace)
    starts = defaultdict(list)  # save number -> (host, start) of every rank's save slice
    for track, slices in _by_track(trace, "save").items():
        for k, e in enumerate(sorted(slices, key=lambda e: e["ts"])):
            starts[k].append((host_of[track], e["ts"]))
    assert sorted(starts) == [0, 1, 2]
    for k, found in starts.items():
        assert sorted(h for h, _ in found) == ["host0", "host0", "host1", "host1"]
        times = [ts for _, ts in found]
        assert max(times) - min(times) < 20_000, (k, found)  # microseconds: the ranks' 3 ms launch steps


def test_every_timestamp_of_either_host_is_within_the_recording(two_hosts):
    """Slices, counters and instants of both hosts: from the one origin to the recording's end."""
    run, trace = two_hosts
    host_of = _host_of_track(run, trace)
    length_us = (run.meta["ended_ns"] - run.meta["started_ns"]) / 1000
    seen = defaultdict(set)
    for e in trace["traceEvents"]:
        if e["ph"] == "M":
            continue
        assert 0 <= e["ts"] <= length_us, e
        seen[host_of[e["pid"]]].add(e["ph"])
    assert seen["host0"] == seen["host1"] == {"X", "C", "i"}
    # The writers' first writes on the two hosts, as the saves: together.
    first_write = defaultdict(list)
    for track, slices in _by_track(trace, "write").items():
        first_write[host_of[track]].append(min(e["ts"] for e in slices))
    assert abs(min(first_write["host0"]) - min(first_write["host1"])) < 20_000


def _by_track(trace, name) -> dict[int, list[dict]]:
    out = defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "X" and e["name"] == name:
            out[e["pid"]].append(e)
    return out
