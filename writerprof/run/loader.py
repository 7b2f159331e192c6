"""Read a run directory into one Run: numpy arrays for the many fixed-size
records (chunks, samples, and the buffers' SHM and PLACEMENT records:
writerprof.run.shm), dicts for the rare events. A damaged or unfinished recording loads
as far as it goes; what could not be read is said in `Run.losses`.

The analysis gets clean data: fields of the wrong type are left out
(writerprof.run.fields), records with times no clock of the recording can
have read are dropped, a journal or run.json of a schema this writerprof
does not know is skipped or refused, and each of these is a loss line.

A process that exec'd is two journals of one pid (one per image); the later
image's identity says `exec_of` (the earlier one's row of run.processes),
and the earlier one ends (exited_ns) when the later one began."""

from __future__ import annotations

import json
import marshal
import os
import stat
from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import chain
from operator import itemgetter
from pathlib import Path

import numpy as np

from writerprof import forked
from writerprof.collector import collector_paused
from writerprof.probes.writerprof_probe import format as journal
from writerprof.run import columns, fields, io, layout, ownfile, shm, times
from writerprof.run.columns import Chunks
from writerprof.run.meta import read_meta

# The file records as they are on disk (little-endian, packed like the structs).
CHUNK_DTYPE = shm.file_dtype(journal.CHUNK_FIELDS)
SAMPLE_DTYPE = shm.file_dtype(layout.SAMPLE_FIELDS)
THREAD_SAMPLE_DTYPE = shm.file_dtype(layout.THREAD_SAMPLE_FIELDS)
CPU_SAMPLE_DTYPE = shm.file_dtype(layout.CPU_SAMPLE_FIELDS)
# Each version of a headed record file: version -> its records' dtype on disk;
# threads.bin's version 1 has no header (layout.HEADER).
THREAD_VERSIONS = {layout.THREADS_VERSION: THREAD_SAMPLE_DTYPE}
THREAD_HEADLESS = shm.file_dtype(layout.THREAD_SAMPLE_V1_FIELDS)
CPU_VERSIONS = {layout.CPUS_VERSION: CPU_SAMPLE_DTYPE}
# A field a version lacks, as the run's array holds it: not measured.
NOT_READ = {"run_delay_ns": -1, "nonvoluntary_ctxt": -1}

# host_index is a row of Run.hosts, proc a row of Run.processes (a pid alone
# is not a process: pids are reused within a long run).
CHUNKS_DTYPE = np.dtype(CHUNK_DTYPE.descr + [("host_index", "<i4"), ("pid", "<i4"), ("proc", "<i4")])
SAMPLES_DTYPE = np.dtype(SAMPLE_DTYPE.descr + [("host_index", "<i4")])
THREAD_SAMPLES_DTYPE = np.dtype(THREAD_SAMPLE_DTYPE.descr + [("host_index", "<i4")])
CPU_SAMPLES_DTYPE = np.dtype(CPU_SAMPLE_DTYPE.descr + [("host_index", "<i4")])
PROCESSES_DTYPE = np.dtype([
    ("host", "O"), ("pid", "<i4"), ("ppid", "<i4"), ("created_ns", "<i8"),
    ("exited_ns", "<i8"), ("role", "O"), ("rank", "<i4"),
])
EVENTS_DTYPE = np.dtype([
    ("host", "O"), ("pid", "<i4"), ("proc", "<i4"), ("t_ns", "<i8"), ("kind", "O"), ("data", "O"),
])

# Journals of this many bytes of events or more are read partly in a forked
# worker (see _by_host): the fork and the results' trip back cost
# tens of ms, repaid from a few MB of JSON on.
PARALLEL_BYTES = 16 << 20
WORKER_SHARE = 0.5

# Chunks whose phase code their process never named; not a word, so no
# spec's phase can have this name.
UNNAMED_PHASE = "(unnamed)"


@dataclass(eq=False)
class Run:
    path: Path
    meta: dict
    hosts: list[str]
    topology: dict[str, dict]
    processes: np.ndarray
    chunk_columns: Chunks  # the chunk records as columns, grouped by process (writerprof.run.columns)
    phase_names: dict[int, str]
    events: np.ndarray
    samples: np.ndarray
    sampled: list[dict]
    losses: list[str]
    # The sampler's per-thread readings (layout.THREAD_SAMPLE); empty in runs from before them,
    # run_delay_ns and nonvoluntary_ctxt -1 in runs from before the run-queue readings.
    threads: np.ndarray = field(default_factory=lambda: np.zeros(0, THREAD_SAMPLES_DTYPE))
    # The host's CPU times while sampled threads waited (layout.CPU_SAMPLE); empty in runs from before them.
    cpus: np.ndarray = field(default_factory=lambda: np.zeros(0, CPU_SAMPLES_DTYPE))
    # The shared-memory buffers mapped (shm.SHM_ROWS) and their placement readings
    # (shm.PLACEMENT_ROWS), names codes into buffer_names: writerprof.run.shm.
    shm: np.ndarray = field(default_factory=lambda: np.zeros(0, shm.SHM_ROWS))
    placements: np.ndarray = field(default_factory=lambda: np.zeros(0, shm.PLACEMENT_ROWS))
    buffer_names: np.ndarray = field(default_factory=lambda: np.zeros(0, object))
    # Every file and socket call the I/O interposer journaled (io.IO_ROWS),
    # reads and opens too, each file's path (a socket's: its peer, io.is_peer)
    # a code into io_paths: writerprof.run.io.
    io: np.ndarray = field(default_factory=lambda: np.zeros(0, io.IO_ROWS))
    io_paths: np.ndarray = field(default_factory=lambda: np.zeros(0, object))
    # The HTTP requests and responses seen on the processes' sockets (io.HTTP_ROWS), by start.
    http: np.ndarray = field(default_factory=lambda: np.zeros(0, io.HTTP_ROWS))

    @cached_property
    def chunks(self) -> np.ndarray:
        """Every chunk record (CHUNKS_DTYPE) in the order the calls started,
        the processes' interleaved: made from chunk_columns when first asked
        for (a copy of every record; the analysis reads chunk_columns)."""
        return _sorted(self.chunk_columns.to_records(), "start_ns")

    @property
    def complete(self) -> bool:
        return self.meta.get("ended_ns") is not None

    def identity(self, host: str, pid: int, created_ns: int | None = None) -> dict:
        """The "process" event of that process (created_ns tells apart a reused pid)."""
        return self.process_events(host, pid, created_ns)[0]["data"]

    def process_events(self, host: str, pid: int, created_ns: int | None = None) -> np.ndarray:
        """That process's events in time order, its identity first."""
        return self.events[self.events["proc"] == self._proc(host, pid, created_ns)]

    def events_of(self, kind: str) -> np.ndarray:
        """The events of that kind. Not "shm" or "placement": they are columns
        (Run.shm, Run.placements), read as events by buffer_events; asked for
        here they would be none, silently."""
        if kind in shm.KINDS:
            raise ValueError(f"{kind!r} readings are not in run.events: see run.buffer_events({kind!r})")
        return self.events[self.events["kind"] == kind]

    def buffer_events(self, kind: str) -> list[dict]:
        """The "shm" or "placement" readings as their events' dicts, with proc and pid, in time order."""
        return shm.events(self, kind)

    def _proc(self, host: str, pid: int, created_ns: int | None) -> int:
        match = (self.processes["host"] == host) & (self.processes["pid"] == pid)
        if created_ns is not None:
            match &= self.processes["created_ns"] == created_ns
        rows = np.flatnonzero(match)
        if len(rows) == 0:
            raise KeyError(f"no process {pid} on {host} in {self.path}")
        if len(rows) > 1:
            created = ", ".join(str(c) for c in self.processes["created_ns"][rows])
            raise KeyError(f"pid {pid} on {host} was reused (created_ns {created}): say which")
        return int(rows[0])


@dataclass(eq=False)
class _Journal:
    """One process's journal, read up to its chunk records."""

    host_index: int
    identity: dict
    events: list[dict]
    chunks: str
    chunks_rel: str
    count: int  # complete chunk records in the file
    rel: str = ""  # PROCS/PID-CREATED, for loss lines
    records: list[bytes] = field(default_factory=lambda: [b"", b""])  # its SHM and PLACEMENT records (shm.read)
    exec_to: "_Journal | None" = None  # the image this one exec'd
    io: io.IoJournal | None = None  # its I/O interposer journal (writerprof.run.io)
    unexited_loss: str | None = None  # the loss line of a journal without an exit record


def load(path: Path | str) -> Run:
    with collector_paused():  # a few objects per journal line, none in a cycle
        return _load(Path(path))


def _load(path: Path) -> Run:
    meta = read_meta(path)
    losses: list[str] = []
    _clean_meta(meta, losses)
    if meta.get("ended_ns") is None:
        losses.append("recording did not finish (writerprof record was killed?)")
    hosts_root = path / layout.HOSTS_DIR
    hosts = sorted(p.name for p in hosts_root.iterdir() if p.is_dir()) if hosts_root.is_dir() else []
    topology, sampled, journals = {}, [], []
    # (host_index, path, complete records, (their dtype on disk, the bytes before them), window)
    sample_files, thread_files, cpu_files = [], [], []
    listings = [_journal_names(hosts_root / host / layout.PROCS_DIR) for host in hosts]
    read_hosts = _by_host(path, [str(hosts_root / host / layout.SAMPLED_FILE) for host in hosts], listings)
    for host_index, (host, listing, (events_read, host_sampled, sampled_losses)) in enumerate(
            zip(hosts, listings, read_hosts)):
        host_dir = hosts_root / host
        snapshot = _topology(path, host_dir / layout.TOPOLOGY_FILE, losses)
        if snapshot is not None:
            topology[host] = snapshot
        losses += sampled_losses
        agent_error = host_dir / layout.AGENT_ERROR_FILE
        if agent_error.exists():
            try:
                text = ownfile.read(agent_error, ownfile.SMALL_LIMIT).decode(errors="replace")
                last = (text.strip().splitlines() or ["?"])[-1]
            except OSError as exc:
                last = f"{layout.AGENT_ERROR_FILE} unreadable: {exc.strerror}"
            losses.append(f"{times.rel(path, agent_error)}: the host's sampler agent failed ({last}): "
                          f"its processes are not sampled")
        samples = host_dir / layout.SAMPLES_FILE
        found = _read_journals(path, host_index, listing, events_read, losses)
        found = times.in_recording(path, meta, host, found, losses)
        alone = io.joined(path, host, host_dir, found, losses)
        if meta.get("interposer"):  # preloaded into CMD: a Python process without its journal was not reached
            losses += [f"{j.rel}: process {j.identity.get('pid')} ({j.identity.get('role')}) was not interposed "
                       f"(LD_PRELOAD cleared from its environment, or a static or setuid program): its file "
                       f"calls were timed by the probe's os hooks, and those below Python not at all"
                       for j in found if j.io is None]
        for j in found:  # killed: the interposer's journal of it is whole, the probe's up to its last batch
            if j.io is not None and j.unexited_loss in losses:
                whole = j.unexited_loss.replace(": chunk records after", ": its file calls are all there (the "
                                                "interposer journals each as it returns); the probe's records after")
                losses[losses.index(j.unexited_loss)] = j.unexited_loss = whole
        found += [_Journal(host_index, who, [who], "", of.rel, 0, of.rel, [b"", b""], io=of) for who, of in alone]
        window = times.host_window(meta, host, found)
        journals += found
        inside = [r for r in host_sampled if window[0] <= r["t_ns"] <= window[1]]
        for record in inside:
            record["host"] = host
        sampled += inside
        times.outside(len(host_sampled) - len(inside), f"{times.rel(path, host_dir / layout.SAMPLED_FILE)}: {{}} "
                                                  f"record{{}} with times outside the recording dropped", losses)
        sample_files.append((host_index, samples, _count(path, samples, SAMPLE_DTYPE, "sampler", losses),
                             (SAMPLE_DTYPE, 0), window))
        for files, name, magic, versions, headless in (
                (thread_files, layout.THREADS_FILE, layout.THREADS_MAGIC, THREAD_VERSIONS, THREAD_HEADLESS),
                (cpu_files, layout.CPUS_FILE, layout.CPUS_MAGIC, CPU_VERSIONS, None)):
            dtype, offset, count = _record_file(path, host_dir / name, magic, versions, losses, headless)
            files.append((host_index, host_dir / name, count, (dtype, offset), window))
    journals.sort(key=lambda j: (j.host_index, _int(j.identity.get("created_ns")),
                                 _int(j.identity.get("pid")), j.identity["t_ns"]))
    times.execs(journals, losses)
    processes = _processes(hosts, journals)
    # Before a worker is forked to read chunk records (columns.reading): the
    # pages of the events' dicts, written (refcounts) here after a fork, would each be copied.
    windows = times.chunk_windows(journals, meta)
    buffers, placements, buffer_names, every, kinds, journal_of = shm.columns(journals, windows, *_flat(journals),
                                                                              losses)
    events = _events(hosts, journals, every, kinds, journal_of)
    renumber, phase_names, unnamed = _phase_codes(journals, every, kinds, journal_of)
    io_rows, io_paths, http, chunk_sources = io.columns(journals, buffers, events, CHUNK_DTYPE)
    with columns.reading(
            chunk_sources, CHUNK_DTYPE, CHUNKS_DTYPE,
            {"host_index": np.array([j.host_index for j in journals], dtype=np.int32), "pid": processes["pid"]},
            lambda records, procs, counts: times.implausible(records, procs, counts, windows),
            renumber) as chunks_read:
        # Made while a worker may be reading chunk records.
        samples, threads, cpus = (_fill(dtype, files) for dtype, files in (
            (SAMPLES_DTYPE, sample_files), (THREAD_SAMPLES_DTYPE, thread_files), (CPU_SAMPLES_DTYPE, cpu_files)))
        chunk_columns, dropped = chunks_read()
    times.impossible_losses(dropped, journals, losses)
    _unnamed_losses(journals, chunk_columns, unnamed, phase_names, losses)
    samples = times.plausible_samples(path, samples, hosts, sample_files, losses)
    threads = times.plausible_samples(path, threads, hosts, thread_files, losses)
    cpus = times.plausible_samples(path, cpus, hosts, cpu_files, losses)
    return Run(path=path, meta=meta, hosts=hosts, topology=topology, processes=processes,
               chunk_columns=chunk_columns, phase_names=phase_names, events=events, samples=samples,
               sampled=sampled, losses=losses, threads=threads, cpus=cpus, shm=buffers, placements=placements,
               buffer_names=buffer_names, io=io_rows, io_paths=io_paths, http=http)


def _clean_meta(meta: dict, losses: list[str]) -> None:
    """run.json's fields of the wrong type left out (and said): the analysis reads them with .get."""
    wrong = fields.clean(meta, fields.META_FIELDS)
    stacks = meta.get("stacks")
    if isinstance(stacks, dict):
        wrong += [f"stacks.{name}" for name in fields.clean(stacks, fields.STACKS_META_FIELDS)]
    if wrong:
        losses.append(f"{layout.RUN_FILE}: {fields.describe(wrong)} of the wrong type "
                      f"left out")


def _topology(root: Path, file: Path, losses: list[str]) -> dict | None:
    try:
        snapshot = json.loads(ownfile.read(file, ownfile.SMALL_LIMIT))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as exc:
        losses.append(f"{times.rel(root, file)}: unreadable, topology unknown "
                      f"({getattr(exc, 'strerror', None) or exc})")
        return None
    problem = fields.topology_problem(snapshot)
    if problem:
        losses.append(f"{times.rel(root, file)}: {problem}: topology unknown")
        return None
    return snapshot


def _read_jsonl_files(root: Path, files: list[str | Path], writer: str, clean) -> list[tuple[list[dict], list[str]]]:
    """Per JSON-lines file, its complete, readable records ([] if it is
    missing) and its loss lines; clean([parsed]) -> [(the readable dicts,
    fields left out)], in place, all files at once (a field over every
    file's records of a kind: see fields)."""
    read = [_jsonl_text(root, file, writer) for file in files]
    parsed = _parse_texts([text for text, _ in read])
    out = []
    for file, (records, wrong), (_, count), (_, losses) in zip(files, clean([p for p, _ in parsed]), parsed, read):
        bad = count - len(records)
        if bad:
            losses.append(f"{times.rel(root, file)}: {bad} unreadable line{'s' * (bad > 1)} dropped")
        if wrong:
            losses.append(f"{times.rel(root, file)}: {fields.describe(wrong)} of the wrong type left out")
        out.append((records, losses))
    return out


def _jsonl_text(root: Path, file: str | Path, writer: str) -> tuple[bytes, list[str]]:
    """A JSON-lines file's complete lines (b"" if it is missing) and the loss lines of reading it."""
    try:
        data = ownfile.read(file)
    except FileNotFoundError:
        return b"", []
    except OSError as exc:
        return b"", [f"{times.rel(root, file)}: unreadable ({exc.strerror}): its records are lost"]
    cut = data.rfind(b"\n") + 1  # what follows the last newline: nothing unless the last write was cut
    if cut < len(data):
        return data[:cut], [f"{times.rel(root, file)}: a cut-off last line ({len(data) - cut} bytes) dropped "
                            f"({writer} killed mid-write?)"]
    return data, []


def _parse_texts(texts: list[bytes]) -> list[tuple[list, int]]:
    """_parse_lines of each text, all in one parse (a parse per file costs
    more), each an array in it; a text whose array does not have a value
    per line (a blank line) is parsed on its own, and every text if one
    is no JSON (a bad line)."""
    counts = [text.count(b"\n") for text in texts]
    try:
        arrays = json.loads(b"[" + b",".join(b"[" + text[:-1].replace(b"\n", b",") + b"]" for text in texts) + b"]")
    except (ValueError, RecursionError):
        arrays = []
    if len(arrays) != len(texts):
        return list(map(_parse_lines, texts))
    return [(values, count) if type(values) is list and len(values) == count else _parse_lines(text)
            for values, count, text in zip(arrays, counts, texts)]


def _parse_lines(text: bytes) -> tuple[list, int]:
    """The values of the non-blank lines (None for a line that is not JSON) and how many lines there are."""
    if not text:
        return [], 0
    try:  # one parse for the whole file, several times faster than line by line
        values = json.loads(b"[" + text[:-1].replace(b"\n", b",") + b"]")
        if values:  # else the text is blank (a blank line among others is no JSON: ", ,")
            return values, text.count(b"\n")
    except (ValueError, RecursionError):
        pass
    lines = [line for line in text.split(b"\n") if line.strip()]
    try:
        return json.loads(b"[" + b",".join(lines) + b"]"), len(lines)
    except (ValueError, RecursionError):
        return [_parse(line) for line in lines], len(lines)


def _parse(line: bytes):
    """A line's value; None for one that is no JSON, or nested deeper than
    json parses (RecursionError): a damaged line, like any other."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None

def _count(root: Path, file: str | Path, dtype: np.dtype, writer: str, losses: list[str], offset: int = 0) -> int:
    """Complete records in a binary file after its first offset bytes (0 if it is missing)."""
    try:
        info = os.lstat(file)  # a link is no file of the run's: refused, not followed
    except FileNotFoundError:
        return 0
    if not stat.S_ISREG(info.st_mode):
        losses.append(f"{times.rel(root, file)}: not a file: its records are lost")
        return 0
    count, partial = divmod(max(info.st_size - offset, 0), dtype.itemsize)
    if partial:
        losses.append(f"{times.rel(root, file)}: {partial} bytes of a partial record dropped "
                      f"({writer} killed mid-write?)")
    return count


def thread_samples(file: str | Path) -> np.ndarray:
    """One threads.bin's records, whatever its version, as Run.threads holds them (host_index 0)."""
    file = Path(file)
    dtype, offset, count = _record_file(file.parent, file, layout.THREADS_MAGIC, THREAD_VERSIONS, [],
                                        THREAD_HEADLESS)
    return _fill(THREAD_SAMPLES_DTYPE, [(0, file, count, (dtype, offset), None)])


def _record_file(root: Path, file: Path, magic: bytes, versions: dict[int, np.dtype], losses: list[str],
                 headless: np.dtype | None = None) -> tuple[np.dtype, int, int]:
    """A headed record file's (records' dtype on disk, header bytes, complete
    records) by its header (layout.HEADER); no records where that is not a
    version this writerprof reads (said in losses). A file without the magic
    has records of the headless dtype, where its first version had no header
    (threads.bin's), else none."""
    newest = versions[max(versions)]
    try:
        with ownfile.open_file(file) as f:
            head = f.read(layout.HEADER.size)
    except FileNotFoundError:
        return newest, 0, 0
    except OSError:
        return newest, 0, _count(root, file, newest, "sampler", losses)  # (_count says what it is)
    rel = times.rel(root, file)
    if not head.startswith(magic):
        if head and headless is not None:
            return headless, 0, _count(root, file, headless, "sampler", losses)
        if head:
            losses.append(f"{rel}: no {magic.decode()} header: its records are lost")
        return newest, 0, 0
    if len(head) < layout.HEADER.size:
        losses.append(f"{rel}: its header is cut short (sampler killed as it began?): no records")
        return newest, 0, 0
    _, version, size = layout.HEADER.unpack(head)
    if version not in versions or versions[version].itemsize != size:
        newer = version > max(versions)
        losses.append(f"{rel}: version {version} of {size}-byte records "
                      + ("is newer than this writerprof reads: upgrade writerprof; " if newer else
                         "is not one writerprof writes: ") + "its records are lost")
        return newest, 0, 0
    dtype = versions[version]
    return dtype, layout.HEADER.size, _count(root, file, dtype, "sampler", losses, layout.HEADER.size)


def _journal_names(procs: Path) -> tuple[str, set[str], list[str]]:
    """A procs/ directory's path (with a trailing /), its file names and its
    journals' (PID-CREATED), in order; none if it is missing."""
    if not procs.is_dir():
        return "", set(), []
    names = set(os.listdir(procs))
    suffixes = (journal.EVENTS_SUFFIX, journal.CHUNKS_SUFFIX, journal.SHM_SUFFIX, journal.PLACEMENT_SUFFIX)
    bases = sorted({n[: -len(s)] for n in names for s in suffixes if n.endswith(s)})
    # Paths as strings: making a Path a journal file costs more than reading it.
    return os.path.join(procs, ""), names, bases


def _by_host(root: Path, sampled: list[str], listings: list[tuple[str, set[str], list[str]]]):
    """Per host (sampled[h]: its sampled.jsonl, listings[h]: _journal_names
    of its procs/), in order, what _read_host makes of its files. Of a run
    with journals enough to pay for a fork, and a CPU to spare, the last
    hosts' (WORKER_SHARE of the journals' bytes) are read by a forked worker
    while this process reads the first hosts' and does the rest of each
    host's loading. The worker's lists of dicts come back marshalled: made
    here in half the time parsing and checking them takes, and marshal.dumps
    takes a fifth of pickle's."""
    read = partial(_read_host, root)
    split = _worker_split([[at + base + journal.EVENTS_SUFFIX for base in bases] for at, _, bases in listings])
    worker = forked.fork(lambda: marshal.dumps(list(map(read, sampled[split:], listings[split:])))) if (
        split < len(listings)) else None
    try:
        yield from map(read, sampled[:split], listings[:split])
        done, worker = forked.collect(*worker, loads=marshal.loads) if worker else None, None
        yield from done if done is not None else map(read, sampled[split:], listings[split:])
    finally:
        if worker:  # the caller failed
            forked.discard(*worker)


def _read_host(root: Path, sampled: str, listing: tuple[str, set[str], list[str]]):
    """A host's files read: per journal of its procs/ (listing:
    _journal_names), its events (_read_jsonl_files), the loss lines of
    reading its files, and its SHM and PLACEMENT records (shm.read); its
    sampler's records (sampled: its sampled.jsonl) and their loss lines."""
    at, names, bases = listing
    events = _read_jsonl_files(root, [at + base + journal.EVENTS_SUFFIX for base in bases], "target",
                               fields.clean_events)
    out = []
    for base, (records, losses) in zip(bases, events):
        binary, lost = shm.read(root, at, base, names)
        out.append((records, losses + lost, binary))
    (records, losses), = _read_jsonl_files(root, [sampled], "sampler", fields.clean_sampled_records)
    return out, records, losses


def _worker_split(files: list[list[str]]) -> int:
    """The first host a worker should read (len(files): none)."""
    if not forked.spare_cpu():  # first: the sizes take a stat a journal
        return len(files)
    sizes = np.array([sum(map(_size, host)) for host in files], dtype=np.int64)
    total = sizes.sum()
    if total < PARALLEL_BYTES:
        return len(files)
    return int(np.searchsorted(np.cumsum(sizes), total * (1 - WORKER_SHARE)))


def _size(file: str) -> int:
    try:
        return os.stat(file).st_size
    except OSError:  # missing or unreadable: said when it is read
        return 0


def _read_journals(root: Path, host_index: int, listing: tuple[str, set[str], list[str]],
                   read: list[tuple[list[dict], list[str], list]], losses: list[str]) -> list[_Journal]:
    """A host's journals (listing: _journal_names of its procs/; read: its
    files read, _read_host)."""
    at, names, bases = listing
    found = []
    procs_rel = times.rel(root, at) if bases else ""
    for base, (events, events_losses, records) in zip(bases, read):
        chunks_file = at + base + journal.CHUNKS_SUFFIX
        losses += events_losses
        count = _count(root, chunks_file, CHUNK_DTYPE, "target", losses)
        rel = f"{procs_rel}/{base}"
        if not events or events[0]["kind"] != "process":
            missing = "no events file" if base + journal.EVENTS_SUFFIX not in names else "no identity line"
            losses.append(f"{rel}: {missing}, journal skipped ({count} chunk records)")
            continue
        schema = events[0].get("schema")
        if schema is None or not 1 <= schema <= journal.SCHEMA:
            newer = schema is not None and schema > journal.SCHEMA
            losses.append(f"{rel}: journal schema {schema!r} "
                          + (f"is newer than this writerprof reads (up to {journal.SCHEMA}): upgrade writerprof; "
                             if newer else "is not a version number the probe writes: ")
                          + f"journal skipped ({count} chunk records)")
            continue
        kinds = list(map(itemgetter("kind"), events))
        stopped = events[kinds.index("journal_stopped")] if "journal_stopped" in kinds else None
        if stopped is not None:
            losses.append(
                f"{rel}: process {events[0].get('pid')} ({events[0].get('role')}) "
                f"stopped journaling ({stopped.get('reason')}): {stopped.get('events_dropped')} events and "
                f"{stopped.get('records_dropped')} chunk records after that are missing")
        unexited = None
        if stopped is None and "exit" not in kinds:
            unexited = (f"{rel}: process {events[0].get('pid')} ({events[0].get('role')}) "
                        f"left no exit record (killed by a signal, or alive when the recording ended): chunk "
                        f"records after its last flushed batch, {journal.FLUSH_RECORDS} at most and those of "
                        f"{journal.CPU_READ_NS // 1000} µs after, are missing")
            losses.append(unexited)
        found.append(_Journal(host_index, events[0], events, chunks_file, rel + journal.CHUNKS_SUFFIX, count, rel,
                              list(records), unexited_loss=unexited))
    return found


def _int(value, default: int = -1) -> int:
    return value if type(value) is int else default


def _processes(hosts: list[str], journals: list[_Journal]) -> np.ndarray:
    out = np.empty(len(journals), PROCESSES_DTYPE)
    for i, j in enumerate(journals):
        # The last exit (the last line, unless the journal was stopped).
        exited = next((e["t_ns"] for e in reversed(j.events) if e["kind"] == "exit"), None)
        if j.exec_to is not None:  # this image ended where the next began
            exited = j.exec_to.identity["t_ns"]
        who = j.identity
        out[i] = (hosts[j.host_index], _int(who.get("pid")), _int(who.get("ppid")),
                  _int(who.get("created_ns")), _int(exited),
                  str(who.get("role", "")), _int(who.get("rank")))
    return out


def _flat(journals: list[_Journal]) -> tuple[list[dict], np.ndarray, np.ndarray]:
    """Every journal's events one after another, their kinds and their journals (rows of run.processes)."""
    every = list(chain.from_iterable(j.events for j in journals))
    # Every kept event has an int t_ns and a str kind (fields.clean_events).
    kinds = np.fromiter(map(itemgetter("kind"), every), dtype=object, count=len(every))
    journal_of = np.repeat(np.arange(len(journals), dtype=np.int32), [len(j.events) for j in journals])
    return every, kinds, journal_of


def _events(hosts: list[str], journals: list[_Journal], every: list[dict], kinds: np.ndarray,
            journal_of: np.ndarray) -> np.ndarray:
    t_ns = np.fromiter(map(itemgetter("t_ns"), every), dtype=np.int64, count=len(every))
    order = np.argsort(t_ns, kind="stable")
    # Each column put in time order on its own: moving whole rows with
    # objects in them, or np.empty's filling of them with None, costs more.
    proc = journal_of[order]
    out = np.zeros(len(every), EVENTS_DTYPE)
    out["t_ns"] = t_ns[order]
    out["proc"] = proc
    out["pid"] = np.array([_int(j.identity.get("pid")) for j in journals], dtype=np.int32)[proc]
    out["host"] = np.array([hosts[j.host_index] for j in journals], dtype=object)[proc]
    out["kind"] = kinds[order]
    out["data"] = np.fromiter(every, dtype=object, count=len(every))[order]  # through an object array: the dicts stay whole
    return out


def _fill(dtype: np.dtype, files: list[tuple]) -> np.ndarray:
    """One array of every file's records (files: (host_index, path, count,
    (their dtype on disk, the bytes before them), window)) and its host's
    index, each file read straight into place so that the records are held
    once; a field its version lacks, NOT_READ."""
    out = np.empty(sum(count for _, _, count, _, _ in files), dtype)
    start = 0
    for host_index, file, count, (file_dtype, offset), _ in files:
        if count:
            end = start + count
            out[list(file_dtype.names)][start:end] = np.fromfile(file, dtype=file_dtype, count=count, offset=offset)
            for name in dtype.names:
                if name not in file_dtype.names:
                    out[name][start:end] = host_index if name == "host_index" else NOT_READ[name]
            start = end
    return out


def _sorted(records: np.ndarray, key: str) -> np.ndarray:
    order = np.argsort(records[key], kind="stable")
    # Whole records moved as opaque bytes: several times faster than field by field.
    return records.view(np.dtype((np.void, records.dtype.itemsize)))[order].view(records.dtype)


def _phase_codes(journals: list[_Journal], every: list[dict], kinds: np.ndarray, journal_of: np.ndarray):
    """Run-wide phase codes for each process's own (its added phases' codes
    are in the order it met them): renumber(phase, procs, counts) -> run codes, the
    run's code -> name, and the code of phases a process never named (every,
    kinds, journal_of: _flat of the journals)."""
    base = {code: name for name, code in journal.PHASES.items()}  # the codes of a process that named none
    own: dict[int, dict] = {}  # the processes that named phases: process -> code -> name
    phases = np.flatnonzero(kinds == "phase")
    for proc, e in zip(journal_of[phases].tolist(), map(every.__getitem__, phases.tolist())):
        if type(e.get("code")) is int and isinstance(e.get("name"), str):
            own.setdefault(proc, dict(base))[e["code"]] = e["name"]
    local = [base, *own.values()]
    added = sorted({n for names in local for n in names.values()} - set(journal.PHASES))
    run_codes = dict(journal.PHASES)
    run_codes.update((name, journal.FIRST_ADDED_PHASE + i) for i, name in enumerate(added))
    unnamed = journal.FIRST_ADDED_PHASE + len(added)
    # A (process, local code) -> run code table, a column per local code named
    # anywhere and a last one for codes never named.
    # (Sorted in Python: np.unique imports numpy.ma, 0.035 CPU s of record's summary.)
    known = np.array(sorted({code for names in local for code in names}), dtype=np.int64)

    def row(names: dict) -> np.ndarray:
        codes = np.full(len(known) + 1, unnamed, dtype=CHUNK_DTYPE["phase"])
        codes[np.searchsorted(known, list(names))] = [run_codes[name] for name in names.values()]
        return codes

    table = np.empty((len(journals), len(known) + 1), dtype=CHUNK_DTYPE["phase"])
    table[:] = row(base)
    for proc, names in own.items():
        table[proc] = row(names)

    # A chunk's phase (a u2) -> its table column, in one look-up.
    column_of = np.full(1 << 16, len(known), dtype=np.intp)
    column_of[known[known < 1 << 16]] = np.flatnonzero(known < 1 << 16)

    def renumber(phase: np.ndarray, procs: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """The run codes of chunks' phases, counts[i] of them of process procs[i], one after another."""
        column = column_of[phase]
        rows = table[procs[counts > 0]]
        if len(rows) and (rows == rows[0]).all():  # the common case: the processes named the same codes
            return rows[0][column]
        return table[np.repeat(procs, counts), column]

    return renumber, {code: name for name, code in run_codes.items()}, unnamed


def _unnamed_losses(journals, chunks: Chunks, unnamed: int, phase_names: dict, losses: list[str]) -> None:
    """The records of phase codes their process never named, said per process."""
    lost = np.bincount(chunks["proc"][chunks["phase"] == unnamed], minlength=len(journals))
    for proc in np.flatnonzero(lost):
        phase_names[unnamed] = UNNAMED_PHASE
        losses.append(f"{journals[proc].chunks_rel}: {lost[proc]} chunk records of phase codes its "
                      f"journal never named, kept as phase {UNNAMED_PHASE!r}")
