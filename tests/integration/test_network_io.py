"""Network writes are writes: real clients under `writerprof record`, their
sockets seen by the interposer from below. An HTTP PUT (http.client, over
TCP, and over TLS with Python's ssl on SSL_write_ex and, on 3.9, SSL_write;
curl over TLS, through a BIO of its own) to a stdlib server in this test:
its bytes those the server received, the plaintext once; its request
(method, redacted target, Content-Length) and response (status) in
run.http; a presigned URL's secrets in no file of the run; the target's
output, exit status and bytes on the wire its own. A process whose data
goes through pipes, Unix and UDP sockets adds no socket record. And a boto3
multipart upload to moto's S3 server."""

from __future__ import annotations

import errno
import hashlib
import http.server
import json
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from writerprof.probes.writerprof_probe import iofile
from writerprof.run import io as io_calls
from writerprof.run import load

from helpers import writerprof_command
from test_probe_journal import INTERPRETERS
from test_secrets_recorded import _everything

TARGETS = Path(__file__).parent / "targets"
MIB = 1 << 20
SIZE = 3 * MIB + 17
BODY = bytes(range(256)) * (SIZE // 256) + bytes(SIZE % 256)  # the PUT's
# A presigned URL's query (as boto3's generate_presigned_url makes it) on a multipart part.
SECRETS = ("AKIAH1NETWORKCRED0001", "h1-session-token-0002", "f00dfeedc0ffee0003signature")
TARGET = (f"/bucket/ckpt/model-1.pt?partNumber=1&uploadId=up-1&X-Amz-Algorithm=AWS4-HMAC-SHA256"
          f"&X-Amz-Credential={SECRETS[0]}%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z"
          f"&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token={SECRETS[1]}"
          f"&X-Amz-Signature={SECRETS[2]}")
REDACTED = "/bucket/ckpt/model-1.pt?partNumber=1&uploadId=up-1"
OP = iofile.OPS
SOCKET_OPS = [OP[op] for op in ("connect", "send", "recv", "tls_write", "tls_read", "request", "response")]


class _Counted:
    """A stream whose bytes read or written are added to server.counts[what]."""

    def __init__(self, stream, server, what):
        self._stream, self._server, self._what = stream, server, what

    def _add(self, data):
        self._server.counts[self._what] += len(data)
        return data

    def readline(self, *args):
        return self._add(self._stream.readline(*args))

    def read(self, *args):
        return self._add(self._stream.read(*args))

    def write(self, data):
        self._add(data)
        return self._stream.write(data)

    def __getattr__(self, name):
        return getattr(self._stream, name)


class _Handler(http.server.BaseHTTPRequestHandler):
    """Answers a PUT with the SHA-256 of the body it received (kept in
    server.digests too); counts the bytes it read and wrote (over TLS: the
    plaintext)."""
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.rfile = _Counted(self.rfile, self.server, "received")
        self.wfile = _Counted(self.wfile, self.server, "answered")

    def do_PUT(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        digest = hashlib.sha256(body).hexdigest().encode()
        self.server.digests.append(digest.decode())
        self.send_response(200)
        self.send_header("Content-Length", str(len(digest)))
        self.end_headers()
        self.wfile.write(digest)

    def log_message(self, *args):
        pass


@contextmanager
def serving(cert: tuple[Path, Path] | None):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.counts = {"received": 0, "answered": 0}
    server.digests = []
    if cert:
        import ssl

        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*map(str, cert))
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def tls_cert(tmp_path_factory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, made for this test."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a test certificate with")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "cert.pem", where / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    return cert, key


def record(run_dir: Path, *command, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(writerprof_command() + ["record", "-o", str(run_dir), "--", *map(str, command)],
                          capture_output=True, text=True, timeout=240, env=env)


def python_of(name: str) -> str:
    """This interpreter ("current"), or pyenv's newest of a line ("3.9")."""
    if name == "current":
        return sys.executable
    found = sorted((v for v in INTERPRETERS if v.startswith(name + ".")), key=lambda v: int(v.split(".")[2]))
    if not found:
        pytest.skip(f"no Python {name} here")
    return INTERPRETERS[found[-1]]


def client(tmp_path: Path, name: str, port: int, cert: Path | None, *more) -> list:
    """The command of a client PUTting BODY to TARGET on 127.0.0.1:PORT (HTTPS
    with cert): http_put.py on a Python ("current", "3.9"), or "curl"; the
    body and target in files, the target never in its argv."""
    body = tmp_path / "body.bin"
    body.write_bytes(BODY)
    if name == "curl":
        curl = shutil.which("curl")
        if curl is None:
            pytest.skip("no curl here")
        config = tmp_path / "curl.conf"
        config.write_text(f'url = "{"https" if cert else "http"}://127.0.0.1:{port}{TARGET}"\n')
        return [curl, "-sS", "-K", config, "-T", body, *(("--cacert", cert) if cert else ()), *more]
    target = tmp_path / "target.txt"
    target.write_text(TARGET)
    return [python_of(name), TARGETS / "http_put.py", port, target, body, *(("--cafile", cert) if cert else ()), *more]


def peer_rows(run, port: int) -> np.ndarray:
    """Per row of run.io: whether it is on a socket to 127.0.0.1:PORT."""
    codes = [i for i, p in enumerate(run.io_paths.tolist()) if p == f"tcp:127.0.0.1:{port}"]
    return np.isin(run.io["path"], codes)


@pytest.mark.parametrize("scheme,name", [("http", "current"), ("https", "current"), ("https", "3.9"),
                                         ("https", "curl")])
def test_a_put_is_journaled_from_below_with_its_request_and_response(tmp_path, tls_cert, scheme, name):
    cert = tls_cert if scheme == "https" else None
    with serving(cert) as server:
        port = server.server_address[1]
        done = record(tmp_path / "run", *client(tmp_path, name, port, cert and cert[0]))
    assert done.returncode == 0, done.stderr
    assert server.digests == [hashlib.sha256(BODY).hexdigest()]  # the bytes on the wire its own

    run = load(tmp_path / "run")
    mine = peer_rows(run, port)
    peer = run.io["path"][mine][0]
    assert run.io_paths[peer] == f"tcp:127.0.0.1:{port}" and io_calls.is_peer(run.io_paths[peer])
    connects = run.io[mine & (run.io["op"] == OP["connect"])]
    # (With a timeout, Python connects a non-blocking socket: EINPROGRESS, then a wait for it.)
    assert len(connects) == 1 and (connects["result"][0] == 0 or connects["err"][0] == errno.EINPROGRESS)
    # Every byte sent to the peer once, as the server read it: over TLS the plaintext, not its ciphertext too.
    sent, received = io_calls.sent(run) & mine, io_calls.received(run) & mine
    assert run.io["result"][sent].clip(0).sum() == server.counts["received"] > SIZE
    assert run.io["result"][received].clip(0).sum() == server.counts["answered"] > 0
    raw = np.isin(run.io["op"], [OP[op] for op in ("send", "write", "writev", "recv", "read", "readv")]) & mine
    if scheme == "https":
        assert set(run.io["op"][sent].tolist()) == {OP["tls_write"]}
        assert set(run.io["op"][received].tolist()) == {OP["tls_read"]}
        assert raw.any() and not (raw & (sent | received)).any()  # the handshake's ciphertext: no data of it
        assert run.io["result"][raw].clip(0).sum() < 64 * 1024  # the body's ciphertext never journaled
    else:
        assert (sent | received).sum() == raw.sum()

    http = run.http[run.http["path"] == peer]
    request, *responses = http
    assert (request["kind"], request["method"], request["target"], request["length"]) == (
        "request", "PUT", REDACTED, SIZE)
    # (curl asks "Expect: 100-continue" before its body: a 100, then the 200.)
    assert [(r["kind"], r["status"]) for r in responses] in ([("response", 200)],
                                                              [("response", 100), ("response", 200)])
    response = responses[-1]
    assert request["fd"] == response["fd"] == connects["fd"][0] and request["tid"] == response["tid"]
    assert request["start_ns"] >= connects["end_ns"][0] and response["start_ns"] >= request["end_ns"]
    # The request rides on the call that carried its line: its times.
    carrier = run.io[sent & (run.io["start_ns"] == request["start_ns"])]
    assert len(carrier) == 1 and carrier["end_ns"][0] == request["end_ns"]
    # A presigned URL's secrets: in no file of the run directory.
    everything = _everything(tmp_path / "run")
    assert not [s for s in SECRETS if s.encode() in everything]
    assert REDACTED.encode() in everything  # (what was looked for is where it should be)


def test_the_targets_output_and_exit_status_are_its_own(tmp_path, tls_cert):
    outcomes = []
    for recorded in (False, True):
        with serving(tls_cert) as server:
            command = client(tmp_path, "current", server.server_address[1], tls_cert[0], "--exit", "7")
            done = (record(tmp_path / "run", *command) if recorded
                    else subprocess.run(list(map(str, command)), capture_output=True, text=True, timeout=120))
            outcomes.append((done.returncode, done.stdout, server.counts, server.digests))
    assert outcomes[0] == outcomes[1] and outcomes[0][0] == 7
    assert outcomes[0][1] == f"200 {hashlib.sha256(BODY).hexdigest()}\n"
    assert len(load(tmp_path / "run").http) == 2  # (it was interposed)


def test_pipes_unix_and_udp_sockets_add_no_socket_record(tmp_path):
    done = record(tmp_path / "run", sys.executable, TARGETS / "local_ipc.py")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "done\n"
    run = load(tmp_path / "run")
    assert len(run.io)  # (the interposer journaled these processes: their files)
    assert not np.isin(run.io["op"], SOCKET_OPS).any()
    assert not [p for p in run.io_paths.tolist() if io_calls.is_peer(p)] and not len(run.http)


def test_a_boto3_multipart_upload(tmp_path, s3_server):
    pytest.importorskip("boto3")
    key = "ckpt/multipart-1.pt"
    done = record(tmp_path / "run", sys.executable, TARGETS / "s3_multipart.py", s3_server.endpoint,
                  s3_server.bucket, key, env=s3_server.env)
    assert done.returncode == 0, done.stderr
    own = json.loads(done.stdout)
    part_md5 = [hashlib.md5(bytes([n]) * (5 * MIB)).digest() for n in (1, 2)]
    assert own["size"] == 10 * MIB and own["etag"].strip('"') == hashlib.md5(b"".join(part_md5)).hexdigest() + "-2"

    run = load(tmp_path / "run")
    port = int(s3_server.endpoint.rsplit(":", 1)[1])
    mine = peer_rows(run, port)
    http = run.http[np.isin(run.http["path"], np.unique(run.io["path"][mine]))]
    requests = http[http["kind"] == "request"]
    path = f"/{s3_server.bucket}/{key}"
    upload = own["upload_id"]
    wanted = [("POST", f"{path}?uploads"), ("PUT", f"{path}?uploadId={upload}&partNumber=1"),
              ("PUT", f"{path}?uploadId={upload}&partNumber=2"), ("POST", f"{path}?uploadId={upload}")]
    assert [(r["method"], r["target"]) for r in requests if r["method"] != "HEAD"] == wanted
    # (botocore's parts ask "Expect: 100-continue": their 100 comes before their 200.)
    assert all(s in (100, 200) for s in http["status"][http["kind"] == "response"].tolist())
    # Each part's bytes: those sent on its connection from its request to its final response.
    sent = io_calls.sent(run) & mine
    for part in requests[1:3]:
        answered = http[(http["kind"] == "response") & (http["fd"] == part["fd"]) & (http["status"] == 200)
                        & (http["start_ns"] > part["end_ns"])]["start_ns"].min()
        on = sent & (run.io["fd"] == part["fd"]) & (run.io["start_ns"] >= part["start_ns"]) & (
            run.io["start_ns"] < answered)
        body = int(run.io["result"][on].clip(0).sum())
        assert 5 * MIB < body < 5 * MIB + 16 * 1024, body  # the part and its header
        assert part["length"] == 5 * MIB
