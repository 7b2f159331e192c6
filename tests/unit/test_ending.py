"""How a run ended (writerprof.analysis.ending), on synthetic runs cut as a
kill would cut them: every record after the cut gone (a process alive then
leaves no exit record), run.json as record leaves it after a SIGTERM it
passed on, a Slurm time limit or scancel, a killed CMD, or its own SIGKILL;
each save's status, and the headline figures from the complete ones."""

from __future__ import annotations

import copy
import json
import shutil

import numpy as np
import pytest

from writerprof.analysis import compare, shapes
from writerprof.analysis.ending import cut_signal
from writerprof.analysis.summary import summarize
from writerprof.probes.writerprof_probe import format as journal
from writerprof.render import format as text, html, terminal
from writerprof.run import layout, load
from writerprof.run.loader import CHUNK_DTYPE, SAMPLE_DTYPE, THREAD_SAMPLE_DTYPE
from writerprof.run.shm import PLACEMENT_FILE, SHM_FILE
from writerprof.synthetic import MIB, Scenario, write_run

SCENARIO = Scenario(hosts=1, ranks_per_host=1, saves=3, chunks_per_save=8, chunk_size=4 * MIB, fsync_s=0.05)
SIGTERM_AT = {"signal": "SIGTERM"}
UNCUT = 2**62  # a cut after every record


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """The uncut run and its summary."""
    path = write_run(tmp_path_factory.mktemp("clean") / "run", SCENARIO)
    return path, summarize(load(path))


def _cut(clean, tmp_path, at_ns: int, **meta) -> tuple:
    """A copy of the clean run cut at at_ns (the host's clock), run.json's keys
    set to meta; its Run and summary."""
    path = tmp_path / "cut"
    shutil.copytree(clean[0], path)
    host = layout.host_dir(path, "host0")
    procs = host / layout.PROCS_DIR
    for events in procs.glob("*" + journal.EVENTS_SUFFIX):
        lines = [json.loads(line) for line in events.read_text().splitlines()]
        base = events.name[: -len(journal.EVENTS_SUFFIX)]
        if lines[0]["t_ns"] > at_ns:  # started after the cut: never was
            for file in procs.glob(base + ".*"):
                file.unlink()
            continue
        events.write_text("".join(json.dumps(e) + "\n" for e in lines if e["t_ns"] <= at_ns))
    for suffix, dtype, field in ((journal.CHUNKS_SUFFIX, CHUNK_DTYPE, "end_ns"), (journal.SHM_SUFFIX, SHM_FILE, "t_ns"),
                                 (journal.PLACEMENT_SUFFIX, PLACEMENT_FILE, "t_ns")):
        for file in procs.glob("*" + suffix):
            _keep(file, dtype, field, at_ns)
    _keep(host / layout.SAMPLES_FILE, SAMPLE_DTYPE, "t_ns", at_ns)
    _keep(host / layout.THREADS_FILE, THREAD_SAMPLE_DTYPE, "t_ns", at_ns, layout.HEADER.size)
    sampled = host / layout.SAMPLED_FILE
    sampled.write_text("".join(line + "\n" for line in sampled.read_text().splitlines()
                               if json.loads(line)["t_ns"] <= at_ns))
    run_json = path / layout.RUN_FILE
    written = json.loads(run_json.read_text())
    for entry in meta.get("signals") or []:  # as record writes one: its wall and monotonic times
        if isinstance(entry, dict) and entry.get("at_ns") is None:
            entry.update(at_ns=at_ns, wall_ns=written["started_wall_ns"] + at_ns - written["started_ns"])
    written.update(meta)
    run_json.write_text(json.dumps(written))
    run = load(path)
    return run, summarize(run)


def _keep(file, dtype, field, at_ns, header=0):
    head = file.read_bytes()[:header]  # (threads.bin's: layout.HEADER)
    records = np.fromfile(file, dtype=dtype, offset=header)
    with open(file, "wb") as out:
        out.write(head)
        records[records[field] <= at_ns].tofile(out)


def _mid(clean, index: int) -> int:
    save = clean[1]["saves"][index]
    return (save["start_ns"] + save["end_ns"]) // 2


def _sigterm(at_ns: int, **more) -> dict:
    """run.json as record leaves it when it passed on a SIGTERM at at_ns and CMD then exited 143."""
    return dict(signals=[dict(SIGTERM_AT)], exit_status=143, ended_by="exit", ended_ns=at_ns + 10**8, **more)


def test_a_run_that_ended_normally_is_complete_and_every_save_with_it(clean):
    summary = clean[1]
    ending = summary["run"]["ending"]
    assert not ending["cut_short"] and not ending["failed"]
    assert ending["by"] is ending["signal"] is ending["at_s"] is ending["recording_cut"] is None
    assert ending["saves"] == {"complete": 3, "interrupted": 0, "unconfirmed": 0}
    assert [s["status"] for s in summary["saves"]] == ["complete"] * 3
    assert summary["throughput"]["saves"] == 3 and summary["run"]["slurm"] is None
    assert terminal.report_text(summary).splitlines()[2].startswith("  ended     complete, exit status 0 ")


def test_sigterm_mid_save_interrupts_it_and_the_figures_leave_it_out(clean, tmp_path):
    at = _mid(clean, 1)
    run, summary = _cut(clean, tmp_path, at, **_sigterm(at))
    ending = summary["run"]["ending"]
    assert ending["cut_short"] and not ending["failed"]
    assert (ending["by"], ending["signal"], ending["exit_signal"]) == ("record_signal", "SIGTERM", "SIGTERM")
    assert ending["at_s"] == pytest.approx((at - run.meta["started_ns"]) / 1e9)
    assert ending["signals"] == [{"signal": "SIGTERM", "at_s": ending["at_s"]}]
    saves = summary["saves"]
    assert [s["status"] for s in saves] == ["complete", "interrupted"]
    assert saves[1]["gib_s"] is None and 0 < saves[1]["bytes"] < saves[0]["bytes"]  # its chunks before the cut
    # Every headline figure from the complete save alone.
    first = clean[1]["saves"][0]
    assert summary["throughput"]["saves"] == 1 and summary["throughput"]["bytes"] == first["bytes"]
    assert summary["throughput"]["mean_save_s"] == pytest.approx(first["duration_s"])
    assert [r["saves"] for r in summary["ranks"]] == [1]
    assert [a["save"] for a in summary["aggregate"]["saves"]] == [1]
    assert [i["save"] for i in summary["save_indices"]] == [1]
    assert all(d["evidence"].get("saves", 1) == 1 for d in summary["diagnoses"])
    assert shapes.mismatches(summary, shapes.Summary) == []
    lines = terminal.report_text(summary).splitlines()
    head = "\n".join(lines[:6])
    assert f"ended     CUT SHORT by SIGTERM at {ending['at_s']:.2f} s: a signal writerprof record received" in head
    assert "exit status 143 (128+SIGTERM)" in head and "1 complete of" in head and "1 interrupted" in head
    assert lines[lines.index("Cut short, not in the figures (1):") + 1].startswith("  save 2 (rank 0) on host0")
    page = html.report_html(summary)
    assert "CUT SHORT by SIGTERM" in page and "INTERRUPTED" in page and "written before the cut" in page


def test_a_save_whose_owner_did_nothing_after_it_is_unconfirmed(clean, tmp_path):
    end = clean[1]["saves"][1]["end_ns"]  # the writer has exited; the producer has not gone on
    _, summary = _cut(clean, tmp_path, end, **_sigterm(end))
    assert [s["status"] for s in summary["saves"]] == ["complete", "unconfirmed"]
    assert summary["saves"][1]["bytes"] == clean[1]["saves"][1]["bytes"]  # whole
    assert summary["throughput"]["saves"] == 1
    assert "1 unconfirmed" in terminal.report_text(summary)


@pytest.mark.parametrize("signal_after_ms, status", [(10, "unconfirmed"), (25, "complete")])
def test_only_what_the_owner_did_before_the_signal_confirms_a_save(clean, tmp_path, signal_after_ms, status):
    """The producer goes on 20 ms after save 2 (the next save's buffers) and is
    killed mid-save 3: save 2 is confirmed only if it went on before the
    signal came; after it, it was answering the signal (or ignoring it)."""
    end = clean[1]["saves"][1]["end_ns"]
    signal_ns = end + signal_after_ms * 10**6
    killed = _mid(clean, 2)
    _, summary = _cut(clean, tmp_path, killed, signals=[{"signal": "SIGTERM", "at_ns": signal_ns}], exit_status=143,
                      ended_ns=killed + 10**8)
    assert [s["status"] for s in summary["saves"]] == ["complete", status, "interrupted"]


def test_a_killed_recording_ends_where_its_journals_do(clean, tmp_path):
    at = _mid(clean, 1)
    run, summary = _cut(clean, tmp_path, at, ended_ns=None, exit_status=None, ended_by=None, signals=[])
    ending = summary["run"]["ending"]
    assert ending["cut_short"] and ending["by"] == "recording_cut" and ending["signal"] is None
    cut = ending["recording_cut"]
    # The producer, its resource tracker, the first writer (exited) and the second (alive at the cut);
    # the third never started.
    assert (cut["processes"], cut["exited"]) == (4, 1)
    assert ending["at_s"] == cut["at_s"] <= (at - run.meta["started_ns"]) / 1e9
    assert cut["at_s"] > summary["saves"][0]["end_s"]
    assert [s["status"] for s in summary["saves"]] == ["complete", "interrupted"]
    head = "\n".join(terminal.report_text(summary).splitlines()[:5]).replace("\n            ", " ")
    assert f"CUT SHORT; RECORDING CUT at {cut['at_s']:.2f} s: run.json never finished" in head
    assert "1 of 4 processes left an exit record; exit status unknown" in head


def test_a_killed_recording_whose_processes_all_exited_is_not_cut_short(clean, tmp_path):
    """record died after CMD ended (its summary, say): the journals are whole."""
    _, summary = _cut(clean, tmp_path, UNCUT, ended_ns=None, exit_status=None, ended_by=None)
    ending = summary["run"]["ending"]
    assert not ending["cut_short"] and ending["recording_cut"]["exited"] == ending["recording_cut"]["processes"]
    assert [s["status"] for s in summary["saves"]] == ["complete"] * 3
    assert "ended     RECORDING CUT at" in terminal.report_text(summary)


@pytest.mark.parametrize("end_after_s, by", [(2, "slurm_time_limit"), (-30, "slurm_time_limit"), (600, "slurm")])
def test_under_slurm_the_jobs_end_tells_a_time_limit_from_scancel(clean, tmp_path, end_after_s, by):
    """The signal within a few seconds before the job's end, or after it: the time limit; well before: Slurm."""
    at = _mid(clean, 1)
    meta = json.loads((clean[0] / layout.RUN_FILE).read_text())
    at_wall = meta["started_wall_ns"] + at - meta["started_ns"]
    job = {"job_id": "42", "step_id": None, "nodelist": "node1", "time_limit_s": 60,
           "end_wall_ns": at_wall + end_after_s * 10**9}
    _, summary = _cut(clean, tmp_path, at, **_sigterm(at, slurm=job))
    assert summary["run"]["ending"]["by"] == by
    assert summary["run"]["slurm"] == job
    said = text.ending(summary["run"])
    assert ("Slurm job 42 reached its time limit (00:01:00)" if by == "slurm_time_limit"
            else "Slurm job 42 cancelled or signalled (scancel), before its time limit") in said


def test_under_slurm_without_a_signal_to_record_its_end_time_is_cmds(clean, tmp_path):
    """srun's tasks killed by Slurm, record not signalled: CMD's exit 143, at its end."""
    at = _mid(clean, 1)
    meta = json.loads((clean[0] / layout.RUN_FILE).read_text())
    job = {"job_id": "7", "time_limit_s": 60, "end_wall_ns": meta["started_wall_ns"] + at - meta["started_ns"]}
    _, summary = _cut(clean, tmp_path, at, exit_status=143, ended_by="exit", ended_ns=at, slurm=job)
    ending = summary["run"]["ending"]
    assert (ending["by"], ending["signal"]) == ("slurm_time_limit", "SIGTERM")
    assert [s["status"] for s in summary["saves"]] == ["complete", "interrupted"]


@pytest.mark.parametrize("meta, by, signal, words", [
    (dict(exit_status=137, ended_by="signal", signal="SIGKILL"), "cmd_signal", "SIGKILL",
     "CUT SHORT by SIGKILL at {at} s: CMD was killed by it; exit status 137 (128+SIGKILL)"),
    (dict(exit_status=143, ended_by="exit"), "exit_status", "SIGTERM",
     "CUT SHORT by SIGTERM at {at} s: a process of CMD was killed by it; exit status 143 (128+SIGTERM)"),
])
def test_a_signal_that_killed_cmd_or_one_of_its_processes(clean, tmp_path, meta, by, signal, words):
    at = _mid(clean, 1)
    run, summary = _cut(clean, tmp_path, at, ended_ns=at + 10**8, **meta)
    ending = summary["run"]["ending"]
    assert (ending["cut_short"], ending["by"], ending["signal"]) == (True, by, signal)
    assert ending["at_s"] == pytest.approx((at + 10**8 - run.meta["started_ns"]) / 1e9)  # CMD's end
    assert text.ending(summary["run"]) == words.format(at=f"{ending['at_s']:.2f}")


def test_a_failed_command_is_complete_not_cut_short(clean, tmp_path):
    _, summary = _cut(clean, tmp_path, UNCUT, exit_status=1, signals=[{"signal": 15}, "SIGTERM", {"at_ns": 1}])
    ending = summary["run"]["ending"]
    assert ending["failed"] and not ending["cut_short"] and ending["signals"] == []  # unreadable entries: none
    assert [s["status"] for s in summary["saves"]] == ["complete"] * 3
    assert text.ending(summary["run"]) == "complete: CMD failed; exit status 1"


def test_compare_takes_the_complete_saves_only(clean, tmp_path):
    at = _mid(clean, 2)
    _, summary = _cut(clean, tmp_path, at, **_sigterm(at))
    assert [s["status"] for s in summary["saves"]] == ["complete", "complete", "interrupted"]
    comparison = compare.compare([clean[1]], [summary])
    assert (comparison["a"]["saves"], comparison["b"]["saves"]) == (3, 2)
    assert comparison["b"]["mean_save_s"] == pytest.approx(np.mean([s["duration_s"] for s in summary["saves"][:2]]))
    old = copy.deepcopy(summary)  # a summary from before statuses: every save counts
    for save in old["saves"]:
        del save["status"]
    assert compare.side([old])["saves"] == 3


@pytest.mark.parametrize("meta, said", [
    ({"signals": [{"signal": "SIGUSR2", "at_ns": 5}, {"signal": "SIGTERM", "at_ns": 1}], "ended_by": "exit",
      "exit_status": 0}, "SIGTERM"),  # the first record passed on
    ({"signals": [], "ended_by": "signal", "signal": "SIGKILL", "exit_status": 137}, "SIGKILL"),
    ({"ended_by": "exit", "exit_status": 143}, "SIGTERM"),  # srun's, once its tasks were killed
    ({"ended_by": "exit", "exit_status": 128 + 40}, "signal 40"),  # a real-time one, without a name
    ({"ended_by": "exit", "exit_status": 1}, None),
    ({"ended_by": None, "exit_status": None}, None),  # record killed: run.json alone cannot tell
])
def test_the_signal_that_cut_a_run_by_its_run_json(meta, said):
    assert cut_signal(meta) == said
