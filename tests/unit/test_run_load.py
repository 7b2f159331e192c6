import json
import pickle
import sys

import numpy as np
import pytest

from writerprof.errors import WriterprofError
from writerprof.probes.writerprof_probe import format as journal
from writerprof.run import RunDirectoryError, layout, load
from writerprof.run.loader import CHUNK_DTYPE, SAMPLE_DTYPE, UNNAMED_PHASE

load_module = sys.modules[load.__module__]  # the module, not its function of that name

PHASE = journal.PHASES


# --- writing run directories exactly as the probe and the launcher do ---

def write_meta(run, **changes):
    meta = {"format": layout.FORMAT, "schema": layout.SCHEMA, "command": ["python", "bench.py"],
            "host": "alpha", "started_ns": 1, "ended_ns": 10**12, "exit_status": 0,
            "ended_by": "exit", "signal": None}
    meta.update(changes)
    run.mkdir(parents=True, exist_ok=True)
    (run / layout.RUN_FILE).write_text(json.dumps(meta))
    return run


def chunk(phase, start_ns, *, end_ns=None, bytes=4096, buffer=0, cpu=3, tid=7):
    """A CHUNK record tuple in CHUNK_FIELDS order."""
    return (phase, 0, cpu, buffer, 0, tid, start_ns, end_ns or start_ns + 100, bytes, 1, 0)


def write_journal(run, host, pid, created_ns, *, role="main", events=(), chunks=(), cut_chunks=b"",
                  cut_events=b"", identity=True, t0=None, exited=True):
    """A process's .events.jsonl (identity line first, an exit line last unless
    `exited` is false or the events hold one) and .chunks.bin."""
    procs = layout.procs_dir(run, host)
    procs.mkdir(parents=True, exist_ok=True)
    base = procs / f"{pid}-{created_ns}"
    t0 = created_ns if t0 is None else t0
    lines = []
    if identity:
        lines.append({"kind": "process", "t_ns": t0, "schema": 1, "pid": pid, "ppid": 1, "host": host,
                      "argv": ["python"], "created_ns": created_ns, "created_via": "exec",
                      "forked_from": None, "role": role, "rank": None, "affinity": [0, 1]})
    lines += [dict(e, t_ns=e.get("t_ns", t0 + i + 1)) for i, e in enumerate(events)]
    if exited and identity and not any(e["kind"] == "exit" for e in lines):
        lines.append({"kind": "exit", "t_ns": max(e["t_ns"] for e in lines) + 1, "via": "atexit", "code": 0})
    text = "".join(json.dumps(e) + "\n" for e in lines).encode() + cut_events
    (base.parent / (base.name + journal.EVENTS_SUFFIX)).write_bytes(text)
    data = b"".join(journal.CHUNK.pack(*c) for c in chunks) + cut_chunks
    (base.parent / (base.name + journal.CHUNKS_SUFFIX)).write_bytes(data)
    return base


def write_samples(run, host, rows):
    directory = layout.host_dir(run, host)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / layout.SAMPLES_FILE).write_bytes(b"".join(layout.SAMPLE.pack(*r) for r in rows))


def sample(t_ns, pid):
    return (t_ns, pid, 2, 4, 10, 20, 1, 2, 3, 0, 1 << 20, 4096, 8192)


@pytest.fixture
def two_hosts(tmp_path):
    """A rank, its forkserver daemon and a writer forked from it, on alpha;
    a sampled process on beta. The rank and the writer added the same two
    phases in opposite order, so their codes differ."""
    run = write_meta(tmp_path / "run")
    write_journal(run, "alpha", 100, 1000, events=[
        {"kind": "phase", "code": 32, "name": "compress"},
        {"kind": "phase", "code": 33, "name": "encrypt"},
        {"kind": "process_start", "start_ns": 1500, "end_ns": 1600, "method": "forkserver",
         "target": "w", "child_pid": 300, "name": "writer-0", "writer_seq": 0},
        {"kind": "exit", "t_ns": 9000, "via": "atexit", "code": 0},
    ], chunks=[chunk(PHASE["gen"], 2000), chunk(32, 2100), chunk(33, 2200)])
    write_journal(run, "alpha", 200, 1200, role="forkserver", events=[
        {"kind": "fork", "native_threads": 1, "python_threads": 1, "threads": ["MainThread"]},
    ])
    # The writer was killed: the last chunk record and the last event line are cut.
    write_journal(run, "alpha", 300, 1700, role="forkserver_child", events=[
        {"kind": "phase", "code": 32, "name": "encrypt"},
        {"kind": "phase", "code": 33, "name": "compress"},
    ], chunks=[chunk(PHASE["write"], 2050), chunk(32, 2150), chunk(33, 1900)],
        cut_chunks=journal.CHUNK.pack(*chunk(4, 2300))[:17], cut_events=b'{"kind": "exit", "t_',
        exited=False)
    write_journal(run, "beta", 100, 500)
    write_samples(run, "beta", [sample(10, 100), sample(20, 100)])
    beta = layout.host_dir(run, "beta")
    (beta / layout.SAMPLED_FILE).write_text(
        json.dumps({"kind": "seen", "t_ns": 5, "pid": 100, "ppid": 1, "cmdline": ["python"], "exe": "/py"}) + "\n")
    (beta / layout.TOPOLOGY_FILE).write_text(json.dumps({"nodes": {"0": {"cpus": [0, 1]}}}))
    return run


@pytest.mark.parametrize("fails", [False, True])
@pytest.mark.parametrize("share", [0.3, 1.0])
def test_journals_read_partly_by_a_worker_are_those_read_here(two_hosts, monkeypatch, share, fails):
    (layout.procs_dir(two_hosts, "beta") / f"100-500{journal.EVENTS_SUFFIX}").open("ab").write(b"not json\n\n")
    write_journal(two_hosts, "gamma", 100, 700, identity=False, events=[{"kind": "exit"}])
    here = load(two_hosts)
    monkeypatch.setattr(load_module, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(load_module, "WORKER_SHARE", share)
    monkeypatch.setattr(load_module.forked, "spare_cpu", lambda: True)
    if fails:  # the worker's result is lost: read here instead
        monkeypatch.setattr(load_module.forked, "collect", lambda pid, end, **_: load_module.forked.discard(pid, end))
    there = load(two_hosts)
    assert there.losses == here.losses and len(here.losses) == 5
    assert pickle.dumps(list(there.events["data"])) == pickle.dumps(list(here.events["data"]))
    assert there.processes.tolist() == here.processes.tolist() and there.sampled == here.sampled


def test_record_dtypes_are_the_structs():
    assert CHUNK_DTYPE.itemsize == journal.CHUNK.size
    assert SAMPLE_DTYPE.itemsize == layout.SAMPLE.size
    record = chunk(4, 123456789, bytes=-1, buffer=-1, cpu=-1)
    assert np.frombuffer(journal.CHUNK.pack(*record), CHUNK_DTYPE)[0].tolist() == record


def test_processes_and_identities(two_hosts):
    run = load(two_hosts)
    assert run.complete and run.hosts == ["alpha", "beta"]
    p = run.processes
    assert list(zip(p["host"], p["pid"], p["role"])) == [
        ("alpha", 100, "main"), ("alpha", 200, "forkserver"), ("alpha", 300, "forkserver_child"),
        ("beta", 100, "main")]
    assert p["exited_ns"].tolist() == [9000, 1202, -1, 501]  # the writer's exit line was cut
    assert p["created_ns"].tolist() == [1000, 1200, 1700, 500]
    assert p["rank"].tolist() == [-1] * 4
    assert run.identity("alpha", 200)["role"] == "forkserver"
    assert run.identity("beta", 100)["host"] == "beta"
    with pytest.raises(KeyError):
        run.identity("alpha", 999)


def test_added_phases_get_run_wide_codes(two_hosts):
    run = load(two_hosts)
    names = run.phase_names
    assert {names[c] for c in PHASE.values()} == set(PHASE)
    assert names[journal.FIRST_ADDED_PHASE] == "compress" and names[journal.FIRST_ADDED_PHASE + 1] == "encrypt"
    by_proc = {(run.processes["pid"][c["proc"]], int(c["start_ns"])): names[c["phase"]] for c in run.chunks}
    assert by_proc == {
        (100, 2000): "gen", (100, 2100): "compress", (100, 2200): "encrypt",
        (300, 2050): "write", (300, 2150): "encrypt", (300, 1900): "compress",
    }


def test_chunks_are_sorted_and_carry_their_process(two_hosts):
    run = load(two_hosts)
    c = run.chunks
    assert c["start_ns"].tolist() == [1900, 2000, 2050, 2100, 2150, 2200]
    assert (c["host_index"] == 0).all()
    assert c["pid"].tolist() == [300, 100, 300, 100, 300, 100]
    assert (run.processes["pid"][c["proc"]] == c["pid"]).all()
    assert c["bytes"].tolist() == [4096] * 6 and c["tid"].tolist() == [7] * 6


def test_truncated_journals_load_up_to_the_last_whole_record(two_hosts):
    run = load(two_hosts)
    assert len(run.chunks) == 6  # the 17 bytes of a seventh are gone
    assert run.losses == [
        "hosts/alpha/procs/300-1700.events.jsonl: a cut-off last line (20 bytes) dropped "
        "(target killed mid-write?)",
        "hosts/alpha/procs/300-1700.chunks.bin: 17 bytes of a partial record dropped "
        "(target killed mid-write?)",
        "hosts/alpha/procs/300-1700: process 300 (forkserver_child) left no exit record (killed by "
        "a signal, or alive when the recording ended): chunk records after its last flushed batch, "
        "512 at most and those of 100 µs after, are missing",
    ]


def test_events(two_hosts):
    run = load(two_hosts)
    assert run.events["t_ns"].tolist() == sorted(run.events["t_ns"].tolist())
    starts = run.events_of("process_start")
    assert len(starts) == 1 and starts[0]["data"]["child_pid"] == 300 and starts[0]["host"] == "alpha"
    own = run.process_events("alpha", 100)
    assert own["kind"].tolist() == ["process", "phase", "phase", "process_start", "exit"]
    assert (own["pid"] == 100).all() and own[0]["data"] is run.identity("alpha", 100)
    assert len(run.events_of("process")) == 4


def test_samples_sampled_and_topology(two_hosts):
    run = load(two_hosts)
    assert run.samples["t_ns"].tolist() == [10, 20]
    assert run.samples["host_index"].tolist() == [1, 1]
    assert run.samples["rss_bytes"].tolist() == [1 << 20] * 2
    assert run.sampled == [{"kind": "seen", "t_ns": 5, "pid": 100, "ppid": 1, "cmdline": ["python"],
                            "exe": "/py", "host": "beta"}]
    assert run.topology == {"beta": {"nodes": {"0": {"cpus": [0, 1]}}}}


def test_reused_pid_needs_its_creation_time(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, 1000, chunks=[chunk(4, 1100)])
    write_journal(run_dir, "alpha", 100, 5000, chunks=[chunk(4, 5100)])
    run = load(run_dir)
    with pytest.raises(KeyError, match="reused"):
        run.identity("alpha", 100)
    assert run.identity("alpha", 100, created_ns=5000)["created_ns"] == 5000
    assert run.chunks["proc"].tolist() == [0, 1]


def test_journal_without_identity_is_skipped(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, 1000, identity=False,
                  events=[{"kind": "phase", "code": 32, "name": "x"}], chunks=[chunk(4, 1)])
    orphan = layout.procs_dir(run_dir, "alpha") / ("200-2000" + journal.CHUNKS_SUFFIX)
    orphan.write_bytes(journal.CHUNK.pack(*chunk(4, 2)))
    run = load(run_dir)
    assert len(run.processes) == 0 and len(run.chunks) == 0 and len(run.events) == 0
    assert run.losses == [
        "hosts/alpha/procs/100-1000: no identity line, journal skipped (1 chunk records)",
        "hosts/alpha/procs/200-2000: no events file, journal skipped (1 chunk records)",
    ]


def test_unnamed_phase_codes_are_kept_and_said(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, 1000, chunks=[chunk(40, 1), chunk(4, 2), chunk(11, 3)],
                  events=[{"kind": "phase", "code": 10**9, "name": "huge"}])  # no table that wide
    run = load(run_dir)
    unnamed = journal.FIRST_ADDED_PHASE + 1
    assert run.phase_names[unnamed] == UNNAMED_PHASE
    assert run.chunks["phase"].tolist() == [unnamed, PHASE["write"], unnamed]
    assert run.losses == ["hosts/alpha/procs/100-1000.chunks.bin: 2 chunk records of phase codes its "
                          "journal never named, kept as phase '(unnamed)'"]


def test_empty_files_and_an_empty_run_are_fine(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    assert len(load(run_dir).processes) == 0
    write_journal(run_dir, "alpha", 100, 1000)
    write_samples(run_dir, "alpha", [])
    (layout.host_dir(run_dir, "alpha") / layout.SAMPLED_FILE).write_bytes(b"")
    run = load(run_dir)
    assert len(run.processes) == 1 and run.losses == []
    assert len(run.chunks) == 0 and run.chunks.dtype.names[-3:] == ("host_index", "pid", "proc")
    assert len(run.samples) == 0 and run.sampled == [] and run.topology == {}
    assert set(run.phase_names.values()) == set(PHASE)


def test_unreadable_event_lines_are_dropped_and_said(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    base = write_journal(run_dir, "alpha", 100, 1000, events=[{"kind": "exit", "t_ns": 7, "code": 0}])
    events_file = base.parent / (base.name + journal.EVENTS_SUFFIX)
    lines = events_file.read_text().splitlines(keepends=True)
    events_file.write_text(lines[0] + "not json\n" + "[1, 2]\n" + lines[1])
    run = load(run_dir)
    assert run.processes["exited_ns"].tolist() == [7]
    assert run.losses == ["hosts/alpha/procs/100-1000.events.jsonl: 2 unreadable lines dropped"]


def test_blank_lines_are_no_loss_and_a_blank_journal_has_no_identity(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    base = write_journal(run_dir, "alpha", 100, 1000, events=[{"kind": "exit", "t_ns": 7, "code": 0}])
    events_file = base.parent / (base.name + journal.EVENTS_SUFFIX)
    lines = events_file.read_text().splitlines(keepends=True)
    events_file.write_text("\n" + lines[0] + " \t\n\n" + lines[1] + "\r\n")
    blank = write_journal(run_dir, "alpha", 200, 1100, chunks=[chunk(4, 1200)])
    (blank.parent / (blank.name + journal.EVENTS_SUFFIX)).write_text("  \n")
    run = load(run_dir)
    assert run.processes["pid"].tolist() == [100] and run.processes["exited_ns"].tolist() == [7]
    assert run.losses == ["hosts/alpha/procs/200-1100: no identity line, journal skipped (1 chunk records)"]


def test_unfinished_run_loads_with_a_loss(tmp_path):
    run_dir = write_meta(tmp_path / "run", ended_ns=None, exit_status=None, ended_by=None)
    write_journal(run_dir, "alpha", 100, 1000, chunks=[chunk(4, 1)])
    run = load(run_dir)
    assert not run.complete and len(run.chunks) == 1
    assert run.losses == ["recording did not finish (writerprof record was killed?)"]


def test_missing_directory(tmp_path):
    with pytest.raises(RunDirectoryError, match="no such run directory"):
        load(tmp_path / "nope")


def test_not_a_directory(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunDirectoryError, match="not a directory"):
        load(tmp_path / "file")


def test_foreign_directory(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(RunDirectoryError, match="not a writerprof run directory"):
        load(tmp_path)


@pytest.mark.parametrize("content, message", [
    (b"{not json", "not JSON"),
    (b"\xff\xfe", "not JSON"),
    (b"[1, 2]", "not a writerprof run file"),
    (json.dumps({"format": "other", "schema": 1}).encode(), "format 'other'"),
    (json.dumps({"format": layout.FORMAT, "schema": "1"}).encode(), "not a version number"),
])
def test_bad_run_file(tmp_path, content, message):
    (tmp_path / layout.RUN_FILE).write_bytes(content)
    with pytest.raises(RunDirectoryError, match=message) as raised:
        load(tmp_path)
    assert isinstance(raised.value, WriterprofError) and "\n" not in str(raised.value)


def test_newer_schema_says_to_upgrade(tmp_path):
    write_meta(tmp_path, schema=layout.SCHEMA + 1)
    with pytest.raises(RunDirectoryError, match=rf"newer writerprof \(run schema {layout.SCHEMA + 1};.*upgrade"):
        load(tmp_path)


# --- damaged input: loaded as far as it goes, the damage said (issue 15) ---

def _summary_and_exports(run_dir):
    """What every reading command does with a run: none may raise."""
    from writerprof.analysis.summary import summarize
    from writerprof.exports import perfetto
    from writerprof.render import terminal

    run = load(run_dir)
    summary = summarize(run)
    terminal.report_text(summary)
    json.dumps(perfetto.trace(run))
    return run, summary


@pytest.mark.parametrize("schema", [0, -1, 1.0, True])
def test_impossible_run_schema_is_refused(tmp_path, schema):
    write_meta(tmp_path, schema=schema)
    with pytest.raises(RunDirectoryError, match="is not a version number writerprof writes"):
        load(tmp_path)


def test_random_bytes_in_a_chunks_file_are_dropped_and_said(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    base = write_journal(run_dir, "alpha", 100, 1000, chunks=[chunk(4, 1100)])
    chunks_file = base.parent / (base.name + journal.CHUNKS_SUFFIX)
    rng = np.random.default_rng(1)
    chunks_file.write_bytes(chunks_file.read_bytes() + rng.bytes(journal.CHUNK.size * 20))
    run, summary = _summary_and_exports(run_dir)
    assert run.chunks["start_ns"].tolist() == [1100]  # the real one stays
    assert any("chunk records with impossible times" in loss and "100-1000.chunks.bin" in loss
               for loss in run.losses), run.losses
    assert summary["run"]["losses"] == run.losses


def test_chunk_times_past_the_recording_are_dropped(tmp_path):
    run_dir = write_meta(tmp_path / "run", started_ns=1, ended_ns=10**9)
    write_journal(run_dir, "alpha", 100, 1000, chunks=[chunk(4, 1100), chunk(4, 2**62), chunk(4, 5000, end_ns=4000)])
    run = load(run_dir)
    assert run.chunks["start_ns"].tolist() == [1100]
    assert run.losses == ["hosts/alpha/procs/100-1000.chunks.bin: 2 chunk records with impossible times "
                          "(outside the process's life, or ending before they start) dropped"]


def test_impossible_chunks_of_one_process_leave_its_neighbours_whole(tmp_path):
    """Processes read in one batch, the middle one's records partly impossible."""
    run_dir = write_meta(tmp_path / "run", started_ns=1, ended_ns=10**9)
    write_journal(run_dir, "alpha", 100, 1000, chunks=[chunk(4, 1100), chunk(3, 1050)])
    write_journal(run_dir, "alpha", 200, 1100, chunks=[chunk(4, 1300), chunk(4, 2**62), chunk(4, 1250),
                                                       chunk(4, 5000, end_ns=4000)])
    write_journal(run_dir, "alpha", 300, 1200, chunks=[chunk(4, 1400, tid=9)])
    run = load(run_dir)
    c = run.chunk_columns
    assert c["proc"].tolist() == [0, 0, 1, 1, 2] and c["start_ns"].tolist() == [1050, 1100, 1250, 1300, 1400]
    assert c["pid"].tolist() == [100, 100, 200, 200, 300] and c["tid"].tolist() == [7, 7, 7, 7, 9]
    assert run.losses == ["hosts/alpha/procs/200-1100.chunks.bin: 2 chunk records with impossible times "
                          "(outside the process's life, or ending before they start) dropped"]


@pytest.mark.parametrize("snapshot, said", [
    ({"nodes": "oops"}, "its nodes are not"),
    ({"nodes": {"0": {"cpus": [0]}}, "cpus": {"0": {}}}, "its cpus are not"),
    ({"nodes": {"0": {"cpus": "0-1"}}, "cpus": {}}, "its nodes are not"),
    ([1, 2], "a list, not an object"),
])
def test_a_topology_of_another_shape_is_unknown_and_said(two_hosts, snapshot, said):
    (layout.host_dir(two_hosts, "beta") / layout.TOPOLOGY_FILE).write_text(json.dumps(snapshot))
    run, _ = _summary_and_exports(two_hosts)
    assert run.topology == {}
    assert f"hosts/beta/topology.json: {said}" in " ".join(run.losses)


def test_run_json_fields_of_the_wrong_type_are_left_out_and_said(tmp_path):
    run_dir = write_meta(tmp_path / "run", command=5, started_ns="x", stacks={"rate_hz": "fast"})
    write_journal(run_dir, "alpha", 100, 1000, chunks=[chunk(4, 1100)])
    run, summary = _summary_and_exports(run_dir)
    assert "command" not in run.meta and "started_ns" not in run.meta and run.meta["stacks"] == {}
    assert run.losses[0] == "run.json: 3 fields (command, stacks.rate_hz, started_ns) of the wrong type left out"
    assert summary["run"]["command"] is None


def test_what_the_recording_says_it_missed_of_the_wrong_type_is_left_out(tmp_path):
    run_dir = write_meta(tmp_path / "run", incomplete=2**63 - 1, outlived_cmd=[1], sampler_ticks=[])
    write_journal(run_dir, "alpha", 100, 1000, chunks=[chunk(4, 1100)])
    run, summary = _summary_and_exports(run_dir)
    assert run.losses[0] == ("run.json: 3 fields (incomplete, outlived_cmd, sampler_ticks) of the wrong type "
                             "left out")
    assert summary["run"]["incomplete"] == [] and summary["run"]["outlived_cmd"] == []


def test_journal_fields_of_the_wrong_type_are_left_out_and_said(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, 1000, events=[
        {"kind": "process_start", "start_ns": 1500, "end_ns": 1600, "method": ["fork"], "child_pid": "300"},
        {"kind": "process_start", "start_ns": {"a": 1}, "end_ns": 1600},  # unreadable without its start
        {"kind": "fork", "native_threads": None},
    ])
    run, _ = _summary_and_exports(run_dir)
    (start,) = run.events_of("process_start")
    assert "method" not in start["data"] and "child_pid" not in start["data"] and start["data"]["end_ns"] == 1600
    assert run.losses == [
        "hosts/alpha/procs/100-1000.events.jsonl: 1 unreadable line dropped",
        "hosts/alpha/procs/100-1000.events.jsonl: 4 fields (child_pid, method, native_threads, start_ns) "
        "of the wrong type left out"]


def test_a_directory_in_place_of_a_file_is_said(two_hosts):
    base = layout.procs_dir(two_hosts, "alpha") / "200-1200"
    events = base.parent / (base.name + journal.EVENTS_SUFFIX)
    events.unlink()
    events.mkdir()
    samples = layout.host_dir(two_hosts, "beta") / layout.SAMPLES_FILE
    samples.unlink()
    samples.mkdir()
    run, _ = _summary_and_exports(two_hosts)
    assert 200 not in run.processes["pid"].tolist() and len(run.samples) == 0
    assert "hosts/alpha/procs/200-1200.events.jsonl: unreadable (Is a directory): its records are lost" in run.losses
    assert "hosts/beta/samples.bin: not a file: its records are lost" in run.losses


@pytest.mark.parametrize("schema, said", [
    (99, "journal schema 99 is newer than this writerprof reads (up to 2): upgrade writerprof"),
    (0, "journal schema 0 is not a version number the probe writes"),
    ("1", "journal schema None is not a version number the probe writes"),  # a string: left out
])
def test_a_journal_of_another_schema_is_skipped_and_said(tmp_path, schema, said):
    run_dir = write_meta(tmp_path / "run")
    base = write_journal(run_dir, "alpha", 100, 1000, chunks=[chunk(4, 1100)])
    events = base.parent / (base.name + journal.EVENTS_SUFFIX)
    lines = events.read_text().splitlines(keepends=True)
    events.write_text(json.dumps(dict(json.loads(lines[0]), schema=schema)) + "\n" + "".join(lines[1:]))
    run = load(run_dir)
    assert len(run.processes) == 0 and len(run.chunks) == 0
    assert f"hosts/alpha/procs/100-1000: {said}" in " ".join(run.losses)
    assert "journal skipped (1 chunk records)" in " ".join(run.losses)


def test_an_identity_outside_the_recording_is_skipped(tmp_path):
    run_dir = write_meta(tmp_path / "run", started_ns=10**9, ended_ns=2 * 10**9)
    write_journal(run_dir, "alpha", 100, 10**9 + 5)
    write_journal(run_dir, "alpha", 200, 2**61)
    run = load(run_dir)
    assert run.processes["pid"].tolist() == [100]
    assert run.losses == [f"hosts/alpha/procs/200-{2**61}: its identity's time ({2**61} ns) is not within the "
                          f"recording: journal skipped (0 chunk records)"]


# --- a process that exec'd: two images of one process, no loss ---

def test_an_exec_is_two_images_of_one_process_not_a_loss(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    # The same pid and start (created_ns within a clock tick, as /proc says it
    # after an exec); the first image left no exit: it exec'd the second.
    write_journal(run_dir, "alpha", 100, 1000, exited=False, chunks=[chunk(4, 1100)])
    write_journal(run_dir, "alpha", 100, 1052, t0=3000, chunks=[chunk(4, 3100)])
    run = load(run_dir)
    assert run.losses == []
    assert run.processes["pid"].tolist() == [100, 100]
    first, second = (run.identity("alpha", 100, created) for created in (1000, 1052))
    assert second["exec_of"] == 0 and "exec_of" not in first
    assert run.processes["exited_ns"].tolist() == [3000, 3001]  # the first image ended where the second began
    assert run.chunks["proc"].tolist() == [0, 1]


def test_a_reused_pid_after_a_kill_is_still_a_loss(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, 1000, exited=False)
    write_journal(run_dir, "alpha", 100, 5 * 10**9)  # started seconds later: another process
    run = load(run_dir)
    assert len(run.losses) == 1 and "100-1000: process 100 (main) left no exit record" in run.losses[0]
    assert not any("exec_of" in run.identity("alpha", 100, c) for c in (1000, 5 * 10**9))


def test_events_outside_their_process_life_are_dropped_and_the_rest_kept_in_order():
    """times.in_recording: every event inside (the one-pass common case)
    kept whole; an event's t_ns, start_ns or end_ns outside the process's
    life drops that event alone, said in a loss line."""
    from types import SimpleNamespace

    from writerprof.run import times

    B = 10**12  # the recording's start: more than times.SLACK_NS after 0
    meta = {"started_ns": B, "ended_ns": B + 10**9, "host": "alpha"}
    identity = {"kind": "process", "t_ns": B + 5}
    inside = [{"kind": "phase", "t_ns": B + 10}, {"kind": "process_start", "t_ns": B + 20,
                                                       "start_ns": B + 15, "end_ns": B + 20}]
    late = {"kind": "process_start", "t_ns": B + 30, "start_ns": B + 25, "end_ns": 10**18}
    early = {"kind": "exit", "t_ns": 1}
    whole = SimpleNamespace(identity=identity, events=[identity, *inside], rel="procs/1-1", count=0)
    damaged = SimpleNamespace(identity=identity, events=[identity, inside[0], late, inside[1], early],
                              rel="procs/2-2", count=0)
    losses: list[str] = []
    kept = times.in_recording(None, meta, "alpha", [whole, damaged], losses)
    assert kept == [whole, damaged]
    assert whole.events == [identity, *inside]
    assert damaged.events == [identity, *inside]
    assert losses == ["procs/2-2: 2 events with times outside the process's life dropped"]
