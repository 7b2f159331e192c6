"""The recording session's parts that need no recording: CMD resolved, CMD's
environment, and a CMD that cannot be started (the run directory is finished
all the same). Recordings themselves: tests/integration/test_record.py."""

import os
import signal

import pytest

from writerprof.analysis.hooks import unmatched_probes
from writerprof.errors import UsageError
from writerprof.probes.writerprof_probe import format as journal
from writerprof.record import launchers, session
from writerprof.record.stackoptions import StackOptions
from writerprof.run import directory, load


def test_resolve_checks_the_program(tmp_path):
    assert session.resolve(["--", "sh", "-c", "true"]) == ["sh", "-c", "true"]
    for missing in (["no-such-command-here"], [str(tmp_path / "none")]):
        with pytest.raises(session.CommandNotFound) as caught:
            session.resolve(missing)
        assert caught.value.exit_code == 127 and str(caught.value) == f"command not found: {missing[0]}"
    for empty in ([], ["--"]):
        with pytest.raises(UsageError):
            session.resolve(empty)


def test_probe_environment(tmp_path):
    environ = {"PYTHONPATH": "/theirs", "WRITERPROF_PROBES": "stale:f=x",
               launchers.OMPI_ENV_LIST: "OMP_NUM_THREADS;PYTHONPATH"}
    env = session.probe_environment(tmp_path, [], environ, extra={"WRITERPROF_FORCE": "fork"},
                                    interval_ns=20_000_000)
    assert env["PYTHONPATH"] == os.pathsep.join([session.PROBE_DIR, "/theirs"])
    assert env["WRITERPROF_RUN"] == str(tmp_path.resolve()) and "WRITERPROF_PROBES" not in env
    assert env[journal.INTERVAL_ENV] == "20000000" and env["WRITERPROF_FORCE"] == "fork"
    forwarded = env[launchers.OMPI_ENV_LIST].split(";")
    assert forwarded[:2] == ["OMP_NUM_THREADS", "PYTHONPATH"] and len(forwarded) == len(set(forwarded))
    assert {k for k in env if k.startswith("WRITERPROF_")} <= set(forwarded)
    # Record's first: MPICH Hydra's -genvlist would not pass on the last (test_launcher_lists.py).
    assert list(env)[:len(session.forwarded(env))] == session.forwarded(env)
    added = session.probe_environment(tmp_path, ["m:f=a", "m:g=b"], {})
    assert added["WRITERPROF_PROBES"] == "m:f=a\nm:g=b" and added["PYTHONPATH"] == session.PROBE_DIR


def test_a_command_that_cannot_start_finishes_the_run(tmp_path):
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    run_dir = directory.create(tmp_path / "run", [str(script)], interval_ns=session.INTERVAL_NS,
                               sampler=True, probes=[], env={})
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    with pytest.raises(session.CommandNotRunnable) as caught:
        session.record(run_dir, [str(script)], session.INTERVAL_NS, [], stacks=StackOptions(enabled=False))
    assert caught.value.exit_code == 126 and "Permission denied" in str(caught.value)
    assert {s: signal.getsignal(s) for s in handlers} == handlers  # record's forwarding is undone
    run = load(run_dir)
    assert run.complete and (run.meta["exit_status"], run.meta["ended_by"]) == (126, "not_started")
    assert run.meta["stacks"]["taken"] is False and run.meta["stacks"]["reason"] == "the command did not start"


def test_an_interval_below_a_millisecond_is_a_usage_error(capsys):
    from writerprof.cli import main

    assert main(["record", "--interval", "1us", "--", "true"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "argument --interval: '1us' is shorter than the shortest sampling interval, 1ms" in line
    assert main(["record", "--interval", "500us", "--", "true"]) == 2


def test_what_went_wrong_with_a_recording_is_a_line_each():
    done = session.Recorded(exit_status=0)
    done.incomplete = ["samples end early: disk full"]
    done.outlived = [{"pid": 42, "cmdline": ["python", "-c", "a\nb"]}]
    done.sampler_ticks = {"interval_ns": 1_000_000, "ticks": 10, "late": 4, "longest_ns": 7_500_000}
    assert done.recording_notes() == [
        "recording incomplete: samples end early: disk full",
        "the sampler fell behind its 1 ms interval: 4 of 10 ticks took longer (longest 7.5 ms): "
        "samples are further apart than asked",
        "pid 42 (python -c 'a\\nb') outlived CMD: still running when the recording ended, not waited for"]
    on_time = session.Recorded(exit_status=0)
    on_time.sampler_ticks = {"interval_ns": 1, "ticks": 100, "late": 9, "longest_ns": 2}
    assert on_time.recording_notes() == []  # a late tick now and then is no note


def test_unmatched_probe_specs_and_why():
    hooks = [{"data": {"spec": "os:nope=x", "status": "unavailable", "reason": "os has no callable nope"}},
             {"data": {"spec": "m:f=a", "status": "unavailable", "reason": "not yet"}},
             {"data": {"spec": "m:f=a", "status": "applied", "reason": None}}]  # applied in another process
    assert unmatched_probes(["os:nope=x", "m:f=a", "gone:g=b"], hooks) == {
        "os:nope=x": "os has no callable nope", "gone:g=b": "no process imported gone"}


def test_a_spec_that_timed_no_call_says_why():
    hooks = [{"data": {"spec": "ext:T.m=gen", "status": "applied",
                       "reason": "objects of an extension type are wrapped"}},
             {"data": {"spec": "mod:f=fill", "status": "applied", "reason": None}},
             {"data": {"spec": "mod:g=idle", "status": "applied", "reason": None}}]
    found = unmatched_probes(["ext:T.m=gen", "mod:f=fill", "mod:g=idle"], hooks, {"gen": 0, "fill": 3})
    assert found == {"ext:T.m=gen": "applied, but it timed no call: an extension type's method is timed only on "
                                    "the objects made through ext's name, not on those its library makes in C",
                     "mod:g=idle": "applied, but it timed no call"}


BURN = """
import resource, sys
while resource.getrusage(resource.RUSAGE_SELF).ru_utime < 0.3:
    pass
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime)
sys.exit(3)
"""


def test_what_record_cost_is_in_run_json_by_part(tmp_path):
    """CMD's CPU time from its wait4, the sampler thread's, and no py-spy
    time where no py-spy ran; CMD's exit status as before."""
    import sys

    out = tmp_path / "out"
    command = [sys.executable, "-c", BURN]
    run_dir = directory.create(tmp_path / "run", command, interval_ns=session.INTERVAL_NS, sampler=True,
                               probes=[], env={})
    with open(out, "w") as output:
        recorded = session.record(run_dir, command, session.INTERVAL_NS, [], output=output,
                                  stacks=StackOptions(enabled=False))
    assert recorded.exit_status == 3
    spent = float(out.read_text().split()[-1])  # what CMD said it used, before its exit
    cost = load(run_dir).meta["record_cpu"]
    assert spent <= cost["cmd_s"] < spent + 0.5
    assert cost["py_spy_s"] == pytest.approx(0.0, abs=0.005)  # no child but CMD
    assert cost["sampler_s"] > 0 and cost["stacks_threads_s"] == 0
    assert cost["before_cmd_s"] > 0 and cost["record_s"] >= cost["sampler_s"]
