"""A run's shared-memory buffers as columns: every process's SHM and
PLACEMENT records (.shm.bin, .placement.bin) and the "shm" and "placement"
JSON events (those that did not fit a record, and all of a schema-1 run's)
in two run-wide structured arrays, Run.shm and Run.placements, sorted by
time (ties: by process row, then as journaled), each row's process in
`proc` and its segment's name a code into Run.buffer_names (-1: none).
A JSON event's missing field reads as the column's "none": a string's
code 0, a count -1, an address 0."""

from __future__ import annotations

from itertools import chain

import numpy as np

from writerprof.probes.writerprof_probe import format as journal
from writerprof.run import ownfile, times


def file_dtype(fields) -> np.dtype:
    """The dtype of a format's records as they are on disk (little-endian, packed)."""
    return np.dtype([(name, "<" + code) for name, code in fields])


SHM_FILE = file_dtype(journal.SHM_FIELDS)
PLACEMENT_FILE = file_dtype(journal.PLACEMENT_FIELDS)
FILES = ((journal.SHM_SUFFIX, SHM_FILE), (journal.PLACEMENT_SUFFIX, PLACEMENT_FILE))
KINDS = tuple(journal.RECORD_SUFFIXES)  # the events of these kinds are read into the columns

_CODES = {"op": journal.SHM_OPS, "when": journal.PLACEMENT_WHENS, "source": journal.PLACEMENT_SOURCES}
# A JSON event's missing field, as a column holds it.
_NONE = {"size": -1, "start": 0, "end": 0, "pages": -1, "sampled": -1, "stride": -1, "unfaulted": -1,
         "unreadable": 0}


def rows_dtype(file: np.dtype, slots: int = journal.NODE_SLOTS) -> np.dtype:
    """A run-wide array's dtype: the records' fields, the name a code, the
    node slots `slots` wide (a JSON event may have more nodes), and proc."""
    out = []
    for name in file.names:
        if name in ("name", "nodes"):
            out.append((name, "<i4"))
        elif name in ("node", "node_pages"):
            out.append((name, "<i4" if name == "node" else "<i8", (slots,)))
        else:
            out.append((name, file[name].str))
    return np.dtype(out + [("proc", "<i4")])


SHM_ROWS = rows_dtype(SHM_FILE)
PLACEMENT_ROWS = rows_dtype(PLACEMENT_FILE)


def read(root, at: str, base: str, names: set[str]) -> tuple[list[bytes], list[str]]:
    """A journal's SHM and PLACEMENT records, as bytes of whole records (b""
    for a missing file), and the loss lines of reading them. at: its procs/
    directory (with a trailing /), names: the files there."""
    out, losses = [], []
    for suffix, dtype in FILES:
        data = b""
        if base + suffix in names:
            file = at + base + suffix
            try:
                data = ownfile.read(file)
            except OSError as exc:
                losses.append(f"{times.rel(root, file)}: unreadable ({exc.strerror}): its records are lost")
            partial_bytes = len(data) % dtype.itemsize
            if partial_bytes:
                losses.append(f"{times.rel(root, file)}: {partial_bytes} bytes of a partial record dropped "
                              f"(target killed mid-write?)")
                data = data[:-partial_bytes]
        out.append(data)
    return out, losses


def distinct_rows(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of a 2-D array's rows: a row of each distinct one, and each row's
    number among those (a lexsort of the columns: several times faster than
    np.unique(axis=0), and than a sort of long byte strings)."""
    order = np.lexsort(cells.T[::-1])
    ranked = cells[order]
    new = np.append(True, (ranked[1:] != ranked[:-1]).any(axis=1)) if len(cells) else np.zeros(0, bool)
    inverse = np.empty(len(cells), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    return order[new], inverse


def columns(journals: list, windows: np.ndarray, every: list[dict], kinds: np.ndarray, journal_of: np.ndarray,
            losses: list[str]):
    """(Run.shm, Run.placements, Run.buffer_names), and every, kinds and
    journal_of (load._flat's) without the events read into them. Each
    journal's `records` are its read() bytes; windows: times.chunk_windows."""
    names: dict[str, int] = {}
    binary = [_binary(journals, k, dtype, windows, names, losses) for k, (_, dtype) in enumerate(FILES)]
    buffer_events = (kinds == KINDS[0]) | (kinds == KINDS[1])
    if buffer_events.any():
        rows = np.flatnonzero(buffer_events)
        json_rows = [_from_events([every[i] for i in rows[kinds[rows] == kind]],
                                  journal_of[rows[kinds[rows] == kind]], dtype, names)
                     for kind, (_, dtype) in zip(KINDS, FILES)]
        kept = np.flatnonzero(~buffer_events)
        every, kinds, journal_of = [every[i] for i in kept], kinds[kept], journal_of[kept]
    else:
        json_rows = [np.zeros(0, rows_dtype(dtype)) for _, dtype in FILES]
    shm, placements = (_joined(b, j) for b, j in zip(binary, json_rows))
    return shm, placements, np.array(list(names), dtype=object), every, kinds, journal_of


def _binary(journals: list, k: int, file: np.dtype, windows: np.ndarray, names: dict, losses: list[str]):
    """The records of kind k (FILES[k]) of every journal, in journal then file order, their plausible ones."""
    data = [j.records[k] for j in journals]
    counts = np.array([len(d) // file.itemsize for d in data], dtype=np.int64)
    records = np.frombuffer(b"".join(data), dtype=file)
    proc = np.repeat(np.arange(len(journals), dtype=np.int32), counts)
    ok = (records["t_ns"] >= windows[proc, 0]) & (records["t_ns"] <= windows[proc, 1]) & (records["index"] >= 0)
    if file is SHM_FILE:
        ok &= (records["op"] >= 1) & (records["op"] <= len(journal.SHM_OPS)) & (records["size"] >= 0)
    else:
        ok &= ((records["when"] >= 1) & (records["when"] <= len(journal.PLACEMENT_WHENS))
               & (records["source"] >= 1) & (records["source"] <= len(journal.PLACEMENT_SOURCES))
               & (records["nodes"] <= journal.NODE_SLOTS) & (records["node_pages"] >= 0).all(axis=1))
        for name in ("pages", "sampled", "stride", "unfaulted", "unreadable"):
            ok &= records[name] >= 0
    if not ok.all():
        bad = np.bincount(proc[~ok], minlength=len(journals))
        for row in np.flatnonzero(bad):
            times.outside(int(bad[row]), f"{journals[row].rel}{FILES[k][0]}: {{}} record{{}} with impossible values "
                                         f"or times outside the process's life dropped", losses)
        records, proc = records[ok], proc[ok]
    out = np.zeros(len(records), rows_dtype(file))
    for name in file.names:
        if name == "name":  # the distinct names by their bytes, as 8 words
            raw = np.ascontiguousarray(records["name"])
            firsts, inverse = distinct_rows(raw.view("<u8").reshape(len(raw), raw.itemsize // 8))
            codes = [names.setdefault(n.decode(errors="replace"), len(names)) for n in raw[firsts].tolist()]
            out["name"] = np.array(codes, dtype=np.int32)[inverse] if codes else -1
        else:
            out[name] = records[name]
    out["proc"] = proc
    return out


def _from_events(events: list[dict], procs: np.ndarray, file: np.dtype, names: dict) -> np.ndarray:
    """The rows of JSON events of one kind (clean: fields.clean_events)."""
    nodes = [e.get("nodes") or {} for e in events] if "node" in file.names else []
    slots = max([journal.NODE_SLOTS, *map(len, nodes)])
    out = np.zeros(len(events), rows_dtype(file, slots))
    for name in file.names:
        if name == "name":
            out[name] = [-1 if e.get("name") is None else names.setdefault(e["name"], len(names)) for e in events]
        elif name in _CODES:
            codes = _CODES[name]
            out[name] = [codes.get(e.get(name), 0) for e in events]
        elif name == "nodes":
            out[name] = list(map(len, nodes))
        elif name == "node":  # each event's nodes in its first slots, in its order
            used = np.arange(slots) < out["nodes"][:, None]
            out["node"][used] = np.array(list(chain.from_iterable(nodes)), dtype=str).astype(np.int32)
            out["node_pages"][used] = list(chain.from_iterable(map(dict.values, nodes)))
        elif name != "node_pages":
            out[name] = [e.get(name, _NONE.get(name)) for e in events]
    out["proc"] = procs
    return out


def _joined(binary: np.ndarray, from_json: np.ndarray) -> np.ndarray:
    """Both kinds of rows in one array, in time order (ties: by process, then records before events)."""
    if not len(from_json):
        rows = binary
    else:
        slots = from_json.dtype["node"].shape[0] if "node" in from_json.dtype.names else None
        rows = np.zeros(len(binary) + len(from_json), from_json.dtype)
        for name in binary.dtype.names:
            if slots is not None and name in ("node", "node_pages"):
                rows[name][:len(binary), :journal.NODE_SLOTS] = binary[name]
            else:
                rows[name][:len(binary)] = binary[name]
        rows[len(binary):] = from_json
    order = np.lexsort((rows["proc"], rows["t_ns"]))  # stable: a process's as journaled, records first
    return rows if (order[1:] > order[:-1]).all() else rows[order]


def events(run, kind: str) -> list[dict]:
    """Run.shm ("shm") or Run.placements ("placement") as rows of run.events
    are, as dicts: kind, proc, pid, t_ns, and data (the event's fields, as
    journaled; a missing one left out). For the few per-reading readers:
    tests, a look at a run."""
    rows = run.shm if kind == "shm" else run.placements
    file = SHM_FILE if kind == "shm" else PLACEMENT_FILE
    strings = {name: {code: s for s, code in codes.items()} for name, codes in _CODES.items()}
    out = []
    for row in rows.tolist():
        values = dict(zip(rows.dtype.names, row))
        data = {"kind": kind, "t_ns": values["t_ns"]}
        for name in file.names:
            value = values[name]
            if name == "name":
                value = None if value < 0 else run.buffer_names[value]
            elif name in strings:
                value = strings[name].get(value)
            elif name == "nodes":
                value = dict(zip(map(str, values["node"][:value]), values["node_pages"][:value]))
            elif name in ("node", "node_pages", "t_ns") or (name in _NONE and value == _NONE[name]):
                continue
            if value is not None:
                data[name] = value
        out.append({"kind": kind, "proc": values["proc"], "pid": int(run.processes["pid"][values["proc"]]),
                    "t_ns": values["t_ns"], "data": data})
    return out
