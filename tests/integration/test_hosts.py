"""Many hosts, on one machine: processes told to file themselves under
another host name (WRITERPROF_HOST) are that host's. Their first probed
process starts that host's sampler agent; without a shared run directory
their part is merged into the launcher's with `writerprof merge`."""

from __future__ import annotations

import filecmp
import json
import os
import time

import psutil

from helpers import run_writerprof, writerprof_command
from writerprof.run import load

REPRO = ["repro", "--saves", "2", "--size", "128MiB", "--chunk-size", "32MiB"]


def _shell(*commands: str) -> list[str]:
    return ["sh", "-c", " & ".join(commands) + "; wait"]


def _repro(host: str | None = None, run: str | None = None) -> str:
    env = "".join(f"{k}={v} " for k, v in (("WRITERPROF_HOST", host), ("WRITERPROF_RUN", run)) if v)
    return env + " ".join(writerprof_command() + REPRO)


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
