"""A run cut short is said so first, with real `writerprof record` and a
target that holds a save where a cut should land (targets/held_save.py):
SIGTERM to record mid-save, after a save's file closed but before the
target counted it, record SIGKILLed with CMD (as Slurm's cgroup ends a
step), and a clean run that stays complete. Each compares the report with
what the target itself printed ("saved N")."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

import psutil
import pytest

from helpers import TARGETS, run_writerprof, writerprof_command

TARGET = os.path.join(TARGETS, "held_save.py")
SAVES, CHUNKS, MIB = 3, 8, 1 << 20
WAIT_S = 120  # a guard against a hung target, not a measurement


def _start(tmp_path, who: str, hold: int, where: str = "mid") -> tuple:
    run, ckpt = tmp_path / "run", tmp_path / "ckpt"
    ckpt.mkdir()
    record = subprocess.Popen(writerprof_command() + ["record", "-o", str(run), "--", sys.executable, TARGET,
                                                      str(ckpt), str(SAVES), str(CHUNKS), who, str(hold), where],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return run, record


def _until_holding(record) -> list[str]:
    """The target's lines up to "holding" (CMD writes into record's stdout, a pipe: no file the interposer journals)."""
    lines, pending, deadline = [], b"", time.monotonic() + WAIT_S
    while "holding" not in lines:
        assert time.monotonic() < deadline and record.poll() is None, (lines, record.stderr.read().decode())
        if select.select([record.stdout], [], [], 1.0)[0]:
            data = os.read(record.stdout.fileno(), 4096)
            assert data, lines
            pending += data
            *done, pending = pending.split(b"\n")
            lines += [line.decode() for line in done]
    return lines


def _saved(lines: list[str]) -> int:
    return sum(line.startswith("saved ") for line in lines)


def _report(run) -> tuple[dict, list[str]]:
    summary = json.loads(run_writerprof("report", "--json", run).stdout)
    return summary, run_writerprof("report", run).stdout.splitlines()


@pytest.mark.parametrize("who", ["own", "child"])
def test_sigterm_mid_save_is_cut_short_and_the_save_interrupted(tmp_path, who):
    run, record = _start(tmp_path, who, hold=SAVES)
    printed = _until_holding(record)
    record.send_signal(signal.SIGTERM)
    out, _ = record.communicate(timeout=WAIT_S)
    printed += out.decode().splitlines()
    meta = json.loads((run / "run.json").read_text())
    assert [s["signal"] for s in meta["signals"]] == ["SIGTERM"]
    summary, text = _report(run)
    ending = summary["run"]["ending"]
    assert ending["cut_short"] and not ending["failed"]
    assert (ending["by"], ending["signal"], ending["exit_status"], ending["exit_signal"]) == (
        "record_signal", "SIGTERM", 143, "SIGTERM")
    assert ending["at_s"] == pytest.approx((meta["signals"][0]["at_ns"] - meta["started_ns"]) / 1e9)
    assert ending["saves"] == {"complete": 2, "interrupted": 1, "unconfirmed": 0}
    saves = summary["saves"]
    assert [s["status"] for s in saves] == ["complete", "complete", "interrupted"]
    cut = saves[-1]
    assert cut["bytes"] == CHUNKS // 2 * MIB and cut["gib_s"] is None  # the half written before the cut
    # The headline: the complete saves, as many as the target counted.
    assert summary["throughput"]["saves"] == _saved(printed) == 2
    assert summary["throughput"]["bytes"] == 2 * CHUNKS * MIB
    assert [r["saves"] for r in summary["ranks"]] == [2]
    head = "\n".join(text[:6])
    assert "ended     CUT SHORT by SIGTERM at" in head and "exit status 143 (128+SIGTERM)" in head, head
    assert "2 complete of 8.0 MiB" in head and "1 interrupted" in head, head
    assert any(line.rstrip().endswith("INTERRUPTED") for line in text)
    assert any("interrupted, 4.0 MiB written before the cut" in line for line in text)


def test_a_save_closed_but_never_counted_is_unconfirmed(tmp_path):
    run, record = _start(tmp_path, "child", hold=SAVES, where="closed")
    printed = _until_holding(record)
    record.send_signal(signal.SIGTERM)
    out, _ = record.communicate(timeout=WAIT_S)
    printed += out.decode().splitlines()
    summary, text = _report(run)
    assert summary["run"]["ending"]["cut_short"]
    saves = summary["saves"]
    assert [s["status"] for s in saves] == ["complete", "complete", "unconfirmed"]
    assert saves[-1]["bytes"] == CHUNKS * MIB  # its file is whole: only the target's word on it is missing
    assert summary["throughput"]["saves"] == _saved(printed) == 2
    assert "1 unconfirmed" in "\n".join(text[:6])


def test_record_killed_with_cmd_reports_the_recording_cut(tmp_path):
    run, record = _start(tmp_path, "child", hold=SAVES)
    printed = _until_holding(record)
    (target,) = [c for c in psutil.Process(record.pid).children() if c.name() != "py-spy"]
    tree = [target] + target.children(recursive=True)
    record.kill()  # as a step's cgroup is killed: record, then all of CMD
    record.wait(timeout=WAIT_S)
    os.killpg(target.pid, signal.SIGKILL)
    psutil.wait_procs(tree, timeout=WAIT_S)
    record.communicate(timeout=WAIT_S)
    meta = json.loads((run / "run.json").read_text())
    assert meta["ended_ns"] is None and meta["signals"] == []
    summary, text = _report(run)
    ending = summary["run"]["ending"]
    assert ending["cut_short"] and ending["by"] == "recording_cut" and ending["signal"] is None
    # The rank and its writer children: those of the first two saves exited, the rank and the third's were killed.
    assert ending["recording_cut"]["processes"] == SAVES + 1 and ending["recording_cut"]["exited"] == 2
    saves = summary["saves"]
    assert [s["status"] for s in saves] == ["complete", "complete", "interrupted"]
    assert ending["at_s"] == ending["recording_cut"]["at_s"] >= max(s["end_s"] for s in saves[:2])
    assert summary["throughput"]["saves"] == _saved(printed) == 2
    head = "\n".join(text[:6])
    assert "CUT SHORT; RECORDING CUT at" in head and "INCOMPLETE" not in head, head
    assert "2 of 4 processes left an exit record" in head.replace("\n            ", " "), head


def test_a_clean_run_is_complete_and_every_save_complete(tmp_path):
    run, record = _start(tmp_path, "child", hold=0)
    out, err = record.communicate(timeout=WAIT_S)
    assert record.returncode == 0, err.decode()
    summary, text = _report(run)
    ending = summary["run"]["ending"]
    assert not ending["cut_short"] and not ending["failed"] and ending["by"] is None
    assert ending["saves"] == {"complete": SAVES, "interrupted": 0, "unconfirmed": 0}
    assert [s["status"] for s in summary["saves"]] == ["complete"] * SAVES
    assert summary["throughput"]["saves"] == _saved(out.decode().splitlines()) == SAVES
    assert text[2] == "  ended     complete, exit status 0"
