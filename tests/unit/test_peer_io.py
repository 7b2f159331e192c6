"""A process's sockets in the interposer's journal, read by the real loader
(writerprof.run.io): run.http from the request and response records, the
bytes sent and received to each peer once (a TLS connection's plaintext,
not its handshake's ciphertext), and a peer never a file."""

import numpy as np
from io_journal import call, path_records, request_records, write_io
from test_run_load import write_journal, write_meta

from writerprof.probes.writerprof_probe import iofile
from writerprof.run import files, load
from writerprof.run import io as io_calls

MIB = 1 << 20
T = 10**9
TLS_PEER, PLAIN_PEER = "tcp:10.0.0.5:443", "tcp:[::1]:9000"


def response(file: int, at: int, status: int, fd: int, tid: int = 1) -> bytes:
    r = np.zeros(1, io_calls.IO_FILE)
    r["op"], r["file"], r["fd"], r["tid"], r["cpu"] = iofile.OPS["response"], file, fd, tid, -1
    r["start_ns"], r["end_ns"], r["result"] = at, at + 10, status
    return r.tobytes()


def cut_request(file: int, at: int) -> bytes:
    """A request record whose text never followed (its process killed mid-record)."""
    r = np.zeros(1, io_calls.IO_FILE)
    r["op"], r["file"], r["fd"], r["count"], r["start_ns"], r["end_ns"] = iofile.OPS["request"], file, 6, 40, at, at
    r["result"] = -1
    return r.tobytes()


def _run(tmp_path):
    """Process 100 (Python): a checkpoint file; an HTTPS connection (its
    handshake's raw calls, then a PUT's plaintext); an HTTP connection
    (send, write and read on the socket). Process 200, not Python: 700 KiB
    of TLS plaintext and its ciphertext. Process 300, not Python: 1.5 MiB sent."""
    run_dir = write_meta(tmp_path / "run")
    write_journal(run_dir, "alpha", 100, T)
    write_io(run_dir, "alpha", 100, T - 1000, [
        *path_records(0, "/ckpt/a.pt"), call("open", 0, T + 10, T + 11, 3), call("write", 0, T + 12, T + 20, 2 * MIB),
        call("close", 0, T + 21, T + 22),
        *path_records(1, TLS_PEER), call("connect", 1, T + 100, T + 110, -1, fd=5),
        call("write", 1, T + 120, T + 121, 517, fd=5), call("read", 1, T + 130, T + 131, 1000, fd=5),
        call("tls_write", 1, T + 200, T + 201, 900, fd=5, tid=2),
        *request_records(1, "PUT /b/k.pt?uploadId=u1&partNumber=1", T + 200, T + 201, 3 * MIB, fd=5, tid=2),
        call("tls_write", 1, T + 202, T + 300, 3 * MIB, fd=5, tid=2),
        call("tls_read", 1, T + 310, T + 311, 300, fd=5, tid=2), response(1, T + 310, 200, fd=5, tid=2),
        *path_records(2, PLAIN_PEER), call("connect", 2, T + 400, T + 410, 0, fd=6),
        call("send", 2, T + 420, T + 421, 200, fd=6),
        *request_records(2, "POST /b/k.pt?uploads", T + 420, T + 421, fd=6),
        call("write", 2, T + 430, T + 440, 2 * MIB, fd=6), call("recv", 2, T + 450, T + 451, 500, fd=6),
        response(2, T + 450, 200, fd=6), call("read", 2, T + 460, T + 461, 100, fd=6),
        call("close", 2, T + 470, T + 471, fd=6), cut_request(2, T + 480)])
    cipher = 700 * 1024
    write_io(run_dir, "alpha", 200, T, [*path_records(0, TLS_PEER), call("write", 0, T + 5, T + 6, 517),
                                        call("tls_write", 0, T + 10, T + 20, cipher),
                                        call("write", 0, T + 11, T + 19, cipher + 300)], comm="curl")
    write_io(run_dir, "alpha", 300, T, [*path_records(0, PLAIN_PEER), call("send", 0, T + 5, T + 6, 3 * MIB // 2)],
             comm="uploader")
    return load(run_dir)


def test_run_http_holds_each_request_and_response_by_start(tmp_path):
    run = _run(tmp_path)
    rows = [(int(r["proc"]), int(r["tid"]), int(r["fd"]), run.io_paths[r["path"]], int(r["start_ns"] - T),
             str(r["kind"]), str(r["method"]), str(r["target"]), int(r["length"]), int(r["status"])) for r in run.http]
    assert rows == [
        (0, 2, 5, TLS_PEER, 200, "request", "PUT", "/b/k.pt?uploadId=u1&partNumber=1", 3 * MIB, 0),
        (0, 2, 5, TLS_PEER, 310, "response", "", "", -1, 200),
        (0, 1, 6, PLAIN_PEER, 420, "request", "POST", "/b/k.pt?uploads", -1, 0),
        (0, 1, 6, PLAIN_PEER, 450, "response", "", "", -1, 200),
        (0, 0, 6, PLAIN_PEER, 480, "request", "", "", -1, 0)]  # its text cut short: known, unnamed
    assert run.http.dtype == io_calls.HTTP_ROWS
    # The records are in run.io too, on their peer.
    http_ops = np.isin(run.io["op"], [iofile.OPS["request"], iofile.OPS["response"]])
    assert http_ops.sum() == 5 and all(io_calls.is_peer(run.io_paths[p]) for p in run.io["path"][http_ops])


def test_the_bytes_sent_and_received_to_each_peer_once(tmp_path):
    run = _run(tmp_path)
    sent, received = io_calls.sent(run), io_calls.received(run)

    def moved(mask, proc, peer):
        on = mask & (run.io["proc"] == proc) & (run.io["path"] == list(run.io_paths).index(peer))
        return sorted((iofile_name(op), int(n)) for op, n in zip(run.io["op"][on], run.io["result"][on]))

    # TLS: the plaintext (tls_*), never the handshake's raw write and read.
    assert moved(sent, 0, TLS_PEER) == [("tls_write", 900), ("tls_write", 3 * MIB)]
    assert moved(received, 0, TLS_PEER) == [("tls_read", 300)]
    # Plain: send, and write and read on the socket.
    assert moved(sent, 0, PLAIN_PEER) == [("send", 200), ("write", 2 * MIB)]
    assert moved(received, 0, PLAIN_PEER) == [("read", 100), ("recv", 500)]
    assert not (sent | received)[run.io["path"] == list(run.io_paths).index("/ckpt/a.pt")].any()


def iofile_name(op: int) -> str:
    return {code: name for name, code in iofile.OPS.items()}[op]


def test_a_peer_is_never_a_file(tmp_path):
    run = _run(tmp_path)
    assert [run.io_paths[s["path"]] for s in files.write_spans(run)] == ["/ckpt/a.pt"]  # not the socket's 2 MiB
    assert files.read_bytes(run).tolist() == [0, 0]  # a socket's reads are no data file's
    assert [io_calls.is_peer(p) for p in ("tcp:127.0.0.1:80", "tcp:[::1]:443", "/tmp/tcp:1", "", "pipe:[3]")] == [
        True, True, False, False, False]
    # The process's write chunks: its file's, not the socket's.
    write = {name: code for code, name in run.phase_names.items()}["write"]
    chunks = run.chunks[(run.chunks["proc"] == 0) & (run.chunks["phase"] == write)]
    assert chunks["bytes"].tolist() == [2 * MIB]


def test_bytes_to_peers_make_a_process_of_its_own_counted_once(tmp_path):
    run = _run(tmp_path)
    # 300 sent 1.5 MiB; 200's 700 KiB of plaintext would be 1.4 MiB with its ciphertext counted too.
    assert run.processes["pid"].tolist() == [100, 300]
