"""Interposer journals for unit tests, byte for byte as probes/interposer/journal.c
writes them (the format: writerprof_probe.iofile)."""

import numpy as np

from writerprof.probes.writerprof_probe import iofile
from writerprof.run import io, layout


def path_records(file: int, path: str) -> list[bytes]:
    head = np.zeros(1, io.IO_FILE)
    head["op"], head["file"], head["fd"] = iofile.OPS["path"], file, 3
    return _with_text(head, path)


def request_records(file: int, text: str, start_ns: int, end_ns: int, length: int = -1, tid: int = 1,
                    fd: int = 3) -> list[bytes]:
    """A request record ("METHOD TARGET", the times of the call that carried it) and its text."""
    head = np.zeros(1, io.IO_FILE)
    head["op"], head["file"], head["fd"], head["tid"], head["cpu"] = iofile.OPS["request"], file, fd, tid, -1
    head["start_ns"], head["end_ns"], head["result"] = start_ns, end_ns, length
    return _with_text(head, text)


def _with_text(head: np.ndarray, text: str) -> list[bytes]:
    """The record head, count its text's length, then PATH_DATA records carrying the text."""
    data = text.encode()
    head["count"] = len(data)
    out = [head.tobytes()]
    for at in range(0, len(data), iofile.PATH_CHUNK):
        out.append(bytes([iofile.OPS["path_data"]]) + data[at:at + iofile.PATH_CHUNK].ljust(iofile.PATH_CHUNK, b"\0"))
    return out


def call(op: str, file: int, start_ns: int, end_ns: int, result: int = 0, tid: int = 1, addr: int = 0,
         fd: int = 3) -> bytes:
    r = np.zeros(1, io.IO_FILE)
    r["op"], r["file"], r["start_ns"], r["end_ns"], r["result"] = iofile.OPS[op], file, start_ns, end_ns, result
    r["tid"], r["addr"], r["fd"], r["cpu"] = tid, addr, fd, 0
    return r.tobytes()


def write_io(run, host: str, pid: int, init_ns: int, records: list[bytes], *, created_ns: int | None = None,
             via: int = 1, ppid: int = 1, exe: str = "/usr/bin/tool", comm: str = "tool", handed_out: int = 0):
    """An interposer journal: its header, then the records (handed_out more
    slots counted in `next` than written: records never finished)."""
    directory = layout.host_dir(run, host) / iofile.IO_DIR
    directory.mkdir(parents=True, exist_ok=True)
    head = np.zeros(1, io.HEADER)
    head["magic"], head["header_bytes"], head["record_bytes"] = iofile.MAGIC, iofile.HEADER_BYTES, iofile.RECORD_BYTES
    head["pid"], head["ppid"], head["init_ns"], head["via"] = pid, ppid, init_ns, via
    head["created_ns"] = init_ns if created_ns is None else created_ns
    head["next"] = len(records) + handed_out
    head["exe"], head["comm"] = exe.encode(), comm.encode()
    data = head.tobytes().ljust(iofile.HEADER_BYTES, b"\0") + b"".join(records)
    data += b"\0" * iofile.RECORD_BYTES * handed_out
    file = directory / f"{pid}-{init_ns}{iofile.IO_SUFFIX}"
    file.write_bytes(data)
    return file
