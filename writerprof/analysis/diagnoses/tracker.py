"""The resource tracker (multiprocessing.resource_tracker), as the probe
journals it (probes/writerprof_probe/tracker.py): shared-memory segments
handed to a tracker by a process that only attached them, unlinks that found
a segment gone and who unlinked it first, the tracker's warnings of leaked
segments at its shutdown, and the UNREGISTERs it could not apply.

A tracker is known by its pipe (the inode every process that shares it
writes to). The processes multiprocessing starts from one parent (fork,
spawn, forkserver) share its tracker, which holds each name once: a child's
second registration of a segment changes nothing there, and a child's
unregister removes its parent's. Any other Python process that registers a
name (SharedMemory(name=...) registers what it only attached, up to 3.12 and
on 3.13+ without track=False: bpo-39959 / gh-82300) starts a tracker of its
own, which unlinks the name as leaked when that process ends, under the
segment's creator (mlcommons/storage #768, #777, #780)."""

from __future__ import annotations

import re
import weakref
from collections import defaultdict
from dataclasses import dataclass, field

from writerprof.analysis.diagnoses.base import INFO, WARNING, Code, diagnosis, emits

SHM = "shared_memory"
MISSING = "FileNotFoundError"
NAMED = 4  # segments named in a message (all of them in its evidence)
# The tracker's warning at its shutdown, 3.9-3.14 (3.13 on adds the names: ": {...}").
_LEAKED = re.compile(r"There appear to be (\d+) leaked (\w+) objects")


@dataclass
class Journal:
    """The run's tracker events, each a dict of its data with its process row
    (proc), host and t_ns."""

    calls: list[dict] = field(default_factory=list)  # register and unregister (tracker_call)
    unlinks: list[dict] = field(default_factory=list)  # resource_unlink
    outputs: list[dict] = field(default_factory=list)  # what a tracker printed (tracker_output)
    trackers: dict = field(default_factory=dict)  # (host, pipe) -> the tracker's process row
    pipes: dict = field(default_factory=dict)  # tracker process row -> its pipe
    created: dict = field(default_factory=dict)  # key -> its creator's register call
    calls_of: dict = field(default_factory=lambda: defaultdict(list))  # key -> its calls, in time order
    unlinks_of: dict = field(default_factory=lambda: defaultdict(list))  # key -> its unlinks, in time order


_journals: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # run -> its Journal, read once


def journal(run) -> Journal:
    if run not in _journals:
        _journals[run] = _read(run)
    return _journals[run]


def _read(run) -> Journal:
    j = Journal()
    for kind, into in (("tracker_call", j.calls), ("resource_unlink", j.unlinks), ("tracker_output", j.outputs)):
        for e in run.events_of(kind):
            if isinstance(e["data"].get("name", ""), str):
                into.append({**e["data"], "proc": int(e["proc"]), "host": e["host"], "t_ns": int(e["t_ns"])})
        into.sort(key=lambda e: e["t_ns"])
    for e in run.events_of("tracker_start"):
        if isinstance(e["data"].get("pipe"), int):
            j.trackers[(e["host"], e["data"]["pipe"])] = int(e["proc"])
            j.pipes[int(e["proc"])] = e["data"]["pipe"]
    for c in j.calls:
        j.calls_of[key(c)].append(c)
        if c.get("op") == "register" and c.get("opened") == "create":
            j.created.setdefault(key(c), c)
    for u in j.unlinks:
        j.unlinks_of[key(u)].append(u)
    return j


def key(event: dict) -> tuple[str, str]:
    """A segment on its host, whichever way its name was written (SharedMemory's name has no leading /)."""
    return event["host"], (event.get("name") or "").lstrip("/")


def who(procs, row: int | None, python: bool = False) -> str:
    """pid N (its role, and its Python where asked)."""
    if row is None:
        return "a process not recorded"
    proc = procs[row]
    said = [proc["role"].replace("_", " ")] if proc["role"] != "other" else []
    said += [f"Python {proc['python']}"] if python and proc["python"] else []
    return f"pid {proc['pid']}" + (f" ({', '.join(said)})" if said else "")


def _tracker_of(j: Journal, procs, host: str, pipe) -> str:
    row = j.trackers.get((host, pipe))
    if row is None:
        return "a resource tracker not recorded"
    started_by = procs[row]["parent"]
    return f"the resource tracker pid {procs[row]['pid']}" + (
        f" (started by pid {procs[started_by]['pid']})" if started_by is not None else "")


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:NAMED])
    return shown + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")


def _own_tracker(j: Journal, procs, call: dict) -> bool:
    """Whether an attach's registration went to a tracker other than the
    segment's creator's: the creator's where it is recorded, else one the
    attaching process started itself (no multiprocessing parent gave it one)."""
    if call.get("tracker") is None:
        return False
    creator = j.created.get(key(call))
    if creator is not None:
        return creator.get("tracker") is not None and creator["tracker"] != call["tracker"]
    row = j.trackers.get((call["host"], call["tracker"]))
    return row is not None and procs[row]["parent"] == call["proc"]


def _held(j: Journal, call: dict) -> bool:
    """Whether a registration stayed: no unregister of the name reached its tracker after it."""
    return not any(c.get("op") == "unregister" and c.get("tracker") == call["tracker"] and c["t_ns"] >= call["t_ns"]
                   for c in j.calls_of[key(call)])


def _attached_elsewhere(j: Journal, procs) -> dict[int, list[dict]]:
    """Attaching process row -> its registrations that went to a tracker of its
    own and stayed there (one unregistered at once is the workaround, done)."""
    out = defaultdict(list)
    for c in j.calls:
        if c.get("op") == "register" and c.get("rtype") == SHM and c.get("opened") == "attach" \
                and _own_tracker(j, procs, c) and _held(j, c):
            out[c["proc"]].append(c)
    return out


@emits(Code("shm-attach-registered", (WARNING,),
            "a process that only attached a shared-memory segment registered it with a resource tracker of its own, "
            "not its creator's: that tracker unlinks the segment when the process ends, under its creator"))
def attach_registered(run, procs, saves):
    j = journal(run)
    out = []
    for row, calls in sorted(_attached_elsewhere(j, procs).items()):
        proc = procs[row]
        names = sorted({c["name"] for c in calls})
        creators = sorted({j.created[key(c)]["proc"] for c in calls if key(c) in j.created})
        mine = _tracker_of(j, procs, proc["host"], calls[0]["tracker"])
        theirs = sorted({_tracker_of(j, procs, proc["host"], j.created[key(c)].get("tracker"))
                         for c in calls if key(c) in j.created})
        made = (f"their creator {', '.join(who(procs, r) for r in creators)} registered them with "
                f"{', '.join(theirs)}" if creators else "their creator is not in the recording")
        out.append(diagnosis(
            "shm-attach-registered", proc,
            f"{who(procs, row, python=True)} attached {len(names)} shared-memory segment(s) by name "
            f"({_names(names)}) and registered them with {mine}, its own; {made}: when pid {proc['pid']} ends, its "
            f"tracker unlinks them as leaked, and their creator's unlink() then raises FileNotFoundError "
            f"(attached at {calls[0].get('site') or calls[0].get('caller')})",
            {"segments": names, "python": proc["python"], "attacher": attacher(procs, calls[0]),
             "tracker_pid": _pid(procs, j.trackers.get((proc["host"], calls[0]["tracker"]))),
             "creator_pids": [procs[r]["pid"] for r in creators]}))
    return out


def _pid(procs, row):
    return procs[row]["pid"] if row is not None else None


def attacher(procs, call: dict) -> dict:
    """Where a fix changes the program: the process that attached, its Python and the line."""
    return {"pid": procs[call["proc"]]["pid"], "python": procs[call["proc"]]["python"],
            "site": call.get("site") or call.get("caller")}


def _attached_into(j: Journal, procs, name_of: dict, pipe) -> dict | None:
    """The registration of a segment with a tracker (its pipe) by a process
    that only attached it and has its own tracker: the attacher(), or None."""
    for c in j.calls_of[key(name_of)]:
        if c.get("op") == "register" and c.get("opened") == "attach" and c.get("tracker") == pipe \
                and _own_tracker(j, procs, c):
            return attacher(procs, c)
    return None


def _first_unlink(j: Journal, failed: dict) -> dict | None:
    """The latest unlink of the segment that worked before this one failed
    (began before it ended: the one's unlink came before the other's)."""
    done = [u for u in j.unlinks_of[key(failed)] if u.get("outcome") == "ok" and u["t_ns"] < _end(failed)]
    return max(done, key=lambda u: u["t_ns"]) if done else None


def _end(event: dict) -> int:
    """A call's end (tracker_call and resource_unlink are spans: t_ns is their start)."""
    return event.get("end_ns") or event["t_ns"]


def _unlinker(j: Journal, procs, first: dict) -> str:
    if first.get("via") == "tracker":
        registered = sorted({(c["proc"], c.get("opened")) for c in j.calls_of[key(first)]
                             if c.get("op") == "register" and c.get("tracker") == j.pipes.get(first["proc"])},
                            key=lambda x: x[0])
        held = ", ".join(f"{who(procs, r)}" + (", which only attached them" if opened == "attach" else "")
                         for r, opened in registered)
        return (f"{_tracker_of(j, procs, first['host'], j.pipes.get(first['proc']))}, at its shutdown"
                + (f" (it held them for {held})" if held else ""))
    return f"{who(procs, first['proc'])} (at {first.get('site') or first.get('caller')})"


def _cause(j: Journal, procs, unlink: dict) -> dict | None:
    """The attach behind a tracker's unlink of a segment: the attacher() whose
    registration it held, or whose registration made another tracker unlink
    it first (so that a registrant's own unlink() failed and it never
    unregistered); None where no attach is behind it."""
    found = _attached_into(j, procs, unlink, j.pipes.get(unlink["proc"]))
    if found is not None or unlink.get("via") != "tracker":
        return found
    for failed in j.unlinks_of[key(unlink)]:
        if failed.get("outcome") == MISSING and failed.get("via") != "tracker":
            first = _first_unlink(j, failed)
            if first is not None and first.get("via") == "tracker" and first["proc"] != unlink["proc"]:
                return _attached_into(j, procs, first, j.pipes.get(first["proc"]))
    return None


@emits(Code("shm-double-unlink", (WARNING, INFO),
            "an unlink of a shared-memory segment raised FileNotFoundError: another process (or a resource tracker at "
            "its shutdown) had unlinked it first; a warning where the program's unlink() raised, info the tracker's"),
       Code("shm-unlink-missing", (WARNING, INFO),
            "an unlink of a shared-memory segment raised FileNotFoundError, and no recorded process unlinked it first "
            "(a program outside the recording, or an unprobed tracker, did)"))
def unlink_failed(run, procs, saves):
    j = journal(run)
    groups = defaultdict(list)  # (failing process, its via, first unlinker's process and via) -> [(failed, first)]
    for failed in j.unlinks:
        if failed.get("rtype") == SHM and failed.get("outcome") == MISSING:
            first = _first_unlink(j, failed)
            by = (first["proc"], first.get("via")) if first else None
            groups[(failed["proc"], failed.get("via"), by)].append((failed, first))
    out = []
    for (row, via, by), found in sorted(groups.items(), key=lambda g: min(f["t_ns"] for f, _ in g[1])):
        failed, first = found[0]
        names = sorted({f["name"] for f, _ in found})
        severity = INFO if via == "tracker" else WARNING
        what = (f"{_tracker_of(j, procs, failed['host'], j.pipes.get(row))}, cleaning up at its shutdown, found "
                if via == "tracker" else
                f"{who(procs, row)}'s {via or 'unlink'}() raised FileNotFoundError (at "
                f"{failed.get('site') or failed.get('caller')}) for ")
        evidence = {"segments": names, "via": via, "site": failed.get("site"),
                    "errno": failed.get("errno"), "pid": procs[row]["pid"]}
        if first is None:
            out.append(diagnosis(
                "shm-unlink-missing", procs[row],
                f"{what}{len(names)} shared-memory segment(s) gone ({_names(names)}): no recorded process unlinked "
                f"them first (a program outside the recording, or a resource tracker it does not show, did)",
                evidence, severity=severity))
            continue
        gaps = [max(f["t_ns"] - _end(b), 0) / 1e9 for f, b in found]
        cause = _cause(j, procs, first) if first.get("via") == "tracker" else None  # what a fix removes
        out.append(diagnosis(
            "shm-double-unlink", procs[row],
            f"{what}{len(names)} shared-memory segment(s) unlinked already ({_names(names)}): "
            f"{_unlinker(j, procs, first)} had unlinked them {min(gaps):.3f} s before",
            {**evidence, "unlinked_by_pid": procs[first["proc"]]["pid"],
             "unlinked_by_role": procs[first["proc"]]["role"], "unlinked_via": first.get("via"),
             "unlinked_at": first.get("site") or first.get("caller"), "before_s": min(gaps), "attacher": cause},
            severity=severity))
    return out


@emits(Code("shm-leaked-at-exit", (WARNING,),
            "a resource tracker warned at its shutdown of leaked shared_memory objects and unlinked them: segments "
            "still registered with it when every process that shared it had ended"))
def leaked_at_exit(run, procs, saves):
    j = journal(run)
    out = []
    for said in j.outputs:
        found = _LEAKED.search(said.get("message") or "") if said.get("via") == "warning" else None
        if found is None or found.group(2) != SHM:
            continue
        row = said["proc"]
        pipe = j.pipes.get(row)
        cleaned = [u for u in j.unlinks if u["proc"] == row and u.get("via") == "tracker" and u.get("rtype") == SHM]
        segments = [_leaked(j, procs, u, pipe) for u in sorted(cleaned, key=lambda u: u["name"])]
        gone = sum(s["outcome"] == MISSING for s in segments)
        cause = next(filter(None, (_cause(j, procs, u) for u in cleaned)), None)
        creators = [c for c in (j.created.get(key(u)) for u in cleaned) if c is not None]
        alike = defaultdict(list)  # what is said of a segment -> the segments it is said of
        for segment in segments:
            alike[_leaked_text(segment)].append(segment["name"])
        listed = "; ".join(f"{_names(names)} ({said})" for said, names in alike.items())
        out.append(diagnosis(
            "shm-leaked-at-exit", procs[row],
            f"{_tracker_of(j, procs, procs[row]['host'], pipe)} warned at its shutdown of {found.group(1)} leaked "
            f"shared_memory object(s) and unlinked them" + (f" ({gone} gone already)" if gone else "")
            + (f": {listed}" if segments else ""),
            {"count": int(found.group(1)), "warning": said["message"], "segments": segments, "attacher": cause,
             "creator_site": creators[0].get("site") if creators else None}))
    return out


def _leaked(j: Journal, procs, cleaned: dict, pipe) -> dict:
    """A segment a tracker unlinked at its shutdown: its creator, who had it
    registered there (and how they had opened it), whose unlink() had found
    it gone (so never unregistered it) and the tracker's own outcome."""
    creator = j.created.get(key(cleaned))
    holders = sorted({(c["proc"], c.get("opened")) for c in j.calls_of[key(cleaned)]
                      if c.get("op") == "register" and c.get("tracker") == pipe}, key=lambda x: x[0])
    failed = sorted({procs[u["proc"]]["pid"] for u in j.unlinks_of[key(cleaned)]
                     if u.get("outcome") == MISSING and u.get("via") != "tracker" and u["t_ns"] < cleaned["t_ns"]})
    return {"name": cleaned["name"], "outcome": cleaned.get("outcome"),
            "creator_pid": _pid(procs, creator["proc"] if creator else None),
            "registered_by": [{"pid": procs[r]["pid"], "opened": o} for r, o in holders], "unlink_failed_by": failed}


def _leaked_text(segment: dict) -> str:
    """What is said of a leaked segment but its name."""
    creator = segment["creator_pid"]
    parts = [f"created by {'pid %d' % creator if creator else 'a process not recorded'}"]
    parts += [f"registered here by pid {h['pid']}" + (", which only attached it" if h["opened"] == "attach" else "")
              for h in segment["registered_by"] if h["pid"] != creator]
    parts += [f"pid {pid}'s unlink() had found it gone, leaving it registered" for pid in segment["unlink_failed_by"]]
    return "; ".join(parts)


@emits(Code("tracker-unregister-unknown", (WARNING,),
            "a resource tracker could not apply an UNREGISTER (it printed a KeyError): another process that shares "
            "it had unregistered the name first, as a child that unregisters what it only attached does"))
def unregister_unknown(run, procs, saves):
    j = journal(run)
    groups = defaultdict(list)  # (tracker row, the failing sender, the first unregisterer) -> names
    for said in j.outputs:
        if said.get("via") != "excepthook" or said.get("category") != "KeyError" or not said.get("name"):
            continue
        pipe = j.pipes.get(said["proc"])
        sent = [c for c in j.calls_of[key(said)]
                if c.get("op") == "unregister" and c.get("tracker") == pipe and c["t_ns"] <= said["t_ns"]]
        if len(sent) < 2:
            continue  # not both unregisters recorded: nothing to say who removed it
        groups[(said["proc"], sent[-1]["proc"], sent[0]["proc"])].append((said["name"], sent[0], sent[-1]))
    out = []
    for (row, late, early), found in groups.items():
        names = sorted({name for name, _, _ in found})
        _, first, _ = found[0]
        attached = any(c.get("op") == "register" and c.get("opened") == "attach" and c["proc"] == early
                       for c in j.calls_of[key(first)])
        out.append(diagnosis(
            "tracker-unregister-unknown", procs[early],
            f"{_tracker_of(j, procs, procs[row]['host'], j.pipes.get(row))} could not apply {who(procs, late)}'s "
            f"UNREGISTER of {len(names)} name(s) ({_names(names)}; it printed a KeyError each): "
            f"{who(procs, early)}" + (", which only attached them," if attached else "") +
            f" had unregistered them first (at {first.get('site') or first.get('caller')}); processes "
            f"multiprocessing starts from one parent share its tracker, which holds each name once",
            {"names": names, "rtype": first.get("rtype"), "tracker_pid": procs[row]["pid"],
             "unregistered_first_by_pid": procs[early]["pid"], "attached": attached,
             "attacher": attacher(procs, first)}))
    return out
