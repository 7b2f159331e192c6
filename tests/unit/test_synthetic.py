"""writerprof.synthetic: generated run directories load like real recordings,
and say what the scenario asked for."""

from pathlib import Path

import numpy as np
import pytest

from writerprof import synthetic
from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe.specs import BUILT_IN
from writerprof.record.system import System
from writerprof.record.topology import snapshot
from writerprof.run import load
from writerprof.run.loader import CHUNK_DTYPE
from writerprof.run.roles import FORKSERVER, PRODUCER, RESOURCE_TRACKER, WRITER, roles
from writerprof.run.topology import cpu_nodes
from writerprof.synthetic import MIB, Scenario, make_topology, write_run
from writerprof.units import parse_cpu_list

PHASE = journal.PHASES
SYSROOTS = Path(__file__).resolve().parents[1] / "fixtures" / "sysroots"
NODE0 = {0, 1, 2, 3, 8, 9, 10, 11}  # of the default machine, the numa2 fixture's


def small(**changes) -> Scenario:
    base = dict(ranks_per_host=2, saves=2, chunks_per_save=8, chunk_size=1 * MIB, buffers=3,
                gen_s=0.002, write_s=0.004, fsync_s=0.02, interval_s=0.01)
    base.update(changes)
    return Scenario(**base)


_cache = {}


def run_of(tmp_path_factory, scenario: Scenario):
    key = repr(scenario)
    if key not in _cache:
        _cache[key] = load(write_run(tmp_path_factory.mktemp("synthetic"), scenario))
    return _cache[key]


def procs(run, role):
    return [p for p in run.processes if p["role"] == role]


def phase(chunks, name):
    return chunks[chunks["phase"] == PHASE[name]]


def of(run, p):
    return run.chunks[run.chunks["proc"] == list(run.processes["pid"]).index(p["pid"])]


def events(run, p, kind=None):
    if kind in ("shm", "placement"):  # not events: the run's columns of them
        proc = run.process_events(p["host"], p["pid"])[0]["proc"]
        return [e["data"] for e in run.buffer_events(kind) if e["proc"] == proc]
    found = [e["data"] for e in run.process_events(p["host"], p["pid"])]
    return [e for e in found if kind is None or e["kind"] == kind]


def writers_of(run, producer):
    pids = [e["child_pid"] for e in events(run, producer, "process_start")]
    return [p for pid in pids for p in run.processes if p["pid"] == pid and p["host"] == producer["host"]]


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_loads_with_no_losses_and_says_it_is_synthetic(tmp_path_factory, method):
    run = run_of(tmp_path_factory, small(start_method=method))
    assert run.losses == []
    assert run.complete
    assert run.meta["synthetic"] is True
    assert run.meta["scenario"]["start_method"] == method
    assert run.meta["command"][0] == "writerprof-synthetic"
    assert run.hosts == ["host0"]
    assert set(cpu_nodes(run.topology["host0"]).values()) == {0, 1}
    assert len(run.samples) and len(run.sampled)
    assert set(run.phase_names.values()) == set(PHASE)  # nothing unnamed


def test_fork_run_has_a_producer_a_tracker_and_a_writer_per_save(tmp_path_factory):
    sc = small()
    run = run_of(tmp_path_factory, sc)
    producers = procs(run, "main")
    assert sorted(p["rank"] for p in producers) == [0, 1]
    assert len(procs(run, "resource_tracker")) == 2
    assert len(procs(run, "fork_child")) == 2 * sc.saves
    assert len(run.processes) == 2 + 2 + 2 * sc.saves
    kinds = roles(run)
    assert sorted(kinds) == sorted([PRODUCER] * 2 + [RESOURCE_TRACKER] * 2 + [WRITER] * 4)
    for producer in producers:
        writers = writers_of(run, producer)
        assert len(writers) == sc.saves
        for writer in writers:
            identity = run.identity(writer["host"], writer["pid"])
            assert writer["ppid"] == producer["pid"] and identity["forked_from"] == producer["pid"]
            assert identity["created_via"] == "fork" and identity["rank"] == producer["rank"]
            assert [e["kind"] for e in events(run, writer)][-1] == "exit"
            assert events(run, writer, "exit")[0]["via"] == "os._exit"
            assert not events(run, writer, "main_rerun")  # fork re-runs nothing
            assert len(events(run, writer, "shm")) == 2 * sc.buffers  # inherited, then attached
        forks = events(run, producer, "fork")
        assert len(forks) == sc.saves


def test_forkserver_writers_are_the_daemons_children(tmp_path_factory):
    sc = small(start_method="forkserver", main_rerun_s=0.5)
    run = run_of(tmp_path_factory, sc)
    daemons = procs(run, "forkserver")
    assert len(daemons) == 2 and len(procs(run, "forkserver_child")) == 2 * sc.saves
    assert sorted(roles(run)) == sorted([PRODUCER] * 2 + [RESOURCE_TRACKER] * 2 + [FORKSERVER] * 2
                                        + [WRITER] * 4)
    for producer in procs(run, "main"):
        daemon = next(d for d in daemons if d["ppid"] == producer["pid"])
        assert run.identity("host0", daemon["pid"])["rank"] == producer["rank"]
        assert len(events(run, daemon, "fork")) == sc.saves
        assert not events(run, producer, "fork")
        for writer in writers_of(run, producer):
            identity = run.identity("host0", writer["pid"])
            assert writer["ppid"] == daemon["pid"] and identity["forked_from"] == daemon["pid"]
            rerun = events(run, writer, "main_rerun")
            assert len(rerun) == 1 and rerun[0]["path"].endswith("/repro/main.py")
            assert rerun[0]["end_ns"] - rerun[0]["start_ns"] == 500_000_000
            assert len(events(run, writer, "unpickle")) == 1


def test_spawn_writers_are_execd_by_the_producer(tmp_path_factory):
    run = run_of(tmp_path_factory, small(start_method="spawn"))
    writers = procs(run, "spawn_child")
    assert len(writers) == 4
    pids = {p["pid"] for p in procs(run, "main")}
    for writer in writers:
        identity = run.identity("host0", writer["pid"])
        assert writer["ppid"] in pids and identity["created_via"] == "exec"
        assert identity["forked_from"] is None and "--multiprocessing-fork" in identity["argv"]
        assert events(run, writer, "activated") and events(run, writer, "main_rerun")


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_chunk_records_per_process(tmp_path_factory, method):
    sc = small(start_method=method)
    run = run_of(tmp_path_factory, sc)
    for producer in procs(run, "main"):
        chunks = of(run, producer)
        assert len(phase(chunks, "gen")) == sc.saves * sc.chunks_per_save
        assert len(phase(chunks, "put")) == sc.saves * (sc.chunks_per_save + 1)  # and the end marker
        assert len(phase(chunks, "save")) == sc.saves
        assert set(phase(chunks, "gen")["bytes"]) == {sc.chunk_size}
        for writer in writers_of(run, producer):
            chunks = of(run, writer)
            assert len(phase(chunks, "write")) == sc.chunks_per_save
            assert len(phase(chunks, "get")) == sc.chunks_per_save + 1
            assert len(phase(chunks, "fsync")) == len(phase(chunks, "close")) == 1
            assert set(chunks["writer_seq"]) == {-1} and set(chunks["depth"]) == {1}
            assert set(chunks["tid"]) == {writer["pid"]}


def test_write_bytes_add_up_per_rank(tmp_path_factory):
    sc = small(saves=3, chunks_per_save=5)
    run = run_of(tmp_path_factory, sc)
    for producer in procs(run, "main"):
        total = sum(int(phase(of(run, w), "write")["bytes"].sum()) for w in writers_of(run, producer))
        assert total == sc.saves * sc.chunks_per_save * sc.chunk_size


def _save_timelines(run, sc):
    """Per rank and save: the producer's gen and put records and the writer's
    get and write records, in call order."""
    for producer in procs(run, "main"):
        chunks = of(run, producer)
        for save, writer in enumerate(writers_of(run, producer)):
            mine = chunks[chunks["writer_seq"] == save]
            theirs = of(run, writer)
            yield (phase(mine, "gen"), phase(mine, "put"), phase(theirs, "get"), phase(theirs, "write"),
                   writer)


@pytest.mark.parametrize("changes, bound", [
    (dict(write_s=0.010, gen_s=0.001), "writer"),
    (dict(write_s=0.001, gen_s=0.010), "generation"),
    (dict(write_s=0.004, gen_s=0.003, jitter=0.5, seed=3), None),
])
def test_queue_semantics(tmp_path_factory, changes, bound):
    sc = small(chunks_per_save=12, **changes)
    run = run_of(tmp_path_factory, sc)
    B = sc.buffers
    for gen, put, get, write, writer in _save_timelines(run, sc):
        # The producer: gen i, then put i, then gen i+1.
        assert (put["start_ns"][:-1] >= gen["end_ns"]).all()
        assert (gen["start_ns"][1:] >= put["end_ns"][:-2]).all()
        # A put returns only when the queue has room: get i-B has ended.
        assert (put["end_ns"][B:] >= get["end_ns"][:-B]).all()
        # A get returns only after its chunk was put; the writer writes what it got.
        assert (get["end_ns"] >= put["end_ns"]).all()
        assert (write["start_ns"] >= get["end_ns"][:-1]).all()
        # Queued (put returned, not yet got) never more than `buffers` chunks.
        times = np.concatenate([put["end_ns"], get["end_ns"]])
        steps = np.concatenate([np.ones(len(put), int), -np.ones(len(get), int)])
        order = np.lexsort((steps, times))  # a get before a put at the same instant
        queued = np.cumsum(steps[order])
        assert queued.min() >= 0 and queued.max() <= B
        # Generated and not yet got: the queue's B and at most one more, filled
        # into a buffer whose chunk is still queued (the ring's race, as in the
        # reproducer without --verify) while its put waits.
        times = np.concatenate([gen["end_ns"], get["end_ns"][:-1]])
        steps = np.concatenate([np.ones(len(gen), int), -np.ones(len(gen), int)])
        order = np.lexsort((steps, times))
        assert np.cumsum(steps[order]).max() <= B + 1
        waited_put = put["end_ns"] - put["start_ns"]
        waited_get = get["end_ns"] - get["start_ns"]
        if bound == "writer":
            assert queued.max() == B and waited_put[B + 1:-1].min() > 1_000_000
            assert waited_get[1:-1].max() < 200_000
        elif bound == "generation":
            assert waited_get[1:-1].min() > 1_000_000 and waited_put.max() < 200_000
        # the put's bytes is its wait in ns (what _Save._put returns)
        assert (np.abs(put["bytes"] - waited_put) < 10_000).all()


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_writer_takes_chunks_only_after_its_start_up(tmp_path_factory, method):
    sc = small(start_method=method, main_rerun_s=0.3, target_setup_s=0.01)
    run = run_of(tmp_path_factory, sc)
    for gen, put, get, write, writer in _save_timelines(run, sc):
        start = events(run, writer, "target_start")[0]["t_ns"]
        attached = max(e["t_ns"] for e in events(run, writer, "placement") if e["when"] == "attach")
        assert get["start_ns"][0] >= start + 10_000_000 and get["start_ns"][0] > attached
        if method != "fork":
            unpickle = events(run, writer, "unpickle")[0]
            assert events(run, writer, "main_rerun")[0]["end_ns"] <= unpickle["start_ns"]
            assert unpickle["end_ns"] <= start
        # Writer-start-up-bound: the producer filled the queue and waited on it.
        assert put["end_ns"][sc.buffers] - put["start_ns"][sc.buffers] > (
            250_000_000 if method != "fork" else 0)
        assert writer["created_ns"] <= events(run, writer)[0]["t_ns"] <= start


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_records_are_consistent_per_thread(tmp_path_factory, method):
    run = run_of(tmp_path_factory, small(start_method=method, jitter=0.3))
    for proc, p in enumerate(run.processes):
        mine = run.chunks[run.chunks["proc"] == proc]
        assert (mine["start_ns"] <= mine["end_ns"]).all()
        if len(mine):
            assert mine["start_ns"].min() >= p["created_ns"] and mine["end_ns"].max() <= p["exited_ns"]
        for tid in set(mine["tid"]):
            for depth in set(mine["depth"]):
                calls = mine[(mine["tid"] == tid) & (mine["depth"] == depth)]
                assert (calls["start_ns"][1:] >= calls["end_ns"][:-1]).all()  # sorted, no overlap
        saves = phase(mine, "save")
        inner = mine[mine["depth"] == 1]
        for save in saves:
            within = inner[inner["writer_seq"] == save["writer_seq"]]
            assert within["start_ns"].min() >= save["start_ns"] and within["end_ns"].max() <= save["end_ns"]
        # The file holds the records as the probe appends them: in order of the calls' ends.
        file = next(f for f in (run.path / "hosts" / p["host"] / "procs").iterdir()
                    if f.name == f"{p['pid']}-{p['created_ns']}{journal.CHUNKS_SUFFIX}")
        raw = np.fromfile(file, dtype=CHUNK_DTYPE)
        depth1 = raw[raw["depth"] == 1]
        assert (np.diff(depth1["end_ns"]) >= 0).all()
    times = run.events["t_ns"]
    assert (np.diff(times) >= 0).all()


def _samples_of(run, p):
    s = run.samples
    return s[(s["pid"] == p["pid"]) & (s["t_ns"] >= p["created_ns"]) & (s["t_ns"] <= p["exited_ns"])]


def _masks(run, p):
    """The sampler's affinity records of a process: [(t_ns, cpus)]."""
    return [(r["t_ns"], parse_cpu_list(r["cpus"])) for r in run.sampled
            if r["kind"] == "affinity" and r["pid"] == p["pid"]]


@pytest.mark.parametrize("buffer_node, writer_node", [(0, 1), (0, 0), (1, 1)])
def test_placement_and_cpus_are_where_asked(tmp_path_factory, buffer_node, writer_node):
    run = run_of(tmp_path_factory, small(buffer_node=buffer_node, writer_run_node=writer_node,
                                         saves=3, chunks_per_save=20, write_s=0.01, fsync_s=1.0))
    node_of = cpu_nodes(run.topology["host0"])
    for p in run.processes:
        placements = events(run, p, "placement")
        for e in placements:
            if e["when"] in ("create", "attach"):
                assert e["nodes"] == {} and e["unfaulted"] == e["sampled"]
        if p["role"] in ("main", "fork_child"):
            ends = [e for e in placements if e["when"] == "end" and e["nodes"]]
            assert len(ends) == (3 * 3 if p["role"] == "main" else 3)  # saves x buffers; a writer's own
            assert all(e["nodes"] == {str(buffer_node): e["sampled"]} for e in ends)
        samples = _samples_of(run, p)
        mask = _masks(run, p)[0][1]
        assert set(samples["cpu"]) <= mask
        if p["role"] == "fork_child":
            start = events(run, p, "target_start")[0]["t_ns"]
            assert {node_of[c] for c in samples["cpu"][samples["t_ns"] > start]} == {writer_node}
            assert {node_of[c] for c in phase(of(run, p), "write")["cpu"]} == {writer_node}
            assert len(samples) > 5
        if p["role"] == "main":
            assert {node_of[c] for c in phase(of(run, p), "gen")["cpu"]} == {buffer_node}
    # The sampler reads numa_maps every 2 s: the producers' buffers, faulted in, some time.
    numa_maps = [r for r in run.sampled if r["kind"] == "numa_maps" and r["pages"]]
    assert numa_maps and all(set(r["pages"]) == {str(buffer_node)} for r in numa_maps)


def test_remote_writes_cost_remote_factor(tmp_path_factory):
    local = run_of(tmp_path_factory, small(writer_run_node=0))
    remote = run_of(tmp_path_factory, small(writer_run_node=1, remote_factor=1.5))
    w_local = phase(local.chunks, "write")
    w_remote = phase(remote.chunks, "write")
    ratio = (np.median(w_remote["end_ns"] - w_remote["start_ns"])
             / np.median(w_local["end_ns"] - w_local["start_ns"]))
    assert ratio == pytest.approx(1.5, rel=0.01)


def test_forkserver_writers_inherit_the_daemons_mask(tmp_path_factory):
    """Affinity divergence: the producer pinned to node 0 after its daemon
    started with every CPU."""
    run = run_of(tmp_path_factory, small(start_method="forkserver", producer_cpus="0-3,8-11",
                                         writer_cpus_inherited="0-15", writer_run_node=1))
    node_of = cpu_nodes(run.topology["host0"])
    for p in procs(run, "main"):
        assert run.identity("host0", p["pid"])["affinity"] == sorted(NODE0)
        assert _masks(run, p) and all(m == NODE0 for _, m in _masks(run, p))
        assert {node_of[c] for c in phase(of(run, p), "gen")["cpu"]} == {0}
    for p in procs(run, "forkserver") + procs(run, "forkserver_child"):
        assert run.identity("host0", p["pid"])["affinity"] == list(range(16))
        assert all(m == set(range(16)) for _, m in _masks(run, p))
    for p in procs(run, "forkserver_child"):
        assert {node_of[c] for c in phase(of(run, p), "write")["cpu"]} == {1}


def test_a_writer_that_pins_itself_changes_its_mask_at_its_target(tmp_path_factory):
    run = run_of(tmp_path_factory, small(writer_cpus="5", chunks_per_save=20, write_s=0.01))
    for p in procs(run, "fork_child"):
        masks = _masks(run, p)
        start = events(run, p, "target_start")[0]["t_ns"]
        assert masks[-1][1] == {5} and masks[-1][0] >= start
        assert run.identity("host0", p["pid"])["affinity"] == list(range(16))
        assert set(phase(of(run, p), "write")["cpu"]) == {5}
        late = _samples_of(run, p)
        assert set(late["cpu"][late["t_ns"] > start]) == {5}


def test_a_migrating_writer_moves_node_halfway(tmp_path_factory):
    sc = small(chunks_per_save=10, migrate_to_node=1)
    run = run_of(tmp_path_factory, sc)
    node_of = cpu_nodes(run.topology["host0"])
    for p in procs(run, "fork_child"):
        nodes = [node_of[c] for c in phase(of(run, p), "write")["cpu"]]
        assert nodes == [0] * 5 + [1] * 5


def test_fork_with_live_threads(tmp_path_factory):
    run = run_of(tmp_path_factory, small(gen_threads=3, saves=3))
    for p in procs(run, "main"):
        forks = events(run, p, "fork")
        # The generator's pool starts at its first fill: after the first fork.
        assert [f["native_threads"] for f in forks] == [1, 4, 4]
        assert forks[1]["threads"] == ["MainThread", "writerprof-gen_0", "writerprof-gen_1", "writerprof-gen_2"]
    run = run_of(tmp_path_factory, small(fork_threads=8))
    for p in procs(run, "main"):
        assert [f["native_threads"] for f in events(run, p, "fork")] == [8, 8]
        assert _samples_of(run, p)["threads"].min() >= 8


def test_oversubscription_shows_in_the_samples(tmp_path_factory):
    sc = small(producer_cpus="0-1", gen_threads=6, involuntary_per_s=2000, chunks_per_save=30)
    run = run_of(tmp_path_factory, sc)
    for p in procs(run, "main"):
        s = _samples_of(run, p)
        assert s["threads"].max() > 2
        assert set(s["cpu"]) <= {0, 1}
        rate = np.diff(s["nonvoluntary_ctxt"]).sum() / ((s["t_ns"][-1] - s["t_ns"][0]) / 1e9)
        assert rate == pytest.approx(2000, rel=0.05)
    for p in procs(run, "fork_child"):
        assert set(_samples_of(run, p)["cpu"]) <= {0, 1}


def test_fault_storm(tmp_path_factory):
    sc = small(faults_per_chunk=20_000, fault_s=2e-6)
    run = run_of(tmp_path_factory, sc)
    quiet = run_of(tmp_path_factory, small())
    for p in procs(run, "fork_child"):
        writes = phase(of(run, p), "write")
        assert writes["minflt"].min() >= 20_000
        assert (writes["end_ns"] - writes["start_ns"]).min() >= 0.004e9 + 0.04e9
    assert _samples_of(run, procs(run, "fork_child")[0])["minflt"].max() > 20_000
    assert phase(quiet.chunks, "write")["minflt"].max() < 1000


def test_counters_never_go_back(tmp_path_factory):
    run = run_of(tmp_path_factory, small(start_method="forkserver", saves=3, chunks_per_save=30))
    for p in run.processes:
        s = _samples_of(run, p)
        assert len(s), p
        for name in ("t_ns", "utime_ns", "stime_ns", "voluntary_ctxt", "nonvoluntary_ctxt", "minflt",
                     "write_bytes", "wchar"):
            assert (np.diff(s[name]) >= 0).all(), (p["role"], name)
    # Every sample is of a probed process, within its life; the file in tick order.
    assert (np.diff(run.samples["t_ns"]) >= 0).all()
    alive = np.zeros(len(run.samples), bool)
    for p in run.processes:
        alive |= ((run.samples["pid"] == p["pid"]) & (run.samples["t_ns"] >= p["created_ns"])
                  & (run.samples["t_ns"] <= p["exited_ns"]))
    assert alive.all()
    # The daemon's written bytes include the writers it reaped (the kernel folds them in).
    daemon = procs(run, "forkserver")[0]
    assert _samples_of(run, daemon)["write_bytes"].max() >= 2 * 30 * MIB
    seen = {r["pid"] for r in run.sampled if r["kind"] == "seen"}
    gone = {r["pid"] for r in run.sampled if r["kind"] == "gone"}
    assert seen == gone == set(run.processes["pid"])


def test_same_scenario_same_bytes(tmp_path):
    sc = small(start_method="forkserver", jitter=0.2, seed=7)
    a, b = write_run(tmp_path / "a", sc), write_run(tmp_path / "b", sc)
    files = sorted(f.relative_to(a) for f in a.rglob("*") if f.is_file())
    assert files == sorted(f.relative_to(b) for f in b.rglob("*") if f.is_file())
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    c = write_run(tmp_path / "c", small(start_method="forkserver", jitter=0.2, seed=8))
    assert any((a / f).read_bytes() != (c / f).read_bytes() for f in files if f.suffix == ".bin")


def test_overrides_change_one_rank_or_one_save(tmp_path_factory):
    sc = small(overrides={(1, 1): {"write_s": 0.02}, (0, None): {"buffer_node": 1}})
    run = run_of(tmp_path_factory, sc)
    node_of = cpu_nodes(run.topology["host0"])
    for producer in procs(run, "main"):
        for save, writer in enumerate(writers_of(run, producer)):
            writes = phase(of(run, writer), "write")
            slow = producer["rank"] == 1 and save == 1
            assert np.median(writes["end_ns"] - writes["start_ns"]) == pytest.approx(
                0.02e9 if slow else 0.004e9, rel=0.01)
            ends = [e for e in events(run, writer, "placement") if e["when"] == "end" and e["nodes"]]
            expected = 1 if producer["rank"] == 0 else 0
            assert {tuple(e["nodes"]) for e in ends} == {(str(expected),)}
            assert {node_of[c] for c in writes["cpu"]} == {expected}
    assert run.meta["scenario"]["overrides"] == [
        {"rank": 1, "save": 1, "set": {"write_s": 0.02}}, {"rank": 0, "save": None, "set": {"buffer_node": 1}}]


def test_many_hosts_have_their_own_clocks_and_ranks(tmp_path_factory):
    run = run_of(tmp_path_factory, small(hosts=2, saves=1))
    assert run.hosts == ["host0", "host1"]
    ranks, anchors = {}, {}
    for p in procs(run, "main"):
        identity = run.identity(p["host"], p["pid"])
        ranks[p["rank"]] = p["host"]
        anchors[p["host"]] = identity["wall_ns"] - identity["mono_ns"]
        assert identity["world_size"] == 4 and identity["local_rank"] == p["rank"] % 2
    assert ranks == {0: "host0", 1: "host0", 2: "host1", 3: "host1"}
    # Each host's CLOCK_MONOTONIC is its own; wall_ns - mono_ns relates them.
    assert anchors["host0"] == run.meta["started_wall_ns"] - run.meta["started_ns"]
    assert abs(anchors["host1"] - anchors["host0"]) > 1e12
    assert run.losses == []



@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_hooks_are_the_probes_built_in_specs_and_start_methods_its_own(tmp_path_factory, method):
    """The probe owns these names: a spec added to its built-in list for the
    reproducer shows up in the synthetic journals, and the start methods are its."""
    assert synthetic.START_METHODS is journal.START_METHODS
    run = run_of(tmp_path_factory, small(start_method=method))
    repro = [spec for spec in BUILT_IN if spec.startswith("writerprof.repro.")]
    for producer in procs(run, "main"):
        applied = [e["spec"] for e in events(run, producer, "hook") if e["status"] == "applied"]
        assert set(repro) <= set(applied)
        assert len(applied) == len(set(applied))  # each hook once
        writer_specs = {e["spec"] for w in writers_of(run, producer) for e in events(run, w, "hook")}
        expected = {s for s in repro if s.startswith("writerprof.repro.writer:")}
        assert expected <= writer_specs if method == "spawn" else not writer_specs

def test_the_machine_is_the_numa2_fixture():
    made = make_topology(2, 8, smt=True)
    fixture = snapshot(System(SYSROOTS / "numa2"))
    assert made["cpus"] == fixture["cpus"] and made["online_cpus"] == fixture["online_cpus"]
    assert {n: (i["cpus"], i["distances"]) for n, i in made["nodes"].items()} == \
        {n: (i["cpus"], i["distances"]) for n, i in fixture["nodes"].items()}
    assert made.keys() == fixture.keys() and made["smt"] and made["numa"]
    four = make_topology(4, 4, smt=False)
    assert four["nodes"]["3"]["cpus"] == [12, 13, 14, 15] and not four["smt"]


@pytest.mark.parametrize("changes, says", [
    (dict(start_method="posix_spawn"), "start_method"),
    (dict(writer_run_node=1, writer_cpus="0-3"), "writer_run_node"),
    (dict(producer_cpus="0-3", writer_cpus_inherited="0-15"), "only under forkserver"),
    (dict(buffer_node=2), "buffer_node"),
    (dict(producer_cpus="0-99"), "online"),
    (dict(overrides={(0, 1): {"producer_cpus": "0"}}), "per save"),
    (dict(overrides={(0, None): {"saves": 2}}), "per rank"),
])
def test_impossible_scenarios_say_why(tmp_path, changes, says):
    with pytest.raises(ValueError, match=says):
        write_run(tmp_path / "run", small(**changes))


def test_a_run_of_many_ranks_has_every_journal(tmp_path):
    """64 ranks x 3 saves x 100 chunks (how fast it is written: benchmarks/report_scale.py, not a test)."""
    run = write_run(tmp_path / "run", Scenario(hosts=2, ranks_per_host=32, saves=3, chunks_per_save=100))
    # Per rank 2 + 3 journals' events and chunks, and the buffer records of the producer and its 3 writers.
    assert len(list((run / "hosts" / "host1" / "procs").iterdir())) == 2 * (32 * (2 + 3)) + 2 * (32 * (1 + 3))
