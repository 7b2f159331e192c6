"""The Python processes of a run the probe was not in, and why: the sampler
saw them (sampled.jsonl's "seen" and "exec" records name a Python
interpreter's executable, and say whether the PYTHONPATH it started with
held record's probe directory), but none journaled.

Why, in this order: its command line's options (-I and -E make Python
ignore PYTHONPATH, -S skips sitecustomize: the probe's way in); a
PYTHONPATH without the probe's directory (CMD, or a launcher that does not
pass the environment on, set its own); else not known."""

from __future__ import annotations

from writerprof.analysis.samples import CREATED_SLACK_NS

OPTIONS, PYTHONPATH, UNKNOWN = "options", "pythonpath", "unknown"
_KEEPING_OUT = "IES"  # the interpreter's options that keep the probe out
_WITH_VALUE = "WX"  # options whose value may be the next argument
_LAST = "cm"  # -c and -m: the rest is the program's
AGENT_MODULE = "writerprof.record.agent"  # (probes/writerprof_probe/agent.py runs it so)


def not_probed(run) -> list[dict]:
    """One entry per reason: {"why": OPTIONS, PYTHONPATH or UNKNOWN,
    "options": "-I -S" (OPTIONS only), "processes": how many, "host", "pid"
    and "cmdline" of the first}."""
    programs = _programs(run.sampled)
    starts: dict = {}  # (host, pid) -> the created_ns of each process seen with it, in order
    for host, pid, created in sorted(programs):
        starts.setdefault((host, pid), []).append(created)
    journaled: dict = {}
    for host, pid, created in zip(run.processes["host"].tolist(), run.processes["pid"].tolist(),
                                  run.processes["created_ns"].tolist()):
        journaled.setdefault((host, pid), []).append(created)
    entries: dict = {}
    for (host, pid, created), program in programs.items():
        if "pythonpath_has_probe" not in program or _journaled(journaled, starts, host, pid, created):
            continue
        ppid = program.get("ppid")
        parent = _running(starts, host, ppid, created)
        if (not program["exec"] and parent is not None and programs[host, ppid, parent]["cmdline"] == program["cmdline"]
                and _journaled(journaled, starts, host, ppid, parent)):
            continue  # a probed process's fork on its way to exec another program
        if program["cmdline"][1:3] == ["-m", AGENT_MODULE]:
            continue  # a host's sampler agent: writerprof's own, kept out of the probe on purpose
        options = keeping_out(program["cmdline"])
        why = OPTIONS if options else PYTHONPATH if program["pythonpath_has_probe"] is False else UNKNOWN
        entry = entries.setdefault((why, options), {"why": why, **({"options": options} if options else {}),
                                                    "processes": 0, "host": host, "pid": pid,
                                                    "cmdline": program["cmdline"]})
        entry["processes"] += 1
    return list(entries.values())


def keeping_out(argv: list[str]) -> str:
    """Of a Python command line's options (before its script, -c or -m),
    those among -I, -E and -S, as "-I -S"."""
    found: list[str] = []
    args = iter(argv[1:])
    for arg in args:
        if arg in ("-", "--") or not arg.startswith("-"):
            break
        if arg.startswith("--"):  # --check-hash-based-pycs MODE, --help, --version
            if arg == "--check-hash-based-pycs":
                next(args, None)
            continue
        letters = arg[1:]
        for i, letter in enumerate(letters):
            if letter in _KEEPING_OUT and letter not in found:
                found.append(letter)
            if letter in _LAST:
                return _joined(found)
            if letter in _WITH_VALUE:
                if i == len(letters) - 1:
                    next(args, None)
                break
    return _joined(found)


def _joined(letters: list[str]) -> str:
    return " ".join(f"-{letter}" for letter in sorted(letters, key=_KEEPING_OUT.index))


def _programs(sampled: list[dict]) -> dict:
    """(host, pid, created_ns) -> what that process ran last: its cmdline,
    exe, pythonpath_has_probe where the sampler read it (a Python's), ppid,
    created_ns, and whether it was seen to exec."""
    programs: dict = {}
    latest: dict = {}  # (host, pid) -> the key of its latest "seen"
    for record in sampled:
        kind, place = record.get("kind"), (record.get("host"), record.get("pid"))
        if kind == "seen":
            key = latest[place] = (*place, record.get("created_ns") or 0)
            programs[key] = {**_program(record), "ppid": record.get("ppid"), "created_ns": key[2], "exec": False}
        elif kind == "exec" and place in latest:
            programs[latest[place]].update(_program(record), exec=True)
            if "pythonpath_has_probe" not in record:
                programs[latest[place]].pop("pythonpath_has_probe", None)
    return programs


def _program(record: dict) -> dict:
    program = {"cmdline": list(record.get("cmdline") or []), "exe": record.get("exe")}
    if "pythonpath_has_probe" in record:
        program["pythonpath_has_probe"] = record["pythonpath_has_probe"]
    return program


def _journaled(journaled: dict, starts: dict, host, pid, created_ns: int) -> bool:
    """Whether the process started at created_ns journaled: a journal of its
    pid opened since, before the pid's next process started."""
    later = [c for c in starts.get((host, pid), ()) if c > created_ns]
    until = later[0] - CREATED_SLACK_NS if later else None
    return any(created_ns - CREATED_SLACK_NS <= j and (until is None or j < until)
               for j in journaled.get((host, pid), ()))


def _running(starts: dict, host, pid, created_ns: int) -> int | None:
    """The created_ns of the process pid that was running when a child started at created_ns."""
    before = [c for c in starts.get((host, pid), ()) if c <= created_ns]
    return before[-1] if before else None
