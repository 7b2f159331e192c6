"""A process's shared-memory buffers: journaled as SHM and PLACEMENT records,
or as JSON events (runs of schema 1, and what does not fit a record), read
into the same columns (Run.shm, Run.placements) and the same readings."""

import json
import os

import numpy as np
import pytest

from writerprof.analysis import buffers
from writerprof.analysis.summary import summarize
from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe import journal as journal_module
from writerprof.run import layout, load
from writerprof.run.shm import PLACEMENT_FILE

from test_run_load import write_journal, write_meta

PAGES = 256


def shm(t_ns, op, index, name="psm_a", size=PAGES * 4096):
    return "shm", t_ns, dict(op=op, name=name, size=size, index=index, start=0x7F00_0000_0000 + index * size,
                             end=0x7F00_0000_0000 + (index + 1) * size)


def placement(t_ns, index, when, nodes, name="psm_a", unfaulted=0):
    return "placement", t_ns, dict(name=name, index=index, when=when, source="move_pages", pages=PAGES,
                                   sampled=PAGES, stride=1, nodes=nodes, unfaulted=unfaulted)


# A producer's two buffers, a writer attaching them; the second buffer's pages move from node 0 to 1.
PRODUCER = [shm(1100, "create", 0, "psm_a"), placement(1110, 0, "create", {}, "psm_a", unfaulted=PAGES),
            shm(1200, "create", 1, "psm_b"), placement(1210, 1, "create", {}, "psm_b", unfaulted=PAGES),
            placement(1900, 0, "end", {"0": PAGES}, "psm_a"), placement(1910, 1, "end", {"0": PAGES}, "psm_b")]
WRITER = [shm(1300, "attach", 0, "psm_a"), placement(1310, 0, "attach", {"0": PAGES}, "psm_a"),
          shm(1320, "attach", 1, "psm_b"), placement(1330, 1, "attach", {"0": 200, "1": 56}, "psm_b"),
          placement(1800, 0, "end", {"0": PAGES}, "psm_a"), placement(1810, 1, "end", {"1": PAGES}, "psm_b")]


def write(run, pid, created, readings, *, as_records, schema=journal.SCHEMA, cut=b""):
    """A process's journal with these readings: SHM and PLACEMENT records
    (as the probe writes them), or JSON events (as a schema-1 probe did)."""
    events = [] if as_records else [dict(fields, kind=kind, t_ns=t) for kind, t, fields in readings]
    events.append({"kind": "exit", "t_ns": 2000, "via": "atexit", "code": 0})
    base = write_journal(run, "alpha", pid, created, events=events)
    if schema != journal.SCHEMA:
        lines = base.with_name(base.name + journal.EVENTS_SUFFIX).read_text().splitlines()
        lines[0] = json.dumps(dict(json.loads(lines[0]), schema=schema))
        base.with_name(base.name + journal.EVENTS_SUFFIX).write_text("\n".join(lines) + "\n")
    if as_records:
        for kind, suffix in journal.RECORD_SUFFIXES.items():
            data = b"".join(journal.record(k, t, fields) for k, t, fields in readings if k == kind)
            base.with_name(base.name + suffix).write_bytes(data + cut)
    return base


def a_run(path, *, as_records, **kwargs):
    run = write_meta(path)
    write(run, 100, 1000, PRODUCER, as_records=as_records, **kwargs)
    write(run, 200, 1250, WRITER, as_records=as_records, **kwargs)
    return load(run)


def same_readings(a, b):
    ra, rb = buffers.readings(a), buffers.readings(b)
    for name in ("mapped", "pages", "created", "last_end", "last_nodes", "names", "moved"):
        assert dict(getattr(ra, name)) == dict(getattr(rb, name)), name
        for key, value in getattr(ra, name).items():  # and the same order, which the report keeps
            if isinstance(value, dict):
                assert list(value) == list(getattr(rb, name)[key]), (name, key)


def test_records_read_as_the_json_events_of_a_schema_1_run(tmp_path):
    old = a_run(tmp_path / "old", as_records=False, schema=1)
    new = a_run(tmp_path / "new", as_records=True)
    assert old.losses == new.losses == []
    assert not {"shm", "placement"} & set(old.events["kind"].tolist())  # read into the columns, not kept twice
    assert old.buffer_events("shm") == new.buffer_events("shm")
    assert old.buffer_events("placement") == new.buffer_events("placement")
    same_readings(old, new)
    with pytest.raises(ValueError, match="buffer_events"):  # not an empty answer, silently
        new.events_of("placement")
    r = buffers.readings(new)
    assert r.mapped == {0: {0, 1}, 1: {0, 1}} and r.pages == {0: 2 * PAGES, 1: 2 * PAGES}
    assert r.created == {0: [(1100, 0), (1200, 1)]}
    assert r.last_nodes[1] == {0: {"0": PAGES}, 1: {"1": PAGES}}
    # The writer's 200 pages left node 0, then the producer read all of them back on node 0: 256 left node 1.
    assert r.moved[("alpha", "psm_b")]["pages"] == 200 + PAGES
    assert summarize(old)["processes"] == summarize(new)["processes"]


def test_a_cut_record_is_dropped_and_said(tmp_path):
    run = a_run(tmp_path / "run", as_records=True, cut=b"\1" * 7)
    assert len(run.shm) == 4 and len(run.placements) == 8
    for who in ("100-1000", "200-1250"):
        for suffix in (journal.SHM_SUFFIX, journal.PLACEMENT_SUFFIX):
            assert (f"hosts/alpha/procs/{who}{suffix}: 7 bytes of a partial record dropped "
                    f"(target killed mid-write?)") in run.losses


def test_records_that_cannot_be_are_dropped_and_said(tmp_path):
    run_dir = write_meta(tmp_path / "run", started_ns=1, ended_ns=10**9)
    base = write(run_dir, 100, 1000, PRODUCER, as_records=True)
    bad = np.frombuffer(base.with_name(base.name + journal.PLACEMENT_SUFFIX).read_bytes(), PLACEMENT_FILE).copy()
    bad["t_ns"][0] = 2**62  # past the recording
    bad["when"][1] = 9  # no such code
    bad["nodes"][2] = journal.NODE_SLOTS + 1
    base.with_name(base.name + journal.PLACEMENT_SUFFIX).write_bytes(bad.tobytes())
    run = load(run_dir)
    assert run.placements["t_ns"].tolist() == [1910]  # of 1110, 1210, 1900 and 1910
    assert run.losses == ["hosts/alpha/procs/100-1000.placement.bin: 3 records with impossible values or times "
                          "outside the process's life dropped"]


@pytest.mark.parametrize("seed", range(4))
def test_random_bytes_in_the_records_never_break_the_report(tmp_path, seed):
    run_dir = write_meta(tmp_path / "run")
    base = write(run_dir, 100, 1000, PRODUCER, as_records=True)
    rng = np.random.default_rng(seed)
    for suffix in (journal.SHM_SUFFIX, journal.PLACEMENT_SUFFIX):
        file = base.with_name(base.name + suffix)
        file.write_bytes(file.read_bytes() + rng.bytes(int(rng.integers(0, 2000))))
    run = load(run_dir)
    assert run.shm["t_ns"][:2].tolist() == [1100, 1200]  # the real ones stay
    p = run.placements
    assert ((p["when"] >= 1) & (p["when"] <= 4) & (p["nodes"] <= journal.NODE_SLOTS)).all()
    summarize(run)


def test_what_does_not_fit_a_record_is_journaled_as_its_event_and_reads_the_same(tmp_path):
    long_name = "psm_" + "x" * journal.NAME_BYTES
    many = {str(n): 1 for n in range(journal.NODE_SLOTS + 1)}
    assert journal.record(*shm(1, "create", 0, long_name)) is None
    assert journal.record(*placement(1, 0, "end", many)) is None
    assert journal.record(*shm(1, "create", 0, "psm_\0")) is None and journal.record(*shm(1, "open", 0)) is None
    j = journal_module.Journal(str(tmp_path / "run"), "alpha")
    created = 1000
    j.open(os.getpid(), created)
    j.event("process", t_ns=created, schema=journal.SCHEMA, pid=os.getpid(), ppid=1, created_ns=created, role="main")
    for kind, _, fields in [shm(0, "create", 0, long_name), placement(0, 0, "end", many, long_name),
                            shm(0, "create", 1), placement(0, 1, "end", {"0": PAGES})]:
        j.buffer_event(kind, **fields)
    lines = [json.loads(line) for line in open(j.base + journal.EVENTS_SUFFIX)]
    assert [e["kind"] for e in lines] == ["process", "shm", "placement"]  # the others are records
    assert os.path.getsize(j.base + journal.SHM_SUFFIX) == journal.SHM.size
    assert os.path.getsize(j.base + journal.PLACEMENT_SUFFIX) == journal.PLACEMENT.size
    write_meta(tmp_path / "run", started_ns=1, ended_ns=None)
    run = load(tmp_path / "run")
    (a, b) = sorted(run.buffer_events("placement"), key=lambda e: e["data"]["index"])
    assert a["data"]["name"] == long_name and a["data"]["nodes"] == many and b["data"]["nodes"] == {"0": PAGES}
    assert {e["data"]["name"] for e in run.buffer_events("shm")} == {long_name, "psm_a"}
    assert buffers.readings(run).last_nodes[0] == {0: many, 1: {"0": PAGES}}


def test_a_stopped_journal_counts_buffer_records_as_events(tmp_path, monkeypatch):
    j = journal_module.Journal(str(tmp_path / "run"), "alpha")
    j.open(os.getpid(), 1)
    j.stopped = "OSError: full"
    kind, _, fields = shm(0, "create", 0)
    j.buffer_event(kind, **fields)
    assert j.dropped == {"events": 1, "records": 0}


def test_a_run_of_the_previous_schema_still_loads(tmp_path):
    run = a_run(tmp_path / "run", as_records=False, schema=1)
    write_meta(run.path, schema=1)
    assert len(load(run.path).placements) == 8 and layout.SCHEMA == 2
