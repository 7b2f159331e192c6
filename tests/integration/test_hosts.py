"""Many hosts, on one machine: processes told to file themselves under
another host name (WRITERPROF_HOST) are that host's. Their first probed
process starts that host's sampler agent; without a shared run directory
their part is merged into the launcher's with `writerprof merge`. A part is
one recording's: recorded into again, its directory never mixes two."""

from __future__ import annotations

import filecmp
import json
import os
import sys
import time

import psutil

from helpers import run_writerprof, writerprof_command
from writerprof.probes.writerprof_probe.format import HOMECOMING_ENV
from writerprof.run import load

REPRO = ["repro", "--saves", "2", "--size", "128MiB", "--chunk-size", "32MiB"]


def _shell(*commands: str) -> list[str]:
    return ["sh", "-c", " & ".join(commands) + "; wait"]


def _repro(host: str | None = None, run: str | None = None) -> str:
    env = "".join(f"{k}={v} " for k, v in (("WRITERPROF_HOST", host), ("WRITERPROF_RUN", run)) if v)
    # A run directory of its own stands for a host without shared storage that cannot reach
    # record (a firewall): its part stays there, for merge (parts that come home: test_multihost).
    unreachable = "env -u WRITERPROF_HOMECOMING " if run else ""
    return unreachable + env + " ".join(writerprof_command() + REPRO)


def _agents_gone(timeout_s: float = 30) -> bool:
    """No `writerprof.record.agent` process left (each ends once its host's processes have)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = [p for p in psutil.process_iter(["cmdline"])
                 if "writerprof.record.agent" in (p.info["cmdline"] or [])]
        if not alive:
            return True
        time.sleep(0.2)
    return False


def _hosts_of_producers(run) -> dict[str, int]:
    found: dict[str, int] = {}
    for event in run.events_of("process_start"):
        found[event["host"]] = found.get(event["host"], 0) + 1
    return found


def test_a_second_host_in_the_shared_run_directory_gets_its_own_agent(tmp_path):
    out = tmp_path / "run"
    run_writerprof("record", "-o", out, "--", *_shell(_repro(), _repro("hostb")))
    run = load(out)
    assert run.complete and not run.losses, run.losses
    launcher = run.meta["host"]
    assert sorted(run.hosts) == sorted([launcher, "hostb"])
    assert _hosts_of_producers(run) == {launcher: 2, "hostb": 2}  # two saves on each "host"
    # hostb's agent wrote its topology and sampled hostb's producer, writers included.
    assert (out / "hosts" / "hostb" / "topology.json").exists() and "hostb" in run.topology
    hostb = run.hosts.index("hostb")
    sampled = set(run.samples["pid"][run.samples["host_index"] == hostb].tolist())
    hostb_pids = set(run.processes["pid"][run.processes["host"] == "hostb"].tolist())
    assert hostb_pids & sampled and (out / "hosts" / "hostb" / "agent.lock").exists()
    (started,) = [e["data"] for e in run.events_of("agent")]
    assert started["started"] is True
    assert _agents_gone()
    summary = json.loads(run_writerprof("report", "--json", out).stdout)
    assert {s["host"] for s in summary["saves"]} == {launcher, "hostb"}


def test_parts_recorded_apart_merge_into_one_run(tmp_path):
    out, part = tmp_path / "run", tmp_path / "hostb-part"
    part.mkdir()
    run_writerprof("record", "-o", out, "--", *_shell(_repro(), _repro("hostb", str(part))))
    assert _agents_gone()
    assert sorted(os.listdir(part / "hosts")) == ["hostb"] and not (part / "run.json").exists()
    merged = tmp_path / "merged"
    run_writerprof("merge", out, part, "-o", merged)
    # The merged run is the launcher's run.json and each host's subtree, byte for byte.
    for host, source in ((load(out).meta["host"], out), ("hostb", part)):
        cmp = filecmp.dircmp(source / "hosts" / host, merged / "hosts" / host)
        assert not (cmp.left_only or cmp.right_only or cmp.diff_files), host
    run = load(merged)
    assert run.complete and sorted(run.hosts) == sorted([load(out).meta["host"], "hostb"])
    assert _hosts_of_producers(run) == {run.meta["host"]: 2, "hostb": 2}
    journals = len(list((part / "hosts" / "hostb" / "procs").glob("*.events.jsonl")))
    assert len(run.processes) == len(load(out).processes) + journals


def test_merge_refuses_what_is_not_one_recording(tmp_path):
    out = tmp_path / "run"
    run_writerprof("record", "-o", out, "--", "true")
    done = run_writerprof("merge", out, out, "-o", tmp_path / "m", check=False)
    assert done.returncode == 2 and "both have a run.json" in done.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    done = run_writerprof("merge", out, empty, "-o", tmp_path / "m2", check=False)
    assert done.returncode == 2 and "not a part of a recording" in done.stderr


# --- one recording's part, never two: a node-local run directory recorded into again ----------------

def _files(top) -> dict:
    return {str(p.relative_to(top)): p.read_bytes() for p in top.rglob("*") if p.is_file()}


def _stays(command: str) -> str:
    """command, its host's part left where it is: as a host that cannot reach record (no homecoming)."""
    return f"env -u {HOMECOMING_ENV} {command}"


def test_a_rerun_into_the_same_node_local_directory_never_mixes_two_recordings(tmp_path):
    """hostb's run directory is its own (not the launcher's) and has the same
    path both times: the second recording moves the first's part aside whole,
    makes its own and starts its own agent there (the old agent.lock stopped
    it before); merge tells the two apart."""
    part = tmp_path / "hostb-part"
    part.mkdir()
    first, second = tmp_path / "first", tmp_path / "second"
    run_writerprof("record", "-o", first, "--", *_shell(_repro(), _stays(_repro("hostb", str(part)))))
    assert _agents_gone()
    before = _files(part / "hosts")
    assert before
    run_writerprof("record", "-o", second, "--", *_shell(_repro(), _stays(_repro("hostb", str(part)))))
    assert _agents_gone()
    ids = [load(out).meta["run_id"] for out in (first, second)]
    aside = part / "previous" / ids[0]
    assert _files(aside / "hosts") == before  # the first recording's part, whole and as it was
    assert (part / "hosts" / "hostb" / "run_id").read_text() == ids[1] + "\n"
    launcher = load(second).meta["host"]
    for out, hostb_part in ((second, part), (first, aside)):
        merged = tmp_path / f"merged-{out.name}"
        run_writerprof("merge", out, hostb_part, "-o", merged)
        run = load(merged)
        assert _hosts_of_producers(run) == {launcher: 2, "hostb": 2}  # each recording's saves alone
        assert [e["data"]["started"] for e in run.events_of("agent")] == [True]  # hostb's agent, each time
    refused = run_writerprof("merge", first, part, "-o", tmp_path / "stale", check=False)
    assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert all(text in refused.stderr for text in (*ids, f"merge {aside}"))
    again = run_writerprof("record", "-o", second, "--", "true", check=False)
    assert again.returncode == 2 and f"holds recording {ids[1]} already" in again.stderr


def test_the_interposer_alone_never_journals_into_another_recordings_part(tmp_path):
    """No Python process on hostb: its shell and `head` journal their writes
    through the interposer only, which moves the earlier recording's part
    aside as the probe does."""
    part = tmp_path / "hostb-part"
    written = tmp_path / "written"
    hostb = f"WRITERPROF_HOST=hostb WRITERPROF_RUN={part} sh -c 'head -c 2097152 /dev/zero > {written}'"
    journals = []
    for out in (tmp_path / "first", tmp_path / "second"):
        run_writerprof("record", "--no-stacks", "-o", out, "--", "sh", "-c", hostb)
        journals.append(set(os.listdir(part / "hosts" / "hostb" / "io")))
    first_id = load(tmp_path / "first").meta["run_id"]
    assert set(os.listdir(part / "previous" / first_id / "hosts" / "hostb" / "io")) == journals[0]
    assert journals[1] and not journals[1] & journals[0]  # the second part holds the second's journals alone
    assert (part / "hosts" / "hostb" / "run_id").read_text() == load(tmp_path / "second").meta["run_id"] + "\n"


def test_a_job_step_after_the_hosts_agent_ended_gets_an_agent_of_its_own(tmp_path):
    """Two steps on hostb in one recording, the second after the first's
    agent ended with the first's processes (its lock names it, gone: an agent
    with no homecoming to wait for ends so): the second takes the lock over."""
    out = tmp_path / "run"
    lock = out / "hosts" / "hostb" / "agent.lock"
    step = _stays(f"WRITERPROF_HOST=hostb {sys.executable} -c pass")
    ended = (f"pid=$(tail -n 1 {lock} | cut -d' ' -f2); "
             f"while [ -e /proc/$pid ] && ! grep -q ') Z' /proc/$pid/stat; do sleep 0.05; done")
    run_writerprof("record", "--interval", "10ms", "-o", out, "--", "sh", "-c", f"{step}; {ended}; {step}")
    assert _agents_gone()
    agents = [e["data"] for e in load(out).events_of("agent")]
    assert [a["started"] for a in agents] == [True, True] and agents[0]["pid"] != agents[1]["pid"]
