"""The Python stacks taken during a recording, per process, tied to the
rows of run.processes and their roles. The files are described in
writerprof.run.layout; they are written by the probe in each process
(writerprof_probe.stacks: stacks/PID-CREATED.stacks.txt, the process's own,
counts in periods of the full rate already) or by py-spy
(writerprof.record.pyspy: the rest of this docstring).

Counts are samples at the run's rate_hz (the writers' rate): a segment taken
at another rate (the tree's sparse rate, its "rate_hz" in stacks.json) has
its counts weighted by rate_hz / its rate, so that a count is the same
wall-clock time in every process. A process that had a py-spy of its own
(a segment with "pid") takes its stacks from that segment only.

Each stack is identified by the process chain py-spy puts at its root (pid and
command line of each process from CMD down). The sampled process is the last
of the chain; it is matched to a row of run.processes on its host by pid, and,
when that pid was several probed processes in the run (a pid reused), by the
parent pid the chain shows, then by the lifetimes that overlap the py-spy
segment, then by the command line. Processes with the same pid, parent and
command line are one line in py-spy's file already; their stacks then go to
the last of them, and run.losses says so. A pid that no probe journaled (a
shell, mpiexec, an interpreter started with -I) keeps proc -1 and role
"other".

The probe's own frames (its wrappers around the hooked calls, compiled
under pseudo-file names, its modules, its sitecustomize: is_probe_frame) are
folded out of what load_stacks returns unless asked for (probe_frames=True):
each such frame is removed and its callees attach to its caller, so the
samples stay and only the frame goes (without_probe_frames). The raw files
keep them.

Each stack's root frame is its thread where the recording told threads apart
(py-spy --threads, the probe: "thread (TID): NAME"): a ProcessStacks holds
its stacks summed over its threads (samples) and each thread's apart
(threads, split_threads); a graph that adds several up says so
(threads_added).

What could not be read is appended to run.losses (once per run), like the rest
of the loader's losses: a missing segment file, a cut-off last line (py-spy
killed while writing), unreadable lines.
"""

from __future__ import annotations

import json
import os
import re
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from writerprof.errors import WriterprofError
from writerprof.probes.writerprof_probe.format import COMPILED_FILE_PREFIX, STACKS_SUFFIX
from writerprof.run import fields, layout, ownfile
from writerprof.run import roles as run_roles

NO_PYTHON_FRAME = "(no Python frame)"  # the stack of a sample that had none (a process starting or exiting)
# A frame read while the process changed it (py-spy --nonblocking) can come
# out torn, e.g. "module\x00ocessing (socket.py:1)" or with no name at all
# (" (x.py:3)", seen in a loaded CI): any frame with a control character or
# without a name is given this name, so that such samples stay counted and
# show as what they are.
TORN_FRAME = "(torn frame)"
# Where a stack says a frame of writerprof's probe is: the pseudo-file of the
# code the probe compiles itself (its timing wrappers: "<writerprof_probe
# timed-...>", format.COMPILED_FILE_PREFIX), a module of the writerprof_probe
# package, or the sitecustomize beside it in probes/. py-spy shortens a
# frame's file by the sys.path entry it is under (site-packages, the probe
# directory on PYTHONPATH, an editable install's root), so a file is matched
# by its last path components whatever the prefix: a frame named like a
# probe wrapper in any other file is the target's and stays.
PROBE_FILE = re.compile(rf"^{re.escape(COMPILED_FILE_PREFIX)}"
                        r"|(?:^|/)(?:writerprof_probe/[^/]+|probes/sitecustomize)\.py$")
# The stack of a sample all of whose frames were the probe's.
PROBE_ONLY = "(writerprof probe)"
# A stack's root frame where the recording told threads apart: "thread (TID):
# NAME" (format.THREAD_FRAME; py-spy --threads), "thread (TID)" while the
# thread had no Python name, TID the kernel's id or (0x...) Python's.
_THREAD = re.compile(r"thread \((\d+|0x[0-9a-fA-F]+)\)(?:: (.*))?", re.DOTALL)
# The thread of the stacks of a recording that did not tell threads apart
# (py-spy without --threads, the probe before it did).
UNTOLD = "(threads not told apart)"
_PROCESS = re.compile(r'process (\d+):"')
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(eq=False)
class ProcessStacks:
    proc: int  # row of run.processes, -1 if no probe journaled this pid
    pid: int
    host: str
    role: str
    samples: dict[tuple[str, ...], int]  # root -> leaf frame strings: samples
    rate_hz: float
    ppid: int = -1  # the parent in py-spy's process chain (-1: CMD itself)
    cmdline: str = ""
    rank: int = -1
    # Each thread's stacks by its name, without their thread frame, and how many
    # threads they were (split_threads); samples is their sum. Where threads were
    # not told apart, all UNTOLD's and 0 (in one made by hand: empty and 0).
    threads: dict[str, dict[tuple[str, ...], int]] = field(default_factory=dict)
    thread_ids: int = 0

    @property
    def total(self) -> int:
        return sum(self.samples.values())

    @property
    def thread_stacks(self) -> dict[str, dict[tuple[str, ...], int]]:
        """Its stacks by thread (threads, or all UNTOLD's)."""
        return self.threads or {UNTOLD: self.samples}

    @property
    def label(self) -> str:
        """Role, rank and pid, as the other exports name a process."""
        rank = f" rank {self.rank}" if self.rank >= 0 else ""
        return f"{self.role}{rank} pid {self.pid}"


def parse_line(line: str) -> tuple[list[tuple[int, str]], tuple[str, ...], int]:
    """One line of a raw py-spy file: its process chain [(pid, cmdline)],
    its Python frames root first, and its count. ValueError if it is not one."""
    stack, _, count = line.rstrip("\n").rpartition(" ")
    if not stack or not count.isdigit():
        raise ValueError(f"not a 'STACK COUNT' line: {line[:80]!r}")
    chain = []
    rest = stack
    while True:
        match = _PROCESS.match(rest)
        if not match:
            break
        end = rest.find('";', match.end())
        if end < 0:  # the chain ends the stack: no Python frame
            if not rest.endswith('"'):
                raise ValueError(f"unterminated process frame: {rest[:80]!r}")
            chain.append((int(match.group(1)), rest[match.end():-1]))
            rest = ""
            break
        chain.append((int(match.group(1)), rest[match.end():end]))
        rest = rest[end + 2:]
    frames = tuple(TORN_FRAME if _torn(f) else f for f in rest.split(";")) if rest else ()
    return chain, frames, int(count)


def _torn(frame: str) -> bool:
    return not frame or frame.startswith(" (") or _CONTROL.search(frame) is not None


def frame_parts(frame: str) -> tuple[str, str | None, int | None]:
    """A py-spy frame string "name (file:line)" as name, file and line
    (None where the frame has none)."""
    if frame.endswith(")") and " (" in frame:
        name, where = frame[:-1].rsplit(" (", 1)
        file, _, line = where.rpartition(":")
        if file and line.isdigit():
            return name, file, int(line)
        return name, where, None
    return frame, None, None


def in_standard_library(file: str) -> bool:
    """Whether a frame's file, as py-spy shortens it by its sys.path entry,
    is the standard library's: a frozen module (<frozen genericpath>) or a
    path under one of its top-level names (multiprocessing/process.py)."""
    return file.startswith("<frozen ") or file.split("/", 1)[0].removesuffix(".py") in sys.stdlib_module_names


def is_probe_frame(frame: str) -> bool:
    """Whether a frame is writerprof's probe's (PROBE_FILE), by its file:
    the one test of every graph and export."""
    file = frame_parts(frame)[1]
    return file is not None and PROBE_FILE.search(file) is not None


def without_probe_frames(samples: dict[tuple[str, ...], int]) -> dict[tuple[str, ...], int]:
    """The stacks with the probe's frames folded out: each removed, its callees
    attached to its caller, the samples kept (stacks that become one are summed)."""
    out: dict[tuple[str, ...], int] = {}
    for frames, count in samples.items():
        key = tuple(f for f in frames if not is_probe_frame(f)) or (PROBE_ONLY,)
        out[key] = out.get(key, 0) + count
    return out


def split_threads(samples: dict[tuple[str, ...], int], pid: int) -> tuple[dict[str, dict[tuple[str, ...], int]], int]:
    """Process pid's stacks by thread, each without its thread frame, and how
    many threads (ids) they were. A thread is "thread NAME", the name it had
    in most of its samples, and threads of one name are one (a queue's
    feeder thread, one per queue; as every writer's MainThread is across
    processes and runs); without one, "thread MainThread" if its id is the
    pid (Linux's main thread), else "thread TID". Stacks without a thread
    frame are UNTOLD's, and no thread is counted for them."""
    by_tid: dict[str | None, dict[tuple[str, ...], int]] = {}
    names: dict[str, dict[str, int]] = {}
    for frames, count in samples.items():
        match = _THREAD.fullmatch(frames[0]) if frames else None
        tid = match.group(1) if match else None
        table = by_tid.setdefault(tid, {})
        key = (frames[1:] if match else frames) or (NO_PYTHON_FRAME,)
        table[key] = table.get(key, 0) + count
        if match and match.group(2) is not None:
            seen = names.setdefault(tid, {})
            seen[match.group(2)] = seen.get(match.group(2), 0) + count
    out: dict[str, dict[tuple[str, ...], int]] = {}
    for tid, table in by_tid.items():
        if tid is None:
            name = UNTOLD
        elif tid in names:
            name = f"thread {max(names[tid], key=names[tid].get)}"
        else:
            name = f"thread {'MainThread' if tid == str(pid) else tid}"
        out[name] = _summed([out.get(name, {}), table])
    return out, len(by_tid) - (None in by_tid)


def threads_added(stacks: list[ProcessStacks]) -> int | None:
    """How many threads the stacks add up; None if some were recorded
    without being told apart."""
    return None if any(not s.thread_ids for s in stacks) else sum(s.thread_ids for s in stacks)


def how_many(stacks: list[ProcessStacks], how: str = "") -> str:
    """How many threads and processes stacks add up, then how (" added up"):
    "3 threads", "2 threads of 2 processes", "2 processes (threads not told
    apart)" where the recording did not; "" for one thread."""
    threads = threads_added(stacks)
    parts = [f"{threads} threads"] * (threads is not None and threads > 1)
    parts += [f"{len(stacks)} processes"] * (len(stacks) > 1)
    if not parts:
        return ""
    return " of ".join(parts) + how + (" (threads not told apart)" if threads is None else "")


def _summed(tables) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}
    for table in tables:
        for frames, count in table.items():
            out[frames] = out.get(frames, 0) + count
    return out


def parse_lines(text: str) -> tuple[list[tuple[list[tuple[int, str]], tuple[str, ...], int]], int, str | None]:
    """Each line of a raw file parsed (parse_line), the number of unreadable
    lines, and the cut-off last line if any."""
    lines = text.split("\n")
    tail = lines.pop() or None  # after the last newline: empty unless the writer was cut off
    parsed, bad = [], 0
    for line in lines:
        if not line.strip():
            continue
        try:
            parsed.append(parse_line(line))
        except ValueError:
            bad += 1
    return parsed, bad, tail


def read_raw(text: str) -> tuple[dict, int, str | None]:
    """A raw file's stacks keyed (pid, ppid, cmdline) -> {frames: count}, the
    number of unreadable lines, and the cut-off last line if any."""
    parsed, bad, tail = parse_lines(text)
    out: dict[tuple[int, int, str], dict[tuple[str, ...], int]] = {}
    for chain, frames, count in parsed:
        if not chain:  # py-spy without --subprocesses: no chain; not what record writes
            bad += 1
            continue
        pid, cmdline = chain[-1]
        ppid = chain[-2][0] if len(chain) > 1 else -1
        stacks = out.setdefault((pid, ppid, cmdline), {})
        key = frames or (NO_PYTHON_FRAME,)
        stacks[key] = stacks.get(key, 0) + count
    return out, bad, tail


def load_stacks(run, probe_frames: bool = False) -> list[ProcessStacks]:
    """Every sampled process's stacks, probed processes first in run.processes
    order, then the others by host and pid. [] for a run without stacks.
    The probe's frames are folded out (without_probe_frames) unless
    probe_frames."""
    role_of = run_roles.roles(run)
    found: dict[tuple[str, int, int, str], ProcessStacks] = {}
    losses: list[str] = []
    for host in run.hosts:
        directory = layout.stacks_dir(run.path, host)
        index = _index(run, directory, losses) if directory.is_dir() else {}
        rate = float(index.get("rate_hz") or (run.meta.get("stacks") or {}).get("rate_hz") or 100)
        for proc, samples in _probe_stacks(run, host, directory, losses):
            found[(host, proc, 0, "")] = ProcessStacks(
                proc=proc, pid=int(run.processes["pid"][proc]), host=host, role=str(role_of[proc]), samples=samples,
                rate_hz=rate, ppid=int(run.processes["ppid"][proc]), rank=int(run.processes["rank"][proc]),
                cmdline=" ".join(run.identity(host, int(run.processes["pid"][proc]),
                                              int(run.processes["created_ns"][proc])).get("argv") or []))
        if not directory.is_dir():
            continue
        segments = {s.get("file"): s for s in index.get("segments", []) if isinstance(s, dict)}
        on_disk = {p.name for p in directory.iterdir()
                   if p.name.endswith((layout.STACKS_SUFFIX, layout.STACKS_SUFFIX + ".gz"))}
        on_disk -= {n for n in on_disk if n + ".gz" in on_disk}  # compressed whole, then the original removed
        files = sorted({n for n in segments if isinstance(n, str)} | on_disk)
        # Processes sampled at the full rate by a py-spy of their own: the tree's
        # sparse samples of them are left out (the same time, coarser).
        own = {s["pid"] for s in segments.values() if isinstance(s.get("pid"), int)}
        for name in files:
            file = directory / name
            rel = file.relative_to(run.path).as_posix()
            try:
                text = _read(file, rel, losses)
            except FileNotFoundError:
                losses.append(f"{rel}: missing (py-spy killed before it wrote it?): its stacks are lost")
                continue
            except OSError as exc:
                losses.append(f"{rel}: unreadable ({exc.strerror}): its stacks are lost")
                continue
            by_process, bad, tail = read_raw(text)
            if tail:
                losses.append(f"{rel}: a cut-off last line ({len(tail)} bytes) dropped (py-spy killed mid-write?)")
            if bad:
                losses.append(f"{rel}: {bad} unreadable line{'s' * (bad > 1)} dropped")
            segment = segments.get(name, {})
            # Counts in samples at the run's rate: a segment taken at another rate is weighted.
            weight = rate / float(segment["rate_hz"]) if segment.get("rate_hz") else 1.0
            for (pid, ppid, cmdline), samples in by_process.items():
                if pid in own and "pid" not in segment:
                    continue
                proc = _resolve(run, host, pid, ppid, cmdline, segment, losses)
                key = (host, pid, ppid, cmdline) if proc < 0 else (host, proc, 0, "")
                if key not in found:
                    rank = int(run.processes["rank"][proc]) if proc >= 0 else -1
                    found[key] = ProcessStacks(proc=proc, pid=pid, host=host,
                                               role=str(role_of[proc]) if proc >= 0 else run_roles.OTHER,
                                               samples={}, rate_hz=rate, ppid=ppid, cmdline=cmdline, rank=rank)
                merged = found[key].samples
                for frames, count in samples.items():
                    merged[frames] = merged.get(frames, 0) + (count if weight == 1.0 else round(count * weight))
    for loss in losses:
        if loss not in run.losses:
            run.losses.append(loss)
    for process in found.values():
        process.threads, process.thread_ids = split_threads(process.samples, process.pid)
        if not probe_frames:
            process.threads = {thread: without_probe_frames(samples) for thread, samples in process.threads.items()}
        process.samples = _summed(process.threads.values())
    return sorted(found.values(), key=lambda s: (s.proc < 0, s.proc, run.hosts.index(s.host), s.pid))


def _probe_stacks(run, host: str, directory: Path, losses: list[str]):
    """(row of run.processes, {frames: count}) of each process whose probe
    took its stacks (directory/PID-CREATED.stacks.txt: frames only, counts
    in periods of the full rate already)."""
    try:
        names = sorted(n for n in os.listdir(directory) if n.endswith(STACKS_SUFFIX))
    except OSError:
        return
    on_host = run.processes["host"] == host
    for name in names:
        rel = (directory / name).relative_to(run.path).as_posix()
        pid, _, created = name[:-len(STACKS_SUFFIX)].partition("-")
        rows = np.flatnonzero(on_host & (run.processes["pid"] == int(pid)) & (
            run.processes["created_ns"] == int(created))) if pid.isdigit() and created.isdigit() else []
        if not len(rows):
            losses.append(f"{rel}: no journal of that process: its stacks are left out")
            continue
        try:
            parsed, bad, tail = parse_lines(_read(directory / name, rel, losses))
        except OSError as exc:
            losses.append(f"{rel}: unreadable ({exc.strerror}): its stacks are lost")
            continue
        if tail:
            losses.append(f"{rel}: a cut-off last line dropped (the process killed mid-write?)")
        samples: dict[tuple[str, ...], int] = {}
        for chain, frames, count in parsed:
            if chain or not frames:  # a process chain is py-spy's; the probe writes the frames alone
                bad += 1
                continue
            samples[frames] = samples.get(frames, 0) + count
        if bad:
            losses.append(f"{rel}: {bad} unreadable line{'s' * (bad > 1)} dropped")
        yield int(rows[0]), samples


def _read(file: Path, rel: str, losses: list[str]) -> str:
    data = ownfile.read(file)
    if file.name.endswith(".gz"):
        unpack = zlib.decompressobj(wbits=31)  # gzip; a cut stream gives what it holds
        try:
            data = unpack.decompress(data)
        except zlib.error as exc:
            losses.append(f"{rel}: damaged ({exc}): its stacks are lost")
            return ""
        if not unpack.eof:
            losses.append(f"{rel}: the compressed stream is cut short; read up to the cut")
    return data.decode("utf-8", "replace")


def _index(run, directory: Path, losses: list[str]) -> dict:
    file = directory / layout.STACKS_INDEX
    try:
        index = json.loads(ownfile.read(file, ownfile.SMALL_LIMIT))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError, RecursionError) as exc:
        losses.append(f"{file.relative_to(run.path).as_posix()}: unreadable "
                      f"({getattr(exc, 'strerror', None) or exc}); segments read without it")
        return {}
    if not isinstance(index, dict):
        losses.append(f"{file.relative_to(run.path).as_posix()}: not an object; segments read without it")
        return {}
    # Fields of the wrong type left out, as the loader does with run.json.
    wrong = fields.clean(index, fields.STACKS_INDEX_FIELDS)
    for segment in index.get("segments", []):
        wrong += fields.clean(segment, fields.SEGMENT_FIELDS)
    if wrong:
        losses.append(f"{file.relative_to(run.path).as_posix()}: {fields.describe(wrong)} "
                      f"of the wrong type left out")
    return index


def _resolve(run, host: str, pid: int, ppid: int, cmdline: str, segment: dict, losses: list[str]) -> int:
    """The row of run.processes that py-spy's pid was, or -1."""
    processes = run.processes
    rows = np.flatnonzero((processes["host"] == host) & (processes["pid"] == pid))
    if len(rows) <= 1:
        return int(rows[0]) if len(rows) else -1
    narrowed = [r for r in rows if processes["ppid"][r] == ppid] or list(rows)
    start, end = segment.get("started_ns"), segment.get("ended_ns")
    if isinstance(start, int) and isinstance(end, int):
        alive = [r for r in narrowed if processes["created_ns"][r] <= end
                 and (processes["exited_ns"][r] < 0 or processes["exited_ns"][r] >= start)]
        narrowed = alive or narrowed
    if len(narrowed) > 1:
        same = [r for r in narrowed if " ".join(run.identity(host, pid, int(processes["created_ns"][r]))
                                                 .get("argv") or []) == cmdline]
        narrowed = same or narrowed
    if len(narrowed) > 1:
        losses.append(f"stacks of pid {pid} on {host}: {len(narrowed)} processes of the run had that pid, parent "
                      f"and command line; py-spy summed them, and they are given to the last one")
    return int(max(narrowed, key=lambda r: processes["created_ns"][r]))


def select(stacks: list[ProcessStacks], role: str | None = None, pid: int | None = None) -> list[ProcessStacks]:
    """Those of a role ("all" or None: every one) and/or a pid."""
    out = stacks
    if role not in (None, "all"):
        out = [s for s in out if s.role == role]
    if pid is not None:
        out = [s for s in out if s.pid == pid]
    return out


def merged(stacks: list[ProcessStacks], by: str = "none", threads: bool = False,
           each=None) -> dict[tuple[str, ...], int]:
    """The stacks of several processes as one count table. by: "none" sums
    them, "role" puts a root frame per role, "process" one per process;
    threads: a root frame per thread above it (split_threads' names: the
    same-named threads of several processes, every writer's MainThread,
    share one, as they do across runs). each: what is done to each process's
    (or thread's) table before it is added (from_child_start)."""
    out: dict[tuple[str, ...], int] = {}
    for s in stacks:
        prefix = {"none": (), "role": (s.role,), "process": (s.label,)}[by]
        tables = [(prefix + (thread,), table) for thread, table in s.thread_stacks.items()] if threads else [
            (prefix, s.samples)]
        for root, table in tables:
            for frames, count in (each(table) if each else table).items():
                key = root + frames
                out[key] = out.get(key, 0) + count
    return out


def recorded_s(run) -> float | None:
    """How long the recording lasted (run.json), or None if it did not say."""
    start, end = run.meta.get("started_ns"), run.meta.get("ended_ns")
    return (end - start) / 1e9 if isinstance(start, int) and isinstance(end, int) and end > start else None


class NoStacks(WriterprofError):
    """The run holds no stacks to draw or export; the message says why."""


def why_none(run) -> str:
    """Why a run has no stacks, from its run.json: one clause."""
    meta = run.meta.get("stacks")
    if meta is None:
        return "it was recorded without stack sampling (by a writerprof before it took stacks)"
    if not meta.get("enabled", True):
        return "it was recorded with --no-stacks"
    if meta.get("taken") is None:
        return "its recording did not finish (writerprof record was killed?)"
    if meta.get("reason"):
        return f"{'the probe' if meta.get('by') == 'probe' else 'py-spy'} took none: {meta['reason']}"
    return "its stack files are missing or unreadable"


def require_stacks(run, probe_frames: bool = False) -> list[ProcessStacks]:
    """load_stacks(run, probe_frames), or NoStacks saying why there are none."""
    stacks = load_stacks(run, probe_frames)
    if not any(s.samples for s in stacks):
        raise NoStacks(f"{run.path} has no stacks: {why_none(run)}")
    return stacks


# Where a multiprocessing child's own life begins in its stack, whatever
# started it: below these, a fork child still shows its parent's frames (it
# was copied mid-call) and a forkserver or spawn child the server's or
# interpreter's entry. The target runs under BaseProcess._bootstrap; the
# re-run of the parent's __main__ under spawn.prepare; the unpickling of the
# process object (which imports the target's module) under spawn._main.
CHILD_ANCHORS = ("BaseProcess._bootstrap (multiprocessing/process.py:", "prepare (multiprocessing/spawn.py:",
                 "_main (multiprocessing/spawn.py:")
CHILD_START = "(child start, before its own code)"


def from_child_start(samples: dict[tuple[str, ...], int]) -> dict[tuple[str, ...], int]:
    """A child's stacks cut below the last anchor (CHILD_ANCHORS), so that
    writers started by fork, forkserver and spawn share their frames and
    compare: the target under BaseProcess._bootstrap, start-up under prepare
    and _main. A stack with no anchor (the child between its fork and its own
    code) becomes CHILD_START and its leaf frame."""
    out: dict[tuple[str, ...], int] = {}
    for frames, count in samples.items():
        cut = next((i for i in range(len(frames) - 1, -1, -1) if frames[i].startswith(CHILD_ANCHORS)), None)
        key = frames[cut:] if cut is not None else (CHILD_START,) + frames[-1:]
        out[key] = out.get(key, 0) + count
    return out
