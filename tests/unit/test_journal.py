"""The probe's journal when the disk will not take its writes."""

import errno
import json
import os

from writerprof.probes.writerprof_probe import journal as journal_module


def _full(fd, data):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_journal_that_cannot_write_stops_quietly_and_counts_what_it_drops(tmp_path, monkeypatch, capsys):
    journal = journal_module.Journal(str(tmp_path), "h")
    journal.open(os.getpid(), 1)
    journal.event("process", pid=os.getpid())
    monkeypatch.setattr(journal_module, "_write", _full)
    journal.event("shm", op="create")  # this raised into the target before
    for i in range(3):
        journal.record((1, 0, 0, -1, -1, 1, i, i + 1, 10, 0, 0))
    journal.flush()
    journal.event("exit", code=0)
    assert journal.stopped.startswith("OSError") and journal.dropped == {"events": 2, "records": 3}
    assert capsys.readouterr().err.count("probe off in pid") == 1
    monkeypatch.undo()  # room again at exit
    journal.note_stopped()
    lines = [json.loads(line) for line in open(journal.base + ".events.jsonl")]
    assert [e["kind"] for e in lines] == ["process", "journal_stopped"]
    assert lines[1]["events_dropped"] == 2 and lines[1]["records_dropped"] == 3


def test_a_run_directory_that_cannot_be_made_stops_the_journal_not_the_process(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    journal = journal_module.Journal(str(blocker / "run"), "h")
    journal.open(os.getpid(), 1)
    journal.event("process", pid=os.getpid())
    journal.note_stopped()  # still no room: silent
    assert journal.stopped and journal.dropped["events"] == 1
    assert capsys.readouterr().err.count("probe off in pid") == 1


def test_held_events_are_written_at_release_in_one_write_or_counted_as_dropped(tmp_path, monkeypatch):
    journal = journal_module.Journal(str(tmp_path), "h")
    journal.open(os.getpid(), 1)
    writes = []
    write = journal_module._write
    monkeypatch.setattr(journal_module, "_write", lambda fd, data: writes.append(bytes(data)) or write(fd, data))
    journal.event("process", pid=os.getpid())
    journal.hold()
    for spec in ("a", "b", "c"):
        journal.event("hook", spec=spec)
    assert len(writes) == 1  # the identity line, at once
    journal.release()
    assert len(writes) == 2
    lines = [json.loads(line) for line in open(journal.base + ".events.jsonl")]
    assert [e.get("spec") for e in lines] == [None, "a", "b", "c"]
    journal.hold()
    journal.event("hook", spec="d")
    monkeypatch.setattr(journal_module, "_write", _full)
    journal.release()
    assert journal.dropped["events"] == 1 and journal.held is None


def test_a_later_image_whose_start_reads_the_same_ns_gets_a_journal_of_its_own(tmp_path):
    # An exec'd process reads its clock-tick start again: the same ns now and then (once in CI:
    # both images appended to one journal, and the exec's first image was lost).
    first, second = journal_module.Journal(str(tmp_path), "h"), journal_module.Journal(str(tmp_path), "h")
    assert first.open(4242, 1000) == 1000
    first.event("process", image=1)
    assert second.open(4242, 1000) == 1001 and second.base != first.base
    second.event("process", image=2)
    for journal, image in ((first, 1), (second, 2)):
        assert [json.loads(line)["image"] for line in open(journal.base + ".events.jsonl")] == [image]
    assert sorted(os.listdir(tmp_path / "hosts" / "h" / "procs")) == ["4242-1000.events.jsonl",
                                                                     "4242-1001.events.jsonl"]


def test_a_closed_standard_fd_is_seen_so_that_the_probe_s_threads_open_nothing_meanwhile(tmp_path):
    import subprocess
    import sys

    code = ("import os, sys; from writerprof.probes.writerprof_probe.journal import std_fds_open as o; "
            "a = o(); os.close(2); b = o(); fd = os.open(os.devnull, os.O_RDONLY); c = o(); print(a, b, fd, c)")
    # (Not run from the checkout: its writerprof/ would shadow the installed one, which has the probes.)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.stdout.split() == ["True", "False", "2", "True"], done
