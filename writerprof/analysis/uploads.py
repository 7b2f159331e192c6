"""The objects each process uploaded, from the HTTP requests the interposer
journaled (run.http) and the bytes it sent to each peer (run.io): one
definition for the roles, the saves and the reports.

- single: a PUT of /bucket/key (no uploadId): one request.
- multipart: POST ?uploads (create), PUT ?partNumber=N&uploadId=U (the
  parts, on any threads and connections), POST ?uploadId=U (complete):
  grouped by uploadId, the create the latest of the same key before the
  first part; the key is the target's path.
- inferred: bytes sent to one peer on which no HTTP request was journaled (a
  protocol not read: TLS through a library other than OpenSSL), from the
  first call on it after IDLE_GAP_NS without any to the last before the next
  such gap, where the process connected to the peer and sent SENT_SHARE of
  the bytes moved; its parts are its connections.

A request's time is from its start to its response's end (the end of the
call that received the response's status line): the first response on its
connection (the same process, fd and peer) after it that is not
informational (1xx: `100 Continue`), before the connection's next request.
Each process's requests are its own, on one connection or not. The bytes of
a part are its Content-Length, checked against those actually sent on its
connection between its start and its response (its header too:
MAX_HEAD_BYTES at most, and an aws-chunked body's framing, CHUNKED_FRAMING
of it; its length the decoded one, x-amz-decoded-content-length); where they disagree the upload says so
(mismatches). A retried part counts once, its last attempt's; every attempt
counts in the time.

An upload's window is its first request's start to its last response's
end; its critical path (critical_ns) the union of its requests' times
(create and complete too: the store's time), parts in parallel on threads
counted once; its thread time (thread_ns) their sum. Its status: OK where
every request's last attempt was answered 2xx (a multipart one completed),
else FAILED with the first other status, NO_RESPONSE where one was never
answered, NOT_COMPLETED for a multipart upload never completed (aborted, or
cut short); None for an inferred one (no status was read).

An upload is a checkpoint's, a save, by the rule of the files
(writerprof.run.files): MIN_SAVE_BYTES or more, or, with `record
--save-files`, its key (an inferred one's peer) matching a glob."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from urllib.parse import parse_qs, unquote, urlsplit

import numpy as np

from writerprof.analysis import threads
from writerprof.run import files
from writerprof.run import io as io_calls

SINGLE, MULTIPART, INFERRED = "single", "multipart", "inferred"
OK, FAILED, NO_RESPONSE, NOT_COMPLETED = "ok", "failed", "no response", "not completed"
# A request's header, sent with its body: S3's are about a kilobyte, and
# servers refuse more than 8-16 KiB.
MAX_HEAD_BYTES = 16 << 10
# An aws-chunked body (botocore over HTTPS: its length the decoded one) is
# framed: a chunk's size and signature, ~90 bytes per chunk of 8 KiB or more.
CHUNKED_FRAMING = 1 / 64
# Quiet on a peer this long ends an inferred upload: longer than a store's
# answer to a part and a client's own work between parts (tens of ms to
# hash or copy one), shorter than making the next checkpoint (seconds in
# the benchmark's family).
IDLE_GAP_NS = 10**9
# An inferred upload sent this share of the bytes it moved at least: a
# store's answers are small, a conversation's are not.
SENT_SHARE = 0.9


@dataclass(frozen=True)
class Request:
    """One request of an upload (an inferred upload's connection, as one)."""

    role: str  # "create", "part", "complete", "abort", "put"; "connection" (inferred)
    number: int | None  # a part's partNumber
    tid: int
    fd: int
    start_ns: int
    end_ns: int  # its response's end (unanswered: its last byte sent)
    length: int  # Content-Length, -1 unknown
    sent: int  # bytes sent on its connection from its start to its response's
    sends: int  # the calls that sent them
    status: int  # its response's, 0 none


@dataclass(frozen=True)
class Upload:
    proc: int  # process row
    peer: str  # tcp:HOST:PORT
    kind: str  # SINGLE, MULTIPART, INFERRED
    key: str | None  # the target's path; None: inferred
    upload_id: str | None
    requests: tuple[Request, ...]  # in start order
    checkpoint: bool = field(default=False, compare=False)

    @property
    def start_ns(self) -> int:
        return min(r.start_ns for r in self.requests)

    @property
    def end_ns(self) -> int:
        return max(r.end_ns for r in self.requests)

    @property
    def parts(self) -> list[Request]:
        """The requests that carried the object's bytes, each part's last attempt."""
        if self.kind == INFERRED:
            return list(self.requests)
        last = {r.number: r for r in self.requests if r.role in ("part", "put")}
        return sorted(last.values(), key=lambda r: r.start_ns)

    @property
    def part_count(self) -> int | None:
        """Its parts (a single PUT: 1); None for an inferred one: no parts were read."""
        return None if self.kind == INFERRED else len(self.parts)

    @property
    def bytes(self) -> int:
        """The parts' Content-Length summed (where one is unknown, its bytes sent)."""
        return sum(r.length if r.length >= 0 else r.sent for r in self.parts)

    @property
    def sent(self) -> int:
        return sum(r.sent for r in self.parts)

    @property
    def intervals(self) -> tuple[np.ndarray, np.ndarray]:
        """Its requests' times as their union: sorted disjoint (start_ns, end_ns) intervals."""
        return threads.merged(np.array([r.start_ns for r in self.requests], dtype=np.int64),
                              np.array([r.end_ns for r in self.requests], dtype=np.int64))

    @property
    def critical_ns(self) -> int:
        start, end = self.intervals
        return int((end - start).sum())

    @property
    def thread_ns(self) -> int:
        return sum(r.end_ns - r.start_ns for r in self.requests)

    @property
    def status(self) -> str | None:
        return _status(self)[0]

    @property
    def http_status(self) -> int | None:
        return _status(self)[1]

    @property
    def mismatches(self) -> list[str]:
        """Each part whose Content-Length the bytes sent do not bear out, said."""
        out = []
        for r in self.parts if self.kind != INFERRED else ():
            what = f"part {r.number}" if r.number is not None else "the PUT"
            if r.length < 0:
                out.append(f"{what}: no Content-Length read, its bytes are those sent ({r.sent}, header included)")
            elif not 0 <= r.sent - r.length <= MAX_HEAD_BYTES + r.length * CHUNKED_FRAMING:
                out.append(f"{what}: Content-Length {r.length}, {r.sent} bytes sent with its header")
        return out


def _status(upload: Upload) -> tuple[str | None, int | None]:
    if upload.kind == INFERRED:
        return None, None
    last = {}  # each request's last attempt decides
    for r in upload.requests:
        last[(r.role, r.number)] = r
    final = sorted(last.values(), key=lambda r: r.start_ns)
    if any(r.status == 0 for r in final):
        return NO_RESPONSE, None
    failed = next((r.status for r in final if not 200 <= r.status < 300), None)
    if failed is not None:
        return FAILED, failed
    if (upload.kind == MULTIPART and ("complete", None) not in last) or ("abort", None) in last:
        return NOT_COMPLETED, None
    return OK, None


_found: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> found(run), made once


def found(run) -> list[Upload]:
    """Every upload of the run, in start order (made once per run)."""
    if run not in _found:
        _found[run] = _found_in(run)
    return _found[run]


def checkpoints(run) -> list[Upload]:
    """The uploads that are saves (the files' rule: the module's docstring)."""
    return [u for u in found(run) if u.checkpoint]


def by_writer(run) -> dict[int, list[int]]:
    """Process row -> the indices into checkpoints(run) of its uploads."""
    out: dict[int, list[int]] = {}
    for i, upload in enumerate(checkpoints(run)):
        out.setdefault(upload.proc, []).append(i)
    return out


def _found_in(run) -> list[Upload]:
    io, http = run.io, run.http
    if not len(io):
        return []
    sent = io_calls.sent(run)
    traffic = _Traffic(io, sent)
    out = _from_requests(run, http, traffic)
    spoken = set(zip(http["proc"].tolist(), http["path"].tolist()))
    out += _inferred(run, sent | io_calls.received(run), sent, spoken)
    globs = files.save_globs(run)
    out = [_marked(u, globs) for u in out]
    return sorted(out, key=lambda u: (u.start_ns, u.proc))


def _marked(upload: Upload, globs: list[str]) -> Upload:
    name = upload.key if upload.key is not None else upload.peer
    return replace(upload, checkpoint=files.matches(name, globs) if globs else upload.bytes >= files.MIN_SAVE_BYTES)


class _Traffic:
    """The bytes each connection (process, fd, peer) sent, for sums over times."""

    def __init__(self, io: np.ndarray, sent: np.ndarray):
        rows = np.flatnonzero(sent)
        order = rows[np.lexsort((io["start_ns"][rows], io["fd"][rows], io["path"][rows], io["proc"][rows]))]
        conn = np.stack([io["proc"][order], io["path"][order], io["fd"][order]], axis=1).astype(np.int64)
        self.start = io["start_ns"][order]
        self.end = io["end_ns"][order]
        self.done = np.concatenate(([0], np.cumsum(io["result"][order].clip(0))))  # bytes up to each call
        edges = np.flatnonzero(np.append(True, (conn[1:] != conn[:-1]).any(axis=1))).tolist() if len(order) else []
        self.slices = {tuple(conn[a].tolist()): (a, b) for a, b in zip(edges, edges[1:] + [len(order)])}

    def between(self, conn: tuple, t0: int, t1: int) -> tuple[int, int, int]:
        """(bytes, calls, the last call's end) of the sends on conn that started in [t0, t1)."""
        a, b = self.slices.get(conn, (0, 0))
        lo = a + int(np.searchsorted(self.start[a:b], t0))
        hi = a + int(np.searchsorted(self.start[a:b], t1))
        return int(self.done[hi] - self.done[lo]), hi - lo, int(self.end[hi - 1]) if hi > lo else t0


def _role(method: str, query: dict) -> str | None:
    if method == "POST" and "uploads" in query:
        return "create"
    if "uploadId" in query:
        return {"PUT": "part" if "partNumber" in query else None, "POST": "complete", "DELETE": "abort"}.get(method)
    return "put" if method == "PUT" else None


def _from_requests(run, http: np.ndarray, traffic: _Traffic) -> list[Upload]:
    """The single and multipart uploads of the requests journaled."""
    order = np.lexsort((http["start_ns"], http["fd"], http["path"], http["proc"]))
    rows = http[order]
    conn = list(zip(rows["proc"].tolist(), rows["path"].tolist(), rows["fd"].tolist()))
    kind, start, end = rows["kind"].tolist(), rows["start_ns"].tolist(), rows["end_ns"].tolist()
    singles, groups, creates = [], {}, {}
    for i in np.flatnonzero(rows["kind"] == "request").tolist():
        target = urlsplit(str(rows["target"][i]))
        query = parse_qs(target.query, keep_blank_values=True)
        role = _role(str(rows["method"][i]), query)
        if role is None:
            continue
        # Its response: the first final one on its connection before the connection's next request.
        status, until, j = 0, None, i + 1
        while j < len(rows) and conn[j] == conn[i] and kind[j] != "request":
            if rows["status"][j] >= 200:
                status, until = int(rows["status"][j]), j
                break
            j += 1
        stop = start[until] if until is not None else (
            start[j] if j < len(rows) and conn[j] == conn[i] else np.iinfo(np.int64).max)
        sent, sends, last = traffic.between(conn[i], start[i], stop)
        number = query.get("partNumber", [None])[0]
        request = Request(role, int(number) if number and number.isdigit() else None, int(rows["tid"][i]),
                          conn[i][2], start[i], end[until] if until is not None else max(end[i], last),
                          int(rows["length"][i]), sent, sends, status)
        proc, peer, key = conn[i][0], conn[i][1], unquote(target.path)
        if role == "put":
            singles.append(Upload(proc, str(run.io_paths[peer]), SINGLE, key, None, (request,)))
        elif role == "create":
            creates.setdefault((proc, key), []).append((request, peer))
        else:
            groups.setdefault((proc, query["uploadId"][0]), []).append((request, peer, key))
    out = singles
    taken = set()
    for (proc, upload_id), members in sorted(groups.items(), key=lambda g: min(r.start_ns for r, _, _ in g[1])):
        first, peer, key = min(members, key=lambda m: m[0].start_ns)
        # Its create: the latest of its key before its first request, not another's.
        before = [(r.start_ns, n) for n, (r, _) in enumerate(creates.get((proc, key), []))
                  if r.start_ns <= first.start_ns and (proc, key, n) not in taken]
        requests = [r for r, _, _ in members]
        if before:
            n = max(before)[1]
            taken.add((proc, key, n))
            requests.append(creates[(proc, key)][n][0])
        out.append(Upload(proc, str(run.io_paths[peer]), MULTIPART, key, upload_id,
                          tuple(sorted(requests, key=lambda r: r.start_ns))))
    return out


def _inferred(run, moved: np.ndarray, sent: np.ndarray, spoken: set) -> list[Upload]:
    """Bytes to one peer without HTTP requests: a process's calls on it cut
    where it was quiet IDLE_GAP_NS; each stretch an upload where the process
    is the peer's client (it connected) and SENT_SHARE of the bytes moved
    went out (an MPI rank's or a collective's peer gets bytes back)."""
    io = run.io
    rows = np.flatnonzero(moved)
    rows = rows[np.lexsort((io["start_ns"][rows], io["path"][rows], io["proc"][rows]))]
    connected = io["op"] == io_calls.OP["connect"]
    clients = set(zip(io["proc"][connected].tolist(), io["path"][connected].tolist()))
    pair = np.stack([io["proc"][rows], io["path"][rows]], axis=1)
    edges = np.flatnonzero(np.append(True, (pair[1:] != pair[:-1]).any(axis=1))).tolist() if len(rows) else []
    out = []
    for a, b in zip(edges, edges[1:] + [len(rows)]):
        proc, path = (int(v) for v in pair[a])
        if (proc, path) in spoken or (proc, path) not in clients:
            continue
        mine = rows[a:b]
        reach = np.maximum.accumulate(io["end_ns"][mine])
        cuts = np.flatnonzero(io["start_ns"][mine][1:] - reach[:-1] >= IDLE_GAP_NS) + 1
        for stretch in np.split(mine, cuts):
            out_bytes = io["result"][stretch][sent[stretch]].clip(0).sum()
            if out_bytes and out_bytes >= SENT_SHARE * io["result"][stretch].clip(0).sum():
                out.append(Upload(proc, str(run.io_paths[path]), INFERRED, None, None,
                                  _connections(io, stretch, sent[stretch])))
    return out


def _connections(io: np.ndarray, rows: np.ndarray, sent: np.ndarray) -> tuple[Request, ...]:
    """A stretch's calls per connection (fd) that sent bytes, each as one request."""
    out = []
    fds = io["fd"][rows]
    for fd in np.unique(fds[sent]).tolist():
        on = fds == fd
        out.append(Request("connection", None, int(io["tid"][rows][on][0]), fd, int(io["start_ns"][rows][on].min()),
                           int(io["end_ns"][rows][on].max()), -1, int(io["result"][rows][on & sent].clip(0).sum()),
                           int((on & sent).sum()), 0))
    return tuple(sorted(out, key=lambda r: r.start_ns))
