"""Object uploads from the journaled HTTP requests and the bytes sent
(writerprof.analysis.uploads), and each one a save (uploadsaves): runs
written to the interposer's journal format, read by the real loader."""

import json

import numpy as np
import pytest
from io_journal import call, path_records, write_io
from test_run_load import chunk, write_journal, write_meta

from writerprof.analysis import hostwise, saves, shapes, uploads
from writerprof.analysis.summary import summarize
from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe import iofile
from writerprof.render import terminal
from writerprof.run import io, load
from writerprof.run.roles import roles

MIB = 1 << 20
MS = 10**6
T = 10**9  # the processes' start
PEER = "tcp:127.0.0.1:9000"
HEAD = 900  # a request's header, as boto3's: sent in the call that carries its request line


def request(file: int, fd: int, tid: int, at: int, text: str, length: int) -> list[bytes]:
    """The send that carried a request's line and header, then its request record (that call's times) and
    the record's text in PATH_DATA records."""
    head = np.zeros(1, io.IO_FILE)
    data = text.encode()
    head["op"], head["file"], head["fd"], head["tid"] = iofile.OPS["request"], file, fd, tid
    head["start_ns"], head["end_ns"], head["result"], head["count"] = at, at + 10_000, length, len(data)
    out = [call("send", file, at, at + 10_000, HEAD, tid=tid, fd=fd), head.tobytes()]
    for i in range(0, len(data), iofile.PATH_CHUNK):
        out.append(bytes([iofile.OPS["path_data"]]) + data[i:i + iofile.PATH_CHUNK].ljust(iofile.PATH_CHUNK, b"\0"))
    return out


def response(file: int, fd: int, tid: int, at: int, status: int) -> list[bytes]:
    """The recv that carried a response's status line, ending at `at`, then its response record."""
    r = np.zeros(1, io.IO_FILE)
    r["op"], r["file"], r["fd"], r["tid"] = iofile.OPS["response"], file, fd, tid
    r["start_ns"], r["end_ns"], r["result"] = at - 10_000, at, status
    return [call("recv", file, at - 10_000, at, 300, tid=tid, fd=fd), r.tobytes()]


def exchange(file: int, fd: int, tid: int, start: int, end: int, text: str, length: int, *, sent: int | None = None,
             status: int = 200) -> list[bytes]:
    """A request from start to its response's end: its header, its body in 4 sends (`sent` bytes: its
    Content-Length unless said), its response."""
    body = length if sent is None else sent
    times = np.linspace(start + 20_000, end - 40_000, 5).astype(np.int64).tolist()
    sends = [call("send", file, a, b, body // 4, tid=tid, fd=fd) for a, b in zip(times, times[1:])]
    return request(file, fd, tid, start, text, length) + sends + response(file, fd, tid, end, status)


def connection(file: int, fd: int, at: int) -> list[bytes]:
    """A socket's PATH records (its peer) and its connect."""
    return path_records(file, PEER) + [call("connect", file, at, at + 50_000, 0, fd=fd)]


def _rank(run_dir, records: list[bytes], events=()):
    """Process 100, a rank with no writer of its own: its interposer journal holds records."""
    write_journal(run_dir, "alpha", 100, T, events=list(events))
    write_io(run_dir, "alpha", 100, T - 1000, records, created_ns=T)


def _only(run):
    found = saves.find(run)
    assert len(found) == 1, found
    return found[0]


def test_a_put_is_a_save_with_its_key_bytes_and_time(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    _rank(run_dir, [*connection(0, 5, T + 1 * MS),
                    *exchange(0, 5, 1, T + 2 * MS, T + 102 * MS, "PUT /ckpt/model-1.pt", 3 * MIB),
                    # A results file's small PUT: no checkpoint's
                    *exchange(0, 5, 1, T + 200 * MS, T + 201 * MS, "PUT /ckpt/results.json", 2000)])
    run = load(run_dir)
    found = uploads.found(run)
    assert [(u.kind, u.key, u.bytes, u.checkpoint) for u in found] == [
        ("single", "/ckpt/model-1.pt", 3 * MIB, True), ("single", "/ckpt/results.json", 2000, False)]
    put = found[0]
    assert (put.sent, put.mismatches, put.status, put.part_count) == (3 * MIB + HEAD, [], "ok", 1)
    save = _only(run)
    assert (save["path"], save["bytes"], save["parts"], save["writer_pid"]) == ("/ckpt/model-1.pt", 3 * MIB, 1, 100)
    assert save["write_s"] == save["write_threads_s"] == pytest.approx(0.1)
    assert save["duration_s"] == pytest.approx(0.1) and save["critical_path"]["write"] == pytest.approx(0.1)
    assert (save["bottleneck"], save["bottleneck_s"]) == (saves.NETWORK, pytest.approx(0.1))
    assert save["upload"]["status"] == "ok" and save["upload"]["peer"] == PEER
    assert roles(run).tolist() == ["writer"]


def test_a_request_written_with_write_is_an_upload_and_its_peer_no_file(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    records = [*connection(0, 5, T + 1 * MS),
               *exchange(0, 5, 1, T + 2 * MS, T + 102 * MS, "PUT /ckpt/model-1.pt", 3 * MIB)]
    ops = np.frombuffer(b"".join(records), io.IO_FILE).copy()
    ops["op"][ops["op"] == iofile.OPS["send"]] = iofile.OPS["write"]  # a C client's write(2) on its socket
    _rank(run_dir, [r.tobytes() for r in ops])
    run = load(run_dir)
    assert [(u.key, u.bytes, u.sent) for u in uploads.found(run)] == [("/ckpt/model-1.pt", 3 * MIB, 3 * MIB + HEAD)]
    save = _only(run)
    assert (save["path"], save["upload"]["kind"]) == ("/ckpt/model-1.pt", "single")


def test_save_files_names_the_uploads_that_are_checkpoints(tmp_path):
    run_dir = write_meta(tmp_path / "run", save_files=["/ckpt/*.json"])
    _rank(run_dir, [*connection(0, 5, T + 1 * MS),
                    *exchange(0, 5, 1, T + 2 * MS, T + 102 * MS, "PUT /ckpt/model-1.pt", 3 * MIB),
                    *exchange(0, 5, 1, T + 200 * MS, T + 201 * MS, "PUT /ckpt/results.json", 2000)])
    run = load(run_dir)
    assert [(u.key, u.checkpoint) for u in uploads.found(run)] == [("/ckpt/model-1.pt", False),
                                                                   ("/ckpt/results.json", True)]
    assert _only(run)["path"] == "/ckpt/results.json"


def _multipart(file: int, fd: int, fd2: int, at: int, key: str, upload_id: str, part_status=200) -> list[bytes]:
    """create, 3 parts of 2 MiB (1 and 3 on fd's thread, 2 on fd2's at once with 1), complete: from at to
    at + 170 ms; the parts' union 158 ms, their sum 257 ms."""
    query = f"uploadId={upload_id}"
    return [*exchange(file, fd, 1, at, at + 2 * MS, f"POST {key}?uploads", 0),
            *exchange(file, fd, 1, at + 5 * MS, at + 105 * MS, f"PUT {key}?partNumber=1&{query}", 2 * MIB),
            *exchange(file + 1, fd2, 2, at + 6 * MS, at + 106 * MS, f"PUT {key}?partNumber=2&{query}", 2 * MIB,
                      status=part_status),
            *exchange(file, fd, 1, at + 110 * MS, at + 160 * MS, f"PUT {key}?partNumber=3&{query}", 2 * MIB),
            *exchange(file, fd, 1, at + 165 * MS, at + 170 * MS, f"POST {key}?{query}", 300)]


def _writer_child(tmp_path, upload_records: list[bytes]):
    """A rank (100) that starts a writer child (300, forkserver) which uploads and exits."""
    run_dir = write_meta(tmp_path / "run")
    started = T + 10 * MS
    write_journal(run_dir, "alpha", 100, T, events=[
        {"kind": "process_start", "start_ns": started, "end_ns": started + MS, "method": "forkserver",
         "target": "w.upload", "child_pid": 300, "name": "w-1", "writer_seq": 0, "started": True,
         "t_ns": started + MS}])
    write_journal(run_dir, "alpha", 300, started + 2 * MS, role="forkserver_child", events=[
        {"kind": "bootstrap", "target": "w.upload", "name": "w-1", "t_ns": started + 3 * MS},
        {"kind": "exit", "t_ns": T + 300 * MS, "via": "atexit", "code": 0}])
    write_io(run_dir, "alpha", 300, started + 2 * MS - 1000, [*connection(0, 5, T + 19 * MS),
                                                              *connection(1, 6, T + 19 * MS), *upload_records],
             created_ns=started + 2 * MS, via=2)
    return load(run_dir)


def test_a_multipart_upload_on_two_threads_is_its_writer_childs_save(tmp_path):
    run = _writer_child(tmp_path, _multipart(0, 5, 6, T + 20 * MS, "/ckpt/step-1", "U1"))
    [upload] = uploads.found(run)
    assert (upload.kind, upload.key, upload.upload_id, upload.part_count) == ("multipart", "/ckpt/step-1", "U1", 3)
    assert [r.role for r in upload.requests] == ["create", "part", "part", "part", "complete"]
    assert upload.bytes == 6 * MIB and upload.mismatches == [] and upload.status == "ok"
    # Parts in parallel on threads count once on the critical path, each in the thread time.
    assert (upload.critical_ns, upload.thread_ns) == (158 * MS, 257 * MS)
    save = _only(run)
    assert (save["writer_pid"], save["start_method"], save["producer_pid"]) == (300, "forkserver", 100)
    assert (save["path"], save["bytes"], save["parts"]) == ("/ckpt/step-1", 6 * MIB, 3)
    assert (save["write_s"], save["write_threads_s"]) == (pytest.approx(0.158), pytest.approx(0.257))
    assert save["critical_path"]["write"] == pytest.approx(0.158)
    assert save["bottleneck"] == saves.NETWORK
    parts = [r for r in save["upload"]["requests"] if r["role"] == "part"]
    assert [(r["part"], r["tid"], r["seconds"]) for r in parts] == [(1, 1, 0.1), (2, 2, 0.1), (3, 1, 0.05)]
    assert dict(zip(run.processes["pid"].tolist(), roles(run).tolist())) == {100: "producer", 300: "writer"}


def test_in_a_run_cut_short_an_upload_never_completed_is_interrupted(tmp_path):
    # Two writer children: the first's upload completed, the second's was cut after its first part
    # (SIGTERM at 600 ms, handled: it exited).
    cut = T + 600 * MS
    run_dir = write_meta(tmp_path / "run", signals=[{"signal": "SIGTERM", "at_ns": cut, "wall_ns": cut}],
                         exit_status=143, ended_ns=cut + 100 * MS)
    starts = []
    for n, (pid, at) in enumerate(((300, T + 10 * MS), (310, T + 400 * MS)), start=1):
        starts.append({"kind": "process_start", "start_ns": at, "end_ns": at + MS, "method": "forkserver",
                       "target": "w.upload", "child_pid": pid, "name": f"w-{n}", "writer_seq": n - 1,
                       "started": True, "t_ns": at + MS})
        write_journal(run_dir, "alpha", pid, at + 2 * MS, role="forkserver_child", events=[
            {"kind": "bootstrap", "target": "w.upload", "name": f"w-{n}", "t_ns": at + 3 * MS},
            {"kind": "exit", "t_ns": at + (290 if n == 1 else 250) * MS, "via": "atexit", "code": 0}])
        upload = _multipart(0, 5, 6, at + 10 * MS, f"/ckpt/step-{n}", f"U{n}")
        if n == 2:  # its create and first part, no more
            upload = upload[:upload.index(response(0, 5, 1, at + 115 * MS, 200)[1]) + 1]
        write_io(run_dir, "alpha", pid, at + 2 * MS - 1000, [*connection(0, 5, at + 9 * MS),
                                                             *connection(1, 6, at + 9 * MS), *upload],
                 created_ns=at + 2 * MS, via=2)
    write_journal(run_dir, "alpha", 100, T, events=starts)
    summary = summarize(load(run_dir))
    assert [(s["upload"]["status"], s["status"]) for s in summary["saves"]] == [
        ("ok", "complete"), ("not completed", "interrupted")]


def test_a_failed_part_fails_the_upload_with_its_status(tmp_path):
    run = _writer_child(tmp_path, _multipart(0, 5, 6, T + 20 * MS, "/ckpt/step-1", "U1", part_status=500))
    [upload] = uploads.found(run)
    assert (upload.status, upload.http_status) == ("failed", 500)
    save = _only(run)
    assert (save["upload"]["status"], save["upload"]["http_status"]) == ("failed", 500)
    assert [r["status"] for r in save["upload"]["requests"]] == [200, 200, 500, 200, 200]


def test_a_part_tried_again_counts_once_by_its_last_attempt(tmp_path):
    records = _multipart(0, 5, 6, T + 20 * MS, "/ckpt/step-1", "U1", part_status=500)
    records += exchange(1, 6, 2, T + 127 * MS, T + 140 * MS, "PUT /ckpt/step-1?partNumber=2&uploadId=U1", 2 * MIB)
    run = _writer_child(tmp_path, records)
    [upload] = uploads.found(run)
    assert (upload.status, upload.part_count, upload.bytes) == ("ok", 3, 6 * MIB)
    assert upload.thread_ns == (257 + 13) * MS  # every attempt's time counts


def test_interleaved_uploads_of_two_keys_are_each_their_own(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    # Two keys' multipart uploads at once, on connections of their own, the second begun 3 ms after
    # the first: its create before the first's parts; then a second upload of the first key.
    records = [*connection(0, 5, T), *connection(1, 6, T), *connection(2, 7, T), *connection(3, 8, T),
               *_multipart(0, 5, 6, T + 10 * MS, "/ckpt/a", "UA"), *_multipart(2, 7, 8, T + 13 * MS, "/ckpt/b", "UB"),
               *_multipart(0, 5, 6, T + 400 * MS, "/ckpt/a", "UA2")]
    _rank(run_dir, records)
    run = load(run_dir)
    found = uploads.found(run)
    assert [(u.key, u.upload_id, u.bytes, u.part_count, u.status) for u in found] == [
        ("/ckpt/a", "UA", 6 * MIB, 3, "ok"), ("/ckpt/b", "UB", 6 * MIB, 3, "ok"),
        ("/ckpt/a", "UA2", 6 * MIB, 3, "ok")]
    # Each its own create: the latest of its key before it.
    assert [u.start_ns - T for u in found] == [10 * MS, 13 * MS, 400 * MS]
    found_saves = saves.find(run)
    assert [(s["save"], s["path"], s["bytes"]) for s in found_saves] == [
        (1, "/ckpt/a", 6 * MIB), (2, "/ckpt/b", 6 * MIB), (3, "/ckpt/a", 6 * MIB)]
    assert {s["writer_pid"] for s in found_saves} == {100}


def test_requests_of_two_processes_on_one_connection_are_each_their_own(tmp_path):
    # A fork child (300) inherits its parent's (100) connection: each sends a PUT on it, interleaved.
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, T)
    write_io(run_dir, "alpha", 100, T - 1000, [*connection(0, 5, T + MS),
                                               *exchange(0, 5, 1, T + 10 * MS, T + 110 * MS, "PUT /ckpt/a", 2 * MIB)],
             created_ns=T)
    write_journal(run_dir, "alpha", 300, T + 5 * MS, role="fork_child")
    write_io(run_dir, "alpha", 300, T + 5 * MS - 1000, [
        *path_records(0, PEER), *exchange(0, 5, 9, T + 50 * MS, T + 150 * MS, "PUT /ckpt/b", 3 * MIB)],
        created_ns=T + 5 * MS, via=2)
    run = load(run_dir)
    found = uploads.found(run)
    pid = run.processes["pid"].tolist()
    assert [(pid[u.proc], u.key, u.status, u.bytes, u.end_ns - u.start_ns) for u in found] == [
        (100, "/ckpt/a", "ok", 2 * MIB, 100 * MS), (300, "/ckpt/b", "ok", 3 * MIB, 100 * MS)]
    assert [u.mismatches for u in found] == [[], []]


def test_bytes_sent_short_of_the_content_length_are_said(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    _rank(run_dir, [*connection(0, 5, T + 1 * MS),
                    *exchange(0, 5, 1, T + 2 * MS, T + 102 * MS, "PUT /ckpt/m", 3 * MIB, sent=MIB)])
    [upload] = uploads.found(load(run_dir))
    assert upload.bytes == 3 * MIB and upload.sent == MIB + HEAD
    assert upload.mismatches == [f"the PUT: Content-Length {3 * MIB}, {MIB + HEAD} bytes sent with its header"]


def _stream(file: int, fd: int, start: int, count: int, each: int, *, back: int = 0) -> list[bytes]:
    """count sends of `each` bytes 1 ms apart from start, each answered with `back` bytes."""
    out = []
    for i in range(count):
        at = start + i * MS
        out.append(call("send", file, at, at + 500_000, each, fd=fd))
        if back:
            out.append(call("recv", file, at + 600_000, at + 900_000, back, fd=fd))
    return out


def test_bytes_to_one_peer_without_requests_are_inferred_uploads(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    # An unread protocol (TLS through no libssl): two stretches of 4 MiB, 2 s apart, each followed by a
    # small answer; and a conversation with another peer (as much back as out): no upload.
    records = [*connection(0, 5, T), *_stream(0, 5, T + MS, 16, MIB // 4),
               call("recv", 0, T + 30 * MS, T + 31 * MS, 200, fd=5),
               *_stream(0, 5, T + 2031 * MS, 16, MIB // 4),
               *path_records(1, "tcp:10.0.0.2:7000"), call("connect", 1, T, T + 1000, 0, fd=6),
               *_stream(1, 6, T + MS, 16, MIB // 4, back=MIB // 4)]
    _rank(run_dir, records)
    run = load(run_dir)
    found = uploads.found(run)
    assert [(u.kind, u.peer, u.key, u.bytes, u.status, u.part_count) for u in found] == [
        ("inferred", PEER, None, 4 * MIB, None, None)] * 2
    assert found[0].end_ns == T + 31 * MS and found[1].start_ns == T + 2031 * MS
    found_saves = saves.find(run)
    assert [(s["path"], s["bytes"], s["upload"]["kind"]) for s in found_saves] == [(PEER, 4 * MIB, "inferred")] * 2
    assert all(s["bottleneck"] == saves.NETWORK for s in found_saves)


def test_a_run_without_sockets_has_no_upload_and_its_file_saves_as_before(tmp_path):
    run_dir = write_meta(tmp_path / "run")
    _rank(run_dir, [*path_records(0, "/ckpt/model-1.pt"), call("open", 0, T + MS, T + MS + 10, 3),
                    call("write", 0, T + 2 * MS, T + 12 * MS, 3 * MIB), call("fsync", 0, T + 13 * MS, T + 20 * MS),
                    call("close", 0, T + 21 * MS, T + 22 * MS)])
    run = load(run_dir)
    assert uploads.found(run) == []
    save = _only(run)
    assert (save["path"], save["bytes"], save["upload"], save["parts"], save["write_threads_s"]) == (
        "/ckpt/model-1.pt", 3 * MIB, None, None, None)
    assert save["bottleneck"] == "write" and save["write_s"] == pytest.approx(0.01)


def test_the_report_shows_each_upload_and_its_thread_time(tmp_path):
    run = _writer_child(tmp_path, _multipart(0, 5, 6, T + 20 * MS, "/ckpt/step-1", "U1"))
    summary = summarize(run)
    [save] = summary["saves"]
    assert json.loads(json.dumps(save))["upload"]["parts"] == 3
    assert shapes.mismatches(summary, shapes.Summary) == []  # every field as analysis.shapes declares it
    text = terminal.report_text(summary)
    line = next(line for line in text.splitlines() if "/ckpt/step-1" in line)
    assert line.split() == ["1", "-", "300", "/ckpt/step-1", "3", "6.0", "MiB", "0.158", "0.257", "ok"]
    assert f"{saves.NETWORK} 0.158" in text


def test_a_big_runs_saves_host_by_host_are_the_whole_runs(tmp_path, monkeypatch):
    run_dir = write_meta(tmp_path / "run")
    for host, pid in (("alpha", 100), ("beta", 200)):
        write_journal(run_dir, host, pid, T, chunks=[chunk(journal.PHASES["gen"], T + i * MS) for i in range(3)])
        write_io(run_dir, host, pid, T - 1000, [*connection(0, 5, T), *_multipart(0, 5, 6, T + 20 * MS,
                                                                                    f"/ckpt/{host}", "U")],
                 created_ns=T)
    run = load(run_dir)
    whole = saves.find(run)
    assert [(s["host"], s["path"], s["bytes"], s["parts"]) for s in whole] == [
        ("alpha", "/ckpt/alpha", 6 * MIB, 3), ("beta", "/ckpt/beta", 6 * MIB, 3)]
    monkeypatch.setattr(hostwise, "PART_RECORDS", 1)
    assert hostwise.parts(run) == [(0, 1), (1, 2)]
    saves._indexed.clear()
    assert json.dumps(saves.find(run)) == json.dumps(whole)
