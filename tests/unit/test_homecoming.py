"""The parts come home (writerprof.record.homecoming, and the agent's end in
writerprof.record.agent), over real sockets on loopback: a host's part
merged into the launcher's run directory byte for byte and removed where it
was; and refused, with nothing written outside its place, when its agent
lacks the recording's secret or is another recording's, when an entry
points out of its host's directory, when it brings more than the limit,
when its bytes were altered, or when it never comes."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from writerprof.probes.writerprof_probe import agent as probe_agent
from writerprof.probes.writerprof_probe import format
from writerprof.probes.writerprof_probe.format import host_name
from writerprof.record import agent, homecoming, launchers
from writerprof.run import directory, layout, meta

OPTIONS = {"interval_ns": 100_000_000, "sampler": True, "probes": [], "env": {}}
HOST = "hostb"
NO_PROCESSES = SimpleNamespace(status=lambda: SimpleNamespace(alive=frozenset()))  # a sampler with none left


@pytest.fixture
def launcher(tmp_path):
    """(the launcher's run directory, a Listener of its recording on loopback)."""
    run_dir = directory.create(tmp_path / "run", ["mpirun", "true"], **OPTIONS)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.setblocking(False)
    listener = homecoming.Listener(run_dir, meta.run_id(run_dir), host_name(), [sock])
    yield run_dir, listener
    if listener.ended_at is None:
        listener.collect()


def _part(root: Path, run_id: str) -> Path:
    """A host's part as its processes leave it: RUN/hosts/HOST/ with the recording's id."""
    host_dir = root / "hosts" / HOST
    (host_dir / "procs").mkdir(parents=True)
    (host_dir / "run_id").write_text(run_id + "\n")
    (host_dir / "procs" / "7-100.events.jsonl").write_bytes(b'{"kind": "process"}\n' * 1000)
    (host_dir / "samples.bin").write_bytes(bytes(range(256)) * 4096)
    (host_dir / "empty").write_bytes(b"")
    return host_dir


def _register(listener: homecoming.Listener, key: str | None = None, run_id: str | None = None,
              run: str = "/tmp/run", host: str = HOST) -> agent._Home:
    sock = socket.create_connection(listener.sockets[0].getsockname()[:2])
    return agent._Home._handshake(sock, key or listener.key, host, listener.run_id if run_id is None else run_id,
                                  run)


def _taken(listener: homecoming.Listener, nbytes: int) -> agent._Home:
    """An agent registered, told CMD ended, whose part of one file of nbytes record takes."""
    home = _register(listener)
    listener.end()
    assert home.wait_for_end(NO_PROCESSES)
    home.channel.send({"part": {"files": 1, "bytes": nbytes}})
    assert home.channel.line() == {"take": True}
    return home


def _files(top: Path) -> list[str]:
    return sorted(str(p.relative_to(top)) for p in top.rglob("*"))


def test_a_part_comes_home_whole_and_leaves_its_host(launcher, tmp_path):
    run_dir, listener = launcher
    remote = tmp_path / "remote-run"
    host_dir = _part(remote, listener.run_id)
    before = {p: p.read_bytes() for p in host_dir.rglob("*") if p.is_file()}
    address = "%s:%d" % listener.sockets[0].getsockname()[:2]
    home = _register(listener)
    listener.end()
    assert home.wait_for_end(NO_PROCESSES)
    home.send(remote, HOST)
    outcome = listener.collect()
    assert outcome["home"] == {HOST: {"files": 4, "bytes": sum(map(len, before.values()))}}
    assert outcome["missing"] == {} and outcome["addresses"] == [address]
    arrived = run_dir / "hosts" / HOST
    for path, data in before.items():
        assert (arrived / path.relative_to(host_dir)).read_bytes() == data
    assert _files(arrived) == sorted([str(p.relative_to(host_dir)) for p in before] + ["procs"])
    assert not remote.exists()  # home: removed where it was, and the directories it left empty
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".incoming")] == []  # no staging left


def test_an_agent_without_the_secret_is_refused(launcher):
    run_dir, listener = launcher
    with pytest.raises(homecoming.ProtocolError, match="record refused it: no proof"):
        _register(listener, key="0" * 64)
    outcome = listener.collect()
    assert outcome["home"] == outcome["missing"] == {}  # never a host: it did not prove it is one
    assert sorted(p.name for p in (run_dir / "hosts").iterdir()) == [host_name()]


def test_another_recordings_agent_is_refused(launcher):
    _, listener = launcher
    with pytest.raises(homecoming.ProtocolError, match="not this recording's"):
        _register(listener, run_id="0123456789abcdef")


def test_a_listener_without_the_secret_gets_nothing(launcher, tmp_path):
    """The agent checks record's proof too: it sends its part to no one else."""
    _, listener = launcher
    listener.key = "1" * 64  # (as if another program listened there)
    sock = socket.create_connection(listener.sockets[0].getsockname()[:2])
    with pytest.raises(homecoming.ProtocolError):
        agent._Home._handshake(sock, "2" * 64, HOST, listener.run_id, "/tmp/run")


@pytest.mark.parametrize("entry", [{"file": "../escaped"}, {"file": "/tmp/escaped"}, {"file": "procs/../../escaped"},
                                   {"file": "procs//x"}, {"dir": ".."}, {"link": "procs/x", "to": "/etc"}])
def test_an_entry_outside_its_hosts_directory_is_refused(launcher, tmp_path, entry):
    run_dir, listener = launcher
    home = _taken(listener, 3)
    home.channel.send({**entry, "size": 3})
    # (record may refuse the entry itself, a link, and close before the bytes reach it: its answer is read all the same.)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        home.channel.send_bytes(b"abc")
        home.channel.send({"done": home.channel.digest()})
    refused = home.channel.line()
    outcome = listener.collect()
    assert "refused" in refused and outcome["missing"][HOST]["reason"] == refused["refused"]
    assert "escaped" not in str(_files(tmp_path)) and not (run_dir / "hosts" / HOST).exists()
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".incoming")] == []


def test_a_part_over_the_limit_is_refused(launcher, tmp_path, monkeypatch):
    run_dir, listener = launcher
    monkeypatch.setattr(homecoming, "LIMIT", 64 << 10)
    remote = tmp_path / "remote-run"
    _part(remote, listener.run_id)
    home = _register(listener)
    listener.end()
    assert home.wait_for_end(NO_PROCESSES)
    home.send(remote, HOST)
    outcome = listener.collect()
    assert "more than the 0 MiB a part may bring" in outcome["missing"][HOST]["reason"]
    assert not (run_dir / "hosts" / HOST).exists()
    # It stays where it was, saying why.
    left = json.loads((remote / "hosts" / HOST / layout.HOMECOMING_FILE).read_text())
    assert left["error"].startswith("record refused it") and (remote / "hosts" / HOST / "samples.bin").exists()


def test_more_bytes_than_the_limit_are_refused(launcher, monkeypatch):
    """What a part declares aside: what comes past the limit is not taken."""
    _, listener = launcher
    monkeypatch.setattr(homecoming, "LIMIT", 64 << 10)
    home = _taken(listener, 1)
    home.channel.send({"file": "big", "size": 128 << 10})
    try:
        home.channel.send_bytes(bytes(128 << 10))
    except OSError:
        pass  # refused midway: record closed
    assert "more than 0 MiB" in listener.collect()["missing"][HOST]["reason"]


def test_altered_bytes_are_refused(launcher):
    run_dir, listener = launcher
    home = _taken(listener, 3)
    home.channel.send({"file": "x", "size": 3})
    home.channel.sock.sendall(b"abd")  # not what the agent's MAC says it sent
    home.channel.send_bytes(b"")
    home.channel.sent_mac.update(b"abc")
    home.channel.send({"done": home.channel.digest()})
    assert "altered on the way" in home.channel.line()["refused"]
    assert "altered" in listener.collect()["missing"][HOST]["reason"] and not (run_dir / "hosts" / HOST).exists()


def test_a_host_that_ends_before_its_part_is_missing(launcher):
    _, listener = launcher
    home = _register(listener, run="/scratch/run")
    home.channel.sock.close()  # killed
    outcome = listener.collect()
    assert outcome["missing"] == {HOST: {"reason": "its connection closed before its part came (the host, or its "
                                                   "agent, ended early)", "part": "/scratch/run"}}


def test_a_part_that_never_comes_is_missing_at_the_deadline(launcher, monkeypatch):
    _, listener = launcher
    monkeypatch.setattr(homecoming, "DEADLINE_S", 0.2)
    home = _register(listener)
    outcome = listener.collect()  # the agent heard the end, and sends nothing
    assert outcome["missing"][HOST]["reason"] == "its part did not come within 0 s of CMD's end"
    home.channel.sock.close()


def test_a_second_agent_for_one_host_is_refused(launcher):
    _, listener = launcher
    first = _register(listener)
    with pytest.raises(homecoming.ProtocolError, match="host hostb has its part here already"):
        _register(listener)
    with pytest.raises(homecoming.ProtocolError, match=f"host {host_name()} has its part here already"):
        _register(listener, host=host_name())  # the launcher's own
    first.channel.sock.close()


def test_an_agent_that_speaks_after_cmds_end_on_a_connection_made_before_comes_home(launcher, tmp_path):
    """The race of a one-second rank: its probe dialed record, then CMD ended
    before the agent it started had imported, and before record's accepting
    thread took the connection. collect() waits for that host all the same."""
    run_dir, listener = launcher
    os.write(listener._stop_w, b"x")  # record's accepting thread is behind: it takes nothing
    listener._accepting.join()
    address = "%s:%d" % listener.sockets[0].getsockname()[:2]
    dialed, error = probe_agent.dial([address, "127.0.0.1:notaport"])
    assert len(dialed) == 1 and isinstance(error, ValueError)  # (an address that cannot be dialed is passed over)
    remote = tmp_path / "remote-run"
    before = sum(f.stat().st_size for f in _part(remote, listener.run_id).rglob("*") if f.is_file())

    def late_agent():
        time.sleep(0.5)  # CMD has ended by now
        home = agent._Home._handshake(agent._connect_any([address], dialed), listener.key, HOST, listener.run_id,
                                      str(remote))
        assert home.wait_for_end(NO_PROCESSES)
        home.send(remote, HOST)

    speaker = threading.Thread(target=late_agent)
    speaker.start()
    listener.end()
    outcome = listener.collect()
    speaker.join()
    assert outcome["home"] == {HOST: {"files": 4, "bytes": before}} and outcome["missing"] == {}
    assert (run_dir / "hosts" / HOST / "samples.bin").exists()


def test_the_starter_dials_record_before_the_agent_starts_and_hands_it_on(launcher, tmp_path, monkeypatch):
    """The probe's maybe_start: record has the connection while the agent's
    interpreter (here a script standing for one) has not yet said a word;
    the agent finds it among its descriptors, by HOMECOMING_FDS_ENV."""
    run_dir, listener = launcher
    seen = tmp_path / "seen"
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\necho \"$WRITERPROF_HOMECOMING_FDS\" > {seen}.tmp\n"
                      f"readlink /proc/self/fd/$WRITERPROF_HOMECOMING_FDS >> {seen}.tmp\n"
                      f"env | grep -c ^WRITERPROF_HOMECOMING_KEY= >> {seen}.tmp\nmv {seen}.tmp {seen}\nsleep 1\n")
    python.chmod(0o700)
    for name, value in {format.LAUNCH_HOST_ENV: "launcher", format.AGENT_PYTHON_ENV: str(python),
                        **listener.environment()}.items():
        monkeypatch.setenv(name, value)
    remote = tmp_path / "remote-run"
    (remote / "hosts" / HOST).mkdir(parents=True)
    events = []
    probe_agent.maybe_start(SimpleNamespace(event=lambda kind, **fields: events.append(fields)), str(remote), HOST)
    assert events[0]["started"] is True, events
    deadline = time.monotonic() + 30
    while not seen.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    fd, link, keys = seen.read_text().split()
    assert fd.isdigit() and link.startswith("socket:[") and keys == "1"
    outcome = listener.collect()  # it ends without a word: no host, nothing missing
    assert len(listener.hosts) == 1  # its connection came all the same (accepted, or taken from the backlog)
    assert outcome["home"] == outcome["missing"] == {}


def test_an_agent_handed_no_connection_dials_record_itself(launcher, tmp_path, monkeypatch):
    """What the starter handed on (HOMECOMING_FDS_ENV): sockets are taken,
    anything else is not; with none, the agent connects on its own."""
    _, listener = launcher
    not_a_socket = os.open(tmp_path, os.O_RDONLY)
    try:
        for handed in ("", str(not_a_socket), f"{not_a_socket},x"):
            monkeypatch.setenv(format.HOMECOMING_FDS_ENV, handed)
            assert agent._handed() is None and format.HOMECOMING_FDS_ENV not in os.environ
    finally:
        os.close(not_a_socket)
    dialed, _ = probe_agent.dial(["%s:%d" % listener.sockets[0].getsockname()[:2]])
    monkeypatch.setenv(format.HOMECOMING_FDS_ENV, str(dialed[0].fileno()))
    (taken,) = agent._handed()
    assert taken.fileno() == dialed[0].fileno()
    taken.detach()  # (one socket object closes the descriptor)
    dialed[0].close()


def test_a_listener_only_where_cmd_may_reach_other_hosts(tmp_path):
    for name in ("mpiexec", "script.sh", "train.py"):
        made = tmp_path / name
        made.write_text({"train.py": "#!/usr/bin/env python3\n"}.get(name, "#!/bin/sh\n"))
        made.chmod(made.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": str(tmp_path)}  # an MPI launcher on it
    assert launchers.may_reach_other_hosts(["mpiexec", "-n", "2", "x"], env)
    assert launchers.may_reach_other_hosts(["sh", "-c", "srun -n 2 x"], {"PATH": "/nowhere"})
    assert launchers.may_reach_other_hosts(["script.sh"], env)  # a script may run the launcher itself
    assert not launchers.may_reach_other_hosts(["python", "-c", "pass"], env)  # Python alone: no listener
    assert not launchers.may_reach_other_hosts(["train.py"], env)
    (tmp_path / "mpiexec").unlink()
    assert not launchers.may_reach_other_hosts(["script.sh"], env)  # no launcher to run


def test_a_listener_on_this_hosts_addresses_but_loopback(tmp_path):
    if not homecoming.addresses():
        pytest.skip("this machine has no network interface but loopback")
    run_dir = directory.create(tmp_path / "run", ["mpiexec"], **OPTIONS)
    listener = homecoming.Listener.open(run_dir, meta.run_id(run_dir), "here")
    try:
        names = listener.environment()
        assert names[homecoming.HOMECOMING_ENV] == ",".join(listener.addresses)
        assert not any(a.startswith("127.") for a in listener.addresses)
        assert len(names[homecoming.HOMECOMING_KEY_ENV]) == 64
    finally:
        listener.collect()


def test_what_record_says_of_a_missing_host():
    notes, problems = homecoming.said({"home": {"node2": {"files": 3, "bytes": 3 << 20}}, "missing": {
        "node1": {"reason": "its connection closed before its part came", "part": "/tmp/my run"}},
        "waited_s": 0.25}, "/tmp/my run")
    assert notes == ["the part of node2 came home (3.0 MiB, merged 0.25 s after CMD's end)"]
    assert problems == ["host node1's part did not come home: its connection closed before its part came; it stays "
                        "on node1 in /tmp/my run",
                        "to merge it: scp -r 'node1:/tmp/my run' node1-part && writerprof merge '/tmp/my run' "
                        "node1-part -o '/tmp/my run-merged'"]
