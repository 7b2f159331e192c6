"""The I/O interposer's journals (RUN/hosts/HOST/io/, the format in
writerprof.probes.writerprof_probe.iofile): every process's system-call
level file I/O, whatever made the call, and its TCP sockets' (a socket's
path is its peer: is_peer), with the HTTP requests and responses seen on
them (Run.http).

Each journal is joined to its process: the probe's journal of the same pid
and image where the process ran Python, or a process of its own (identity
made from the header) where it did not, if it moved data enough to matter
(MIN_OWN_BYTES to files or peers, or any fsync): a shell that printed to a
log is no process of the pipeline. Its writes, syncs, fadvises and the closes of the files it
wrote become the process's chunk records (the phases the analysis already
reads: write, fsync, fadvise, close), each with the shared-memory buffer its
source address lies in (a socket's calls are no chunk records); every
record, reads, opens and socket calls too, is also in Run.io, with its
file's path, for the analysis of files, saves and uploads."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from writerprof.probes.writerprof_probe import format as journal
from writerprof.probes.writerprof_probe import iofile
from writerprof.run import ownfile, times

IO_FILE = np.dtype([(name, "<" + code) for name, code in iofile.IO_FIELDS])
HEADER = np.dtype([(name, "<" + code) for name, code in iofile.HEADER_FIELDS])
assert IO_FILE.itemsize == iofile.RECORD_BYTES
# Run.io: the records of every process, path a code into Run.io_paths.
IO_ROWS = np.dtype([(name, IO_FILE[name].str) for name in IO_FILE.names] + [("path", "<i4"), ("proc", "<i4")])

OP = iofile.OPS
# The ops of each kind, as codes (one definition for the loader, the files and the saves).
WRITE_CODES = np.array([OP[op] for op in iofile.WRITES])
READ_CODES = np.array([OP[op] for op in iofile.READS])
SYNC_CODES = np.array([OP[op] for op in iofile.SYNCS])
CLOSE_CODES = np.array([OP[op] for op in iofile.CLOSES])
# The ops only a socket has that send or receive its data (with write and
# read on a peer: sent(run), received(run)).
SEND_CODES = np.array([OP[op] for op in iofile.SENDS])
RECV_CODES = np.array([OP[op] for op in iofile.RECEIVES])
_TLS_CODES = np.array([OP[op] for op in iofile.TLS])
_HTTP_CODES = np.array([OP["request"], OP["response"]])
# Run.http: one row per request or response record, path the peer's code
# into Run.io_paths; a request's method and redacted target ("METHOD
# TARGET", iofile), its Content-Length (-1 unknown); a response's status.
HTTP_ROWS = np.dtype([
    ("proc", "<i4"), ("tid", "<u4"), ("fd", "<i4"), ("path", "<i4"), ("start_ns", "<i8"), ("end_ns", "<i8"),
    ("kind", "<U8"), ("method", "<U8"), ("target", "<U1024"), ("length", "<i8"), ("status", "<i4"),
])
# The chunk phase each op is timed as (a buffered flush is a write's).
_PHASE_OF_OP = {**{op: "write" for op in iofile.WRITES + ("fflush",)}, **{op: "fsync" for op in iofile.SYNCS},
                "fadvise": "fadvise", **{op: "close" for op in iofile.CLOSES}}


def phase_table(phases: dict[str, int]) -> np.ndarray:
    """Op code -> the code (in phases: name -> code) of the phase it is timed as, -1 for none."""
    table = np.full(256, -1, dtype=np.int64)
    for op, phase in _PHASE_OF_OP.items():
        table[OP[op]] = phases.get(phase, -1)
    return table


# A process known only by its interposer journal is a row of run.processes
# when it wrote, read, sent or received this much, or synced a file.
MIN_OWN_BYTES = 1 << 20
# A probe journal's process and an interposer journal are one image when
# they were created this close (a fork timed by each; starttime's tick).
SAME_START_NS = 10**9


def is_peer(path: str) -> bool:
    """Whether a path of Run.io_paths is a socket's peer, not a file."""
    return path.startswith(iofile.PEER_PREFIX)


@dataclass(eq=False)
class IoJournal:
    rel: str  # its path in the run directory, for loss lines
    header: dict
    records: np.ndarray  # IO_FILE, the finished ones, PATH and PATH_DATA left out
    paths: dict[int, str] = field(default_factory=dict)  # file number -> path
    requests: list[str] = field(default_factory=list)  # each request record's text, in order

    @property
    def on_peer(self) -> np.ndarray:
        """Per record: whether its fd is a socket's (its file a peer)."""
        peers = [number for number, path in self.paths.items() if is_peer(path)]
        return np.isin(self.records["file"], peers)

    @property
    def moved(self) -> bool:
        """Whether it did I/O enough to be a process of its own (MIN_OWN_BYTES)."""
        r, peer = self.records, self.on_peer
        files = np.isin(r["op"], np.concatenate([WRITE_CODES, READ_CODES])) & ~peer
        peers = _peer_data(r["op"], r["file"], peer, SEND_CODES, WRITE_CODES)
        peers |= _peer_data(r["op"], r["file"], peer, RECV_CODES, READ_CODES)
        return bool(r["result"][files | peers].clip(0).sum() >= MIN_OWN_BYTES or np.isin(r["op"], SYNC_CODES).any())


def _peer_data(op: np.ndarray, connection: np.ndarray, peer: np.ndarray, codes: np.ndarray,
               plain: np.ndarray) -> np.ndarray:
    """The rows (op, connection: a key per socket's naming, peer: whether on
    a socket) that moved a socket's data one way: codes (the socket's own
    ops) and plain (write or read) on a socket, less the raw calls of a
    connection with TLS records (its handshake: its data is their plaintext)."""
    tls = np.isin(op, _TLS_CODES)
    data = peer & np.isin(op, np.concatenate([codes, plain]))
    return data & (tls | ~np.isin(connection, np.unique(connection[tls & peer])))


def on_peer(run) -> np.ndarray:
    """Per row of run.io: whether its fd is a socket's (its path a peer)."""
    peers = np.array([is_peer(p) for p in run.io_paths] + [False], dtype=bool)  # the last for path -1: none
    return peers[run.io["path"]]


def _run_data(run, codes: np.ndarray, plain: np.ndarray) -> np.ndarray:
    io = run.io
    connection = (io["proc"].astype(np.int64) << 32) | (io["file"].astype(np.int64) & 0xFFFFFFFF)
    return _peer_data(io["op"], connection, on_peer(run), codes, plain)


def sent(run) -> np.ndarray:
    """Per row of run.io: whether it sent data to a peer (send, write or
    writev on a socket, tls_write), each byte once."""
    return _run_data(run, SEND_CODES, WRITE_CODES)


def received(run) -> np.ndarray:
    """Per row of run.io: whether it received data from a peer (recv, read
    or readv on a socket, tls_read), each byte once."""
    return _run_data(run, RECV_CODES, READ_CODES)


def read_host(root: Path, host_dir: Path, losses: list[str]) -> list[IoJournal]:
    """The interposer journals of one host, in file-name order."""
    directory = host_dir / iofile.IO_DIR
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(iofile.IO_SUFFIX))
    except FileNotFoundError:
        return []
    except OSError as exc:
        losses.append(f"{times.rel(root, directory)}: unreadable ({exc.strerror}): file I/O below Python is lost")
        return []
    return [j for j in (_read(root, directory / n, losses) for n in names) if j is not None]


def _read(root: Path, file: Path, losses: list[str]) -> IoJournal | None:
    rel = times.rel(root, file)
    try:
        with ownfile.open_file(file) as f:  # the header, then the records handed out: not the file's room
            data = f.read(iofile.HEADER_BYTES)
            if len(data) < iofile.HEADER_BYTES or data[:8] != iofile.MAGIC:
                if data[:8].strip(b"\0"):  # an unfinished header (the process died making it) holds nothing
                    losses.append(f"{rel}: not an I/O journal this writerprof reads: skipped")
                return None
            head = np.frombuffer(data, HEADER, count=1)[0]
            if head["record_bytes"] != iofile.RECORD_BYTES or head["header_bytes"] != iofile.HEADER_BYTES:
                losses.append(f"{rel}: records of {head['record_bytes']} bytes, not {iofile.RECORD_BYTES}: skipped")
                return None
            through = head["flags"] & iofile.WRITTEN_THROUGH
            # (A damaged count is held to the file's size: read() allocates what it is asked for.)
            room = os.fstat(f.fileno()).st_size - iofile.HEADER_BYTES
            body = f.read() if through else f.read(max(0, min(int(head["next"]) * iofile.RECORD_BYTES, room)))
    except OSError as exc:
        losses.append(f"{rel}: unreadable ({exc.strerror}): its file I/O is lost")
        return None
    every = np.frombuffer(body, IO_FILE, count=len(body) // iofile.RECORD_BYTES)
    header = {name: head[name].item() for name in ("pid", "ppid", "init_ns", "created_ns", "via", "dropped")}
    header["exe"] = head["exe"].decode(errors="replace")
    header["comm"] = head["comm"].decode(errors="replace")
    unfinished = int((every["op"] == 0).sum())
    if unfinished:
        losses.append(f"{rel}: {unfinished} record{'s' * (unfinished > 1)} never finished (the process killed "
                      f"mid-call?) dropped")
    if header["dropped"]:
        losses.append(f"{rel}: the interposer dropped {header['dropped']} records (its file could not grow)")
    # (A path cut short: the file's records keep its number, without a path.)
    paths = {int(every["file"][at]): text for at, text in _texts(every, "path") if text is not None}
    requests = [text or "" for _, text in _texts(every, "request")]
    kept = (every["op"] != 0) & (every["op"] != OP["path"]) & (every["op"] != OP["path_data"])
    kept &= every["op"] <= max(OP.values())
    return IoJournal(rel, header, every[kept], paths, requests)


def _texts(every: np.ndarray, op: str) -> list[tuple[int, str | None]]:
    """(row, text) of each record of that op (a PATH's, a REQUEST's): the
    text the PATH_DATA records after it carry, None where they are cut short.
    (Checked at once, and each text one slice of the bytes of the records
    that carry one: a run's thousands of paths, each looked at with numpy,
    took ~6 us apiece.)"""
    at = np.flatnonzero(every["op"] == OP[op])
    if not len(at):
        return []
    length = every["count"][at].astype(np.int64)
    slots = -(-length // iofile.PATH_CHUNK)
    # Whole where the slots after `at` are all PATH_DATA: the count of those
    # grows by as many over them (a damaged count past the journal's end: not).
    data = np.concatenate([[0], np.cumsum(every["op"] == OP["path_data"])])
    end = at + 1 + slots
    whole = end <= len(every)
    whole[whole] = data[end[whole]] - data[at[whole] + 1] == slots[whole]
    # The whole texts' records, text after text (no two share one: each is PATH_DATA, none a text's own).
    taken = np.where(whole, slots, 0)
    firsts = np.cumsum(taken) - taken
    rows = np.repeat(at + 1 - firsts, taken) + np.arange(int(taken.sum()))
    carried = every.view(np.uint8).reshape(-1, iofile.RECORD_BYTES)[rows, 1:].tobytes()
    begin = firsts * iofile.PATH_CHUNK
    return [(row, carried[b:b + n].decode(errors="replace") if ok else None)
            for row, b, n, ok in zip(at.tolist(), begin.tolist(), length.tolist(), whole.tolist())]


def attach(probed: list, found: list[IoJournal]) -> list[IoJournal]:
    """Each interposer journal given to the probe journal of its image
    (probed: _Journal objects, their `io` set here); those of no probed
    process returned. Newest images first, each taking the probe journal
    that began soonest after its own start: an exec'd pid's earlier images
    (a shell, a launcher) begin before the later's."""
    by_pid: dict[int, list] = {}
    for j in probed:
        by_pid.setdefault(j.identity.get("pid"), []).append(j)
    alone = []
    for io in sorted(found, key=lambda f: -f.header["init_ns"]):
        h = io.header
        candidates = [j for j in by_pid.get(h["pid"], ()) if j.io is None
                      and j.identity["t_ns"] >= h["init_ns"] - times.EXEC_TICK_NS
                      and abs(_int(j.identity.get("created_ns")) - h["created_ns"]) < SAME_START_NS]
        if candidates:
            min(candidates, key=lambda j: j.identity["t_ns"]).io = io
        else:
            alone.append(io)
    return alone


def _int(value) -> int:
    return value if type(value) is int else -(1 << 62)


def identity(io: IoJournal, host: str) -> dict:
    """The "process" event of a process the probe did not journal (not Python, or its Python not probed)."""
    h = io.header
    via = iofile.VIA.get(h["via"], "exec")
    return {"kind": "process", "t_ns": h["init_ns"], "schema": journal.SCHEMA, "pid": h["pid"], "ppid": h["ppid"],
            "host": host, "argv": [h["comm"] or os.path.basename(h["exe"])], "executable": h["exe"],
            "python": None, "implementation": None, "created_ns": h["created_ns"], "created_via": via,
            "forked_from": None, "role": "fork_child" if via == "fork" else "main", "interposed_only": True}


def chunk_records(io: IoJournal, chunk_dtype: np.dtype, phases: dict[str, int], buffers: np.ndarray,
                  starts: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """A process's writes, syncs, fadvises and the closes of files it wrote
    as CHUNK records. buffers: its SHM rows (run.shm of this process), a
    write's buffer the one its source address lies in when it was made;
    starts: (t_ns, writer_seq) of its process_start events."""
    r = io.records
    phase = phase_table(phases)[r["op"]]
    phase[io.on_peer] = -1  # a socket's writes are no file's: the uploads' (writerprof.analysis.uploads)
    written = np.isin(r["op"], WRITE_CODES)
    closes = np.isin(r["op"], CLOSE_CODES)
    if closes.any():  # only a close of a file this process wrote: a module's .pyc read is no checkpoint
        wrote = set(r["file"][written].tolist())
        phase[closes & ~np.isin(r["file"], list(wrote))] = -1
    keep = phase >= 0
    r, phase, written = r[keep], phase[keep], written[keep]
    out = np.zeros(len(r), chunk_dtype)
    out["phase"], out["cpu"], out["tid"] = phase, r["cpu"], r["tid"]
    out["start_ns"], out["end_ns"] = r["start_ns"], r["end_ns"]
    out["minflt"], out["majflt"] = r["minflt"], r["majflt"]
    out["bytes"] = np.where(written & (r["result"] >= 0), r["result"], -1)
    out["buffer"] = _buffer_of(r["addr"], r["start_ns"], buffers)
    t, seq = starts
    at = np.searchsorted(t, r["start_ns"], side="right") - 1
    out["writer_seq"] = np.where(at >= 0, seq[at.clip(0)] if len(seq) else -1, -1)
    return out


def _buffer_of(addr: np.ndarray, when: np.ndarray, buffers: np.ndarray) -> np.ndarray:
    """The index of the buffer mapped at addr at that time (the last mapped
    there before it), -1 for none."""
    out = np.full(len(addr), -1, dtype=np.int32)
    if not len(buffers) or not len(addr):
        return out
    for row in np.argsort(buffers["t_ns"], kind="stable"):  # later mappings of a reused range win
        b = buffers[row]
        inside = (addr >= b["start"]) & (addr < b["end"]) & (when >= b["t_ns"])
        out[inside] = b["index"]
    return out


def rows(io: IoJournal, proc: int, path_codes: dict[str, int]) -> np.ndarray:
    """Run.io's rows of one journal: its records, each file's path a code."""
    r = io.records
    out = np.zeros(len(r), IO_ROWS)
    for name in IO_ROWS.names:
        if name in IO_FILE.names:
            out[name] = r[name]
    codes = np.full(max(io.paths, default=-1) + 2, -1, dtype=np.int32)
    for number, path in io.paths.items():
        codes[number] = path_codes.setdefault(path, len(path_codes))
    out["path"] = np.where(r["file"] >= 0, codes[r["file"].clip(-1, len(codes) - 1)], -1)
    out["proc"] = proc
    return out


def http_rows(io: IoJournal, rows: np.ndarray) -> np.ndarray:
    """Run.http's rows of one journal (rows: its Run.io rows)."""
    r = rows[np.isin(rows["op"], _HTTP_CODES)]
    out = np.zeros(len(r), HTTP_ROWS)
    for name in ("proc", "tid", "fd", "path", "start_ns", "end_ns"):
        out[name] = r[name]
    request = r["op"] == OP["request"]
    out["kind"] = np.where(request, "request", "response")
    out["length"] = np.where(request, r["result"], -1)
    out["status"] = np.where(request, 0, r["result"])
    lines = [text.partition(" ") for text in io.requests]  # in the order of its request records
    out["method"][request] = [method for method, _, _ in lines]
    out["target"][request] = [target for _, _, target in lines]
    return out


def joined(root: Path, host: str, host_dir: Path, probed: list, losses: list[str]) -> list[tuple[dict, IoJournal]]:
    """The host's interposer journals given to their probed processes
    (attach), and, for the processes that moved data without the probe
    (MIN_OWN_BYTES), (the identity of a process of their own, the journal)."""
    alone = attach(probed, read_host(root, host_dir, losses))
    return [(identity(found, host), found) for found in alone if found.moved]


def columns(journals: list, buffers: np.ndarray, events: np.ndarray, chunk_dtype: np.dtype):
    """Run.io, Run.io_paths and Run.http, and each journal's chunk records as
    writerprof.run.columns.reading takes them: its .chunks.bin, or, where the
    interposer journaled it, those records with its file calls'
    (chunk_records), in memory."""
    sources = [(j.chunks, j.count) for j in journals]
    if not any(j.io is not None for j in journals):
        return np.zeros(0, IO_ROWS), np.zeros(0, object), np.zeros(0, HTTP_ROWS), sources
    paths: dict[str, int] = {}
    found, http = [], []
    starts = events[events["kind"] == "process_start"]
    for proc, j in enumerate(journals):
        if j.io is None:
            continue
        found.append(rows(j.io, proc, paths))
        http.append(http_rows(j.io, found[-1]))
        mine = starts[starts["proc"] == proc]
        seqs = np.array([d.get("writer_seq", -1) if type(d.get("writer_seq")) is int else -1
                         for d in mine["data"]], dtype=np.int64)
        converted = chunk_records(j.io, chunk_dtype, journal.PHASES, buffers[buffers["proc"] == proc],
                                  (mine["t_ns"], seqs))
        if j.count:
            own = np.fromfile(j.chunks, chunk_dtype, count=j.count)
            converted = np.concatenate([own, _nested(converted, own)])
        sources[proc] = (converted, len(converted))
    names = np.empty(len(paths), dtype=object)
    names[:] = list(paths)
    http_all = np.concatenate(http)
    return np.concatenate(found), names, http_all[np.argsort(http_all["start_ns"], kind="stable")], sources


def _nested(calls: np.ndarray, hooked: np.ndarray) -> np.ndarray:
    """The interposer's calls among the probe's hooked calls of the same
    thread: one inside a hooked call of its own phase is left out (that call
    times it: a storage writer's write_chunk around its os.write), one
    inside calls of other phases gets their count as its depth (an fsync
    inside a hooked close: close's own time is less the fsync)."""
    keep = np.ones(len(calls), dtype=bool)
    depth = np.zeros(len(calls), dtype=np.int64)
    for tid in np.intersect1d(calls["tid"], hooked["tid"]).tolist():
        mine = np.flatnonzero(calls["tid"] == tid)
        start, phase = calls["start_ns"][mine], calls["phase"][mine]
        around = hooked[hooked["tid"] == tid]
        for outer in np.unique(around["phase"]).tolist():
            these = around[around["phase"] == outer]
            # Calls of this phase begun by each start, less those ended before it: those holding it.
            holding = (np.searchsorted(np.sort(these["start_ns"]), start, side="right")
                       - np.searchsorted(np.sort(these["end_ns"]), start, side="left"))
            same = phase == outer
            keep[mine[same & (holding > 0)]] = False
            depth[mine[~same]] += holding[~same]
    calls = calls.copy()
    calls["depth"] = np.minimum(depth, np.iinfo(calls["depth"].dtype).max)
    return calls[keep]

