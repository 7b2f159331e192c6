"""What to do about a warning's cause, in the target's own terms: a list of
actions, each with what to change, where, and the seconds per save it
recovers: estimated from the run (the cause's critical-path cost, or the
share of it the action removes), or measured by a contrast what-if that ran
the action itself (with its interval); None where neither says. The
likeliest action comes first. Each fix is listed once (by its id); a fix the
run already applies is not advised; an import worth under MINOR_SHARE of the
re-run is not named, nor, against a measured difference, an estimate under
that share of it; and no recovery exceeds a measured difference (capped, the
estimate kept beside it).

The target is recognised from the run: the benchmark by its modules (the
writers' target, the __main__ they re-ran, its stacks), writerprof's own
reproducer by its main module, which then stands in for the benchmark's entry
script.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from writerprof.analysis import forkthreads, preload
from writerprof.analysis.ranks import LOCAL_SIZE_VARS

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes import Fix

# The benchmark's modules, as they appear in a run's targets and stacks.
BENCHMARK_MODULES = ("mlpstorage_py", "mlpstorage")
# The benchmark's checkpoint code reads its writers' start method from here.
BENCHMARK_START_METHOD_ENV = "MLPS_CHECKPOINT_MP_START_METHOD"
REPRO_MAIN = "writerprof/repro/main.py"
STANDS_IN = "the built-in reproducer's main module, standing in for the benchmark's entry script"
# An import worth under this share of the re-run (an estimate under this share
# of a measured difference) is not advised: moving it wins nothing that shows.
MINOR_SHARE = 0.05
ESTIMATED, MEASURED = "estimated", "measured"  # a recovery's basis (Fix.recovery)
PRELOAD_ID, GUARD_ID = "forkserver-preload", "guard-imports"
_MAIN_MODULES = ("__main__", "__mp_main__")


@dataclass
class Target:
    """What the run shows of the profiled program."""

    main: str | None = None  # the __main__ the writers re-ran
    benchmark: bool = False
    threads_at_fork: bool = False  # a fork-with-threads warning: a fork child inherits locked locks
    # The native threads live as the writers were started (forkthreads): name -> count; None: not recorded.
    native_threads: Counter | None = None
    imports: list[tuple[str, float, int | None]] = field(default_factory=list)  # module, share of re-run, line
    python: str | None = None  # the Python of the run's processes (their identity lines)
    start_methods: frozenset = frozenset()  # the writers' start methods
    forkserver: preload.Forkserver | None = None  # the run's forkserver daemon, as its command line says
    in_main: str | None = None  # the writers' target, where it is defined in __main__
    children: str = "writers"  # what the started processes are called (a program's pool: "children")
    program: str = "the benchmark"  # what the fix calls the program it changes

    @property
    def child(self) -> str:
        return "child" if self.children == "children" else self.children[:-1]

    @property
    def childrens(self) -> str:
        """The possessive: the writers', the children's."""
        return self.children + ("'" if self.children.endswith("s") else "'s")

    @property
    def repro(self) -> bool:
        return bool(self.main) and self.main.endswith(REPRO_MAIN)


def main_name(main: str | None) -> str:
    """The entry script as a sentence names it."""
    if not main:
        return "the entry script"
    if main.endswith(REPRO_MAIN):
        return f"{REPRO_MAIN} ({STANDS_IN})"
    return main


def target_of(summary_saves: list[dict], diagnoses: list[dict], main: str | None,
              modules: list[str] = ()) -> Target:
    """modules: other module names the run shows (its stacks' files)."""
    names = [s.get("target") or "" for s in summary_saves] + [main or ""] + list(modules)
    benchmark = any(part in BENCHMARK_MODULES for n in names for part in n.replace("/", ".").split("."))
    threads = any(d["code"] == "fork-with-threads" and d["severity"] == "warning" for d in diagnoses)
    in_main = sorted({t for t in (s.get("target") or "" for s in summary_saves) if t.split(".")[0] in _MAIN_MODULES})
    return Target(main=main, benchmark=benchmark, threads_at_fork=threads, in_main=in_main[0] if in_main else None,
                  start_methods=frozenset(s["start_method"] for s in summary_saves if s.get("start_method")))


def for_diagnosis(d: dict, target: Target, saves: int) -> list[Fix] | None:
    """The actions for one warning (None: its code has no fix here).
    saves: the saves its cost_s is summed over."""
    make = _FIXES.get(d["code"])
    if not make or d["severity"] != "warning":
        return None
    method = d["evidence"].get("start_method")
    return [action for action in map(completed, make(d, target, saves)) if not applied(action, target, method)]


def completed(action: dict) -> Fix:
    """An action with every field of a Fix: a figure from the run is an estimate."""
    return {"modules": [], **action, "recovery": ESTIMATED if action["recovery_s"] is not None else None,
            "recovery_ci95_s": None, "measured_by": None, "capped_from_s": None}


# The start method an action switches the writers to, by its id.
_SWITCHES_TO = {"fork": "fork", "forkserver": "forkserver"}


def applied(action: Fix, target: Target, method: str | None = None) -> bool:
    """Whether the run already does what the action says: its writers all
    start with the method it switches to, or the warning's own writers do
    (method: its evidence's start method); a preload list the run already
    has is not advised by _preload."""
    switches_to = _SWITCHES_TO.get(action["id"])
    return switches_to is not None and (target.start_methods == {switches_to} or switches_to == method)


def _per_save(d: dict, saves: int) -> float | None:
    return d["cost_s"] / saves if d.get("cost_s") is not None and saves else None


def _start_method_where(target: Target, method: str) -> str:
    if target.benchmark:
        return f"{BENCHMARK_START_METHOD_ENV}={method} in the benchmark's environment (its checkpoint code reads it)"
    if target.repro:
        return f"writerprof repro --start-method {method}"
    return f"the {target.childrens} start method: multiprocessing.get_context({method!r}) where they are started"


def with_fork_hazard(fix: list[dict]) -> list[dict]:
    """The fix with its fork action saying the hazard (the other side of a
    comparison showed live threads at fork)."""
    return [{**a, "what": fork_action(Target(threads_at_fork=True))["what"]} if a["id"] == "fork" else a
            for a in fix]


def fork_action(target: Target) -> Fix:
    return {"id": "fork",
            "what": f"start the {target.children} with fork: no re-run of __main__, and each keeps its "
                    f"parent's CPUs" + _fork_hazard(target),
            "where": _start_method_where(target, "fork"), "recovery_s": None}


def _fork_hazard(target: Target) -> str:
    """What the recording says of fork's deadlock hazard: the threads live as the writers were started,
    native ones included (a lock one of them holds at the fork stays locked in the child)."""
    native = target.native_threads
    if target.threads_at_fork:
        also = f", and native ones ({forkthreads.describe(native)})" if native else ""
        return (f"; but this recording shows live threads at fork (fork-with-threads{also}): fork carries the "
                f"deadlock hazard of a lock held by another thread")
    if native:
        return (f"; but native threads, which no Python Thread runs, were live as the {target.children} were started "
                f"({forkthreads.describe(native)}): a lock one of them holds at the fork stays locked "
                f"in the child, fork's deadlock hazard (OpenBLAS stops its pool before a fork, a Tokio runtime "
                f"does not); fork is safe only where none is live at the fork itself")
    if native is None:
        return (" where it is safe: only where no other thread, native ones included, is live at the fork "
                "(this recording does not list them)")
    return (f" where it is safe: no other thread, native ones included, was live as the {target.children} were started "
            "(the kernel's list of their parent's threads); fork is safe only while none is")


def _main_reimport(d: dict, target: Target, saves: int) -> list[Fix]:
    recovery = _per_save(d, saves)  # all of the re-run's critical-path seconds
    script = main_name(target.main or d["evidence"].get("main"))
    per_writer = d["evidence"].get("per_writer_s") or 0.0
    # The imports worth moving, each in seconds per writer: its share of the re-run's time.
    costly = [(m, share * per_writer, line) for m, share, line in target.imports if share >= MINOR_SHARE]
    share = min(1.0, sum(share for _, share, _ in target.imports if share >= MINOR_SHARE)) if costly else None
    of_imports = recovery * share if recovery is not None and share is not None else None  # their part of it
    python = d["evidence"].get("python") or target.python
    return ([_guard(script, costly, of_imports, target), _as_module(target, recovery)]
            + _preload(d["evidence"].get("start_method"), script, python, costly, recovery, of_imports, target)
            + [fork_action(target)])


def _guard(script: str, costly: list, recovery: float | None, target: Target) -> dict:
    if not costly:
        return {"id": GUARD_ID, "what": "keep the script's heavy module-level imports and work under "
                                        f"`if __name__ == \"__main__\":`: the {target.children} re-run its top level",
                "where": script, "recovery_s": None}
    names = ", ".join(f"{m} {s:.2f} s" for m, s, _ in costly)
    lines = ", ".join(f"line {line}" for line in sorted({line for _, _, line in costly if line}))
    return {"id": GUARD_ID, "modules": [m for m, _, _ in costly], "recovery_s": recovery,
            "what": f"keep the heavy module-level imports ({names} of the re-run, per {target.child}) under "
                    f"`if __name__ == \"__main__\":` or inside the functions that use them: the {target.children} "
                    f"re-run the script's top level",
            "where": script + (f" ({lines})" if lines else "")}


def _as_module(target: Target, recovery: float | None) -> dict:
    what = (f"start {target.program} as a module (`python -m PACKAGE`, its entry in PACKAGE/__main__.py): "
            "multiprocessing does not re-run a package's __main__ in the children")
    if target.in_main:
        what += (f"; the {target.childrens} target ({target.in_main}) must then live in a module of its own, as the "
                 f"children no longer have __main__'s names")
    return {"id": "python-m", "what": what, "recovery_s": recovery,
            "where": f"{target.program}'s launch command" if not target.repro else "the command that starts it"}


def _preload(method: str | None, script: str, python: str | None, costly: list, recovery: float | None,
             of_imports: float | None, target: Target) -> list[dict]:
    """set_forkserver_preload as this Python treats it: '__main__' where the
    interpreter honours it (the forkserver runs the script once), else the
    modules the re-run imports (the writers still re-run the script, finding
    them imported); the run's own list kept; nothing where the run's list
    already holds it all."""
    start = ("keep forkserver and preload" if method == "forkserver"
             else f"start the {target.children} with forkserver and preload")
    child = target.child
    own = list(target.forkserver.preload) if target.forkserver is not None else []
    on = f"Python {python}" if python else "this Python"
    honoured = preload.honours_main(python, target.forkserver)
    if honoured:
        modules = own + ["__main__"] * ("__main__" not in own)
        return [] if modules == own else [{
            "id": PRELOAD_ID, "modules": modules, "where": script, "recovery_s": recovery,
            "what": f"{start} the script: multiprocessing.set_forkserver_preload({modules!r}) before the first "
                    f"{child} starts; the forkserver runs it once and its children inherit it ({on} honours "
                    f"'__main__' there)"}]
    wanted = [m for m, _, _ in costly]
    modules = [m for m in own if m not in _MAIN_MODULES] + [m for m in wanted if m not in own]
    unloaded = [m for m in wanted if m in own]  # in the list, yet imported by every writer
    if not wanted or (set(modules) <= set(own) and not unloaded):
        return []
    what = (f"{start} the modules the re-run imports: multiprocessing.set_forkserver_preload({modules!r}) before "
            f"the first {child} starts; the forkserver imports them once and each {child}, which still re-runs the "
            f"script, finds them imported. Not '__main__': {on} "
            f"{'ignores' if honoured is False else 'may ignore'} it there ({preload.ISSUE}; honoured from CPython "
            f"{preload.FIXED_IN})")
    if unloaded:
        what += (f". {', '.join(unloaded)}: in this run's list already, yet the {target.children} imported it: the "
                 f"forkserver could not (it skips what fails; before CPython 3.12.8 and 3.13.1 it lacks the "
                 f"parent's sys.path, gh-117378: put the module's directory on PYTHONPATH)")
    return [{"id": PRELOAD_ID, "modules": modules, "where": script, "recovery_s": of_imports, "what": what}]


def _writer_startup(d: dict, target: Target, saves: int) -> list[Fix]:
    method = d["evidence"].get("start_method")
    actions = []
    if method == "spawn":
        actions.append({"id": "forkserver",
                        "what": "start the writers with forkserver (with set_forkserver_preload of the "
                                "target's module): a fresh interpreter per writer is what spawn costs",
                        "where": _start_method_where(target, "forkserver"), "recovery_s": None})
    actions.append(fork_action(target))  # (not to writers started with fork: applied)
    actions.append({"id": "writer-per-rank",
                    "what": "start one writer per rank and keep it for every save, each save's buffers named "
                            "to it through its queue: its start-up is then paid once a run, not once a save",
                    "where": "the code that starts a writer per save", "recovery_s": None})
    return actions


def _binding(node: int | None) -> list[Fix]:
    n = "N" if node is None else str(node)
    return [
        {"id": "bind-node",
         "what": f"bind each rank's CPUs and memory to one node, so the writer, its buffers' first touch and "
                 f"its copies share it: numactl --cpunodebind={n} --membind={n}",
         "where": "the rank's launch command (numactl --cpunodebind=N --membind=N CMD)", "recovery_s": None},
        {"id": "launcher-bind",
         "what": "let the MPI launcher bind each rank to a node", "where":
            "mpirun --bind-to numa (Open MPI), srun --cpu-bind=ldoms --mem-bind=local (Slurm)", "recovery_s": None},
    ]


def _numa_mismatch(d: dict, target: Target, saves: int) -> list[Fix]:
    actions = _binding(d["evidence"].get("buffer_node"))
    actions[0]["recovery_s"] = _per_save(d, saves)
    return actions


def _affinity_divergence(d: dict, target: Target, saves: int) -> list[Fix]:
    cpus = d["evidence"].get("producer_cpus") or []
    return [{"id": "pin-writer",
             "what": "give each writer its producer's CPUs (forkserver children inherit the daemon's, frozen "
                     "when it started): os.sched_setaffinity(0, the producer's CPUs) at the writer's start, or "
                     "start the forkserver after the rank is bound",
             "where": "the writer's target" + (f" (producer CPUs {_cpu_list(cpus)})" if cpus else ""),
             "recovery_s": _per_save(d, saves)},
            fork_action(target)] + _binding(None)


def _writer_migration(d: dict, target: Target, saves: int) -> list[Fix]:
    return _binding(None)


def _generation_undersized(d: dict, target: Target, saves: int) -> list[Fix]:
    e = d["evidence"]
    cpus, size = len(e["cpus"]), e["pool_size"]
    rule = (f"len(os.sched_getaffinity(0)), the CPUs the rank is bound to (here {size})" if e["bound"] else
            f"len(os.sched_getaffinity(0)) // local_size, the ranks on the host sharing its CPUs (here {cpus} // "
            f"{e['local_ranks']} = {size}), with local_size from the launcher: {', '.join(LOCAL_SIZE_VARS)}")
    where = (f"writerprof repro --gen-threads {size}" if target.repro else
             "the benchmark's data generator (dgen-py's max_threads), where it divides by the rank count"
             if target.benchmark else "the line that sets the generator pool's size")
    return [{"id": "size-generator-pool",
             "what": f"size the generator's pool from the CPUs of this rank, not from the job's rank count: "
                     f"threads = {rule}",
             "where": where, "recovery_s": _per_save(d, saves)}]


def _fork_with_threads(d: dict, target: Target, saves: int) -> list[Fix]:
    threads = ", ".join(d["evidence"].get("threads") or []) or "the other threads"
    return [{"id": "forkserver-or-spawn",
             "what": f"start the writers with forkserver (set_forkserver_preload to keep their start-up short) "
                     f"or spawn: the child then holds none of the locks {threads} held",
             "where": _start_method_where(target, "forkserver"), "recovery_s": None},
            {"id": "threads-after-fork",
             "what": f"start {threads} after the writers are forked, or stop them before",
             "where": "the code that starts them", "recovery_s": None}]


def _attach_untracked(attacher: dict) -> list[Fix]:
    """Keep a segment a process only attached out of its own resource tracker
    (analysis.diagnoses.tracker): track=False where its Python has it (3.13+);
    before, unregister it at once (right there: the tracker is the process's
    own, not shared with the creator) or keep the attach from registering."""
    where = f"where pid {attacher['pid']} attaches the segment by name ({attacher['site']})"
    track = {"id": "shm-track-false",
             "what": "attach with SharedMemory(name=NAME, track=False): no tracker of the attaching process holds the "
                     "segment, and its creator's unlink() stays the only one",
             "where": where, "recovery_s": None}
    if (preload.version(attacher.get("python")) or (0,)) >= (3, 13):
        return [track]
    return [{"id": "shm-unregister-attached",
             "what": "unregister the segment from the attaching process's tracker right after attaching: "
                     "resource_tracker.unregister(shm._name, \"shared_memory\") (right here, where that tracker is the "
                     "process's own; in a child that shares its parent's tracker it would remove the parent's entry)",
             "where": where, "recovery_s": None},
            {"id": "shm-skip-register",
             "what": "keep the attach from registering: resource_tracker.register a no-op for \"shared_memory\" while "
                     "SharedMemory(name=NAME) runs, as mlcommons/storage#780 does (Python 3.13+: track=False)",
             "where": where, "recovery_s": None}]


def _unlink_once(d: dict, target: Target, saves: int) -> list[Fix]:
    """A segment unlinked twice: a tracker's clean-up of an attach's registration, or two processes' unlink()."""
    attacher = d["evidence"].get("attacher")
    if attacher:
        return _attach_untracked(attacher)
    return [{"id": "shm-unlink-once",
             "what": "unlink each segment once, in the process that created it, after every user has closed it; the "
                     "others only close() it",
             "where": f"the unlink() at {d['evidence'].get('site')} and the one at "
                      f"{d['evidence'].get('unlinked_at')}", "recovery_s": None}]


def _leaked_at_exit(d: dict, target: Target, saves: int) -> list[Fix]:
    attacher = d["evidence"].get("attacher")
    if attacher:
        return _attach_untracked(attacher)
    return [{"id": "shm-unlink-created",
             "what": "unlink each segment in the process that created it once it is done with it (close(), then "
                     "unlink() in a finally): the tracker's clean-up is for a process that died",
             "where": "the code that creates them "
                      f"({d['evidence'].get('creator_site') or 'SharedMemory(create=True)'})",
             "recovery_s": None}]


def _unregister_unknown(d: dict, target: Target, saves: int) -> list[Fix]:
    who = d["evidence"]["attacher"]
    return [{"id": "no-shared-unregister",
             "what": f"drop the unregister in pid {who['pid']}: it shares the names' creator's tracker, which holds a "
                     f"name once (an attach's registration there changes nothing) and loses the creator's entry to "
                     f"it; on Python 3.13+ SharedMemory(name=NAME, track=False) keeps an attach from registering "
                     f"at all",
             "where": f"pid {who['pid']}'s unregister ({who['site']})", "recovery_s": None}]


_FIXES = {"main-reimport": _main_reimport, "writer-startup": _writer_startup, "numa-mismatch": _numa_mismatch,
          "affinity-divergence": _affinity_divergence, "writer-migration": _writer_migration,
          "fork-with-threads": _fork_with_threads, "generation-undersized": _generation_undersized,
          "shm-attach-registered": lambda d, target, saves: _attach_untracked(d["evidence"]["attacher"]),
          "shm-double-unlink": _unlink_once, "shm-leaked-at-exit": _leaked_at_exit,
          "tracker-unregister-unknown": _unregister_unknown}
# The comparison components each warning's fix acts on: a fix is shown in a
# verdict when one of them is a significant cause.
ACTS_ON = {"main-reimport": ("startup:main_rerun",),
           "writer-startup": ("startup:start", "startup:interpreter", "startup:main_rerun", "startup:unpickle",
                              "startup:bootstrap", "startup:target_setup"),
           "numa-mismatch": ("write", "generation"), "affinity-divergence": ("write", "generation"),
           "writer-migration": ("write",), "generation-undersized": ("generation",)}


# The contrast method that measures an action, by its id: a what-if that runs
# the action itself, or the reference; "+local" stands for any what-if ending so.
MEASURED_BY = {PRELOAD_ID: "forkserver+preload", GUARD_ID: "forkserver+guard", "pin-writer": "forkserver+pin",
               "bind-node": "+local", "fork": "fork"}


def measured(fix: list[dict], recovered: dict[str, dict]) -> list[dict]:
    """The actions with the recovery a contrast measured. recovered: method
    (a what-if, or the reference) -> {"recovered_s": seconds per save it won
    back of plain forkserver's loss, "ci95_s": its interval, "modules": the
    modules a what-if ran with, None where it takes none}. An action whose
    modules are not the ones the what-if ran keeps its estimate."""
    out = []
    for action in fix:
        action = dict(action)
        method = MEASURED_BY.get(action["id"])
        found = [(m, r) for m, r in recovered.items()
                 if method and (m == method or (method[0] == "+" and m.endswith(method)))]
        if found and found[0][1]["recovered_s"] is not None:
            by, r = found[0]
            if r.get("modules") is None or list(r["modules"]) == action["modules"]:
                action.update(recovery_s=r["recovered_s"], recovery=MEASURED, recovery_ci95_s=r.get("ci95_s"),
                              measured_by=by, capped_from_s=None)
        out.append(action)
    return out


def for_difference(fix: list[dict], difference: float) -> list[dict]:
    """The fix of a measured difference (seconds per save): no estimate under
    MINOR_SHARE of it, and no recovery above it (capped, the figure before in
    capped_from_s)."""
    size = abs(difference)
    out = []
    for action in fix:
        recovery = action["recovery_s"]
        if recovery is not None and action["recovery"] == ESTIMATED and recovery < MINOR_SHARE * size:
            continue
        if recovery is not None and recovery > size:
            action = {**action, "recovery_s": size, "capped_from_s": recovery}
        out.append(action)
    return out


def recovery_text(action: dict) -> str:
    """What a fix's action recovers, and how that is known: "" where nothing says."""
    value = action.get("recovery_s")
    if value is None:
        return ""
    measured = action.get("recovery") == MEASURED
    how = f"measured by {action.get('measured_by')}" if measured else ESTIMATED
    if action.get("capped_from_s") is not None:
        how += f" at {_short_s(action['capped_from_s'])} s, capped at the measured difference"
    ci = action.get("recovery_ci95_s")
    if measured and ci:
        how += f"; 95% interval {_short_s(ci[0])} to {_short_s(ci[1])} s"
        if not told_from_none(ci):
            return f"may recover {_short_s(value)} s per save, not told apart from none ({how})"
    return f"recovers {_short_s(value)} s per save ({how})"


def told_from_none(ci95: tuple[float, float] | None) -> bool:
    """Whether a measured recovery is told apart from none: not where its
    95% interval reaches zero, as its median alone is then no claim."""
    return not ci95 or ci95[0] > 0


def _short_s(value: float) -> str:
    return f"{value:.2f}" if abs(value) >= 0.01 else f"{value:.3f}"


def headline(action: dict) -> str:
    """What an action does, without why: its text up to the first ': ' or
    '; ' outside brackets and code (an action's "what" says what to do, then
    why, then any caveat)."""
    what, depth, code = action["what"], 0, False
    for i, ch in enumerate(what):
        if ch == "`":
            code = not code
        elif not code and ch in "([":
            depth += 1
        elif not code and ch in ")]":
            depth -= 1
        elif not code and depth == 0 and what[i:i + 2] in (": ", "; "):
            return what[:i]
    return what


def imports_of(stacks, main: str | None, procs: set[int] | None = None) -> list[tuple[str, float, int | None]]:
    """The module-level imports the writers spent their re-run of __main__ in,
    from their stacks: (module, its share of the re-run's samples, the
    script's line), costliest first. Shares, not seconds: the writers after a
    parent's first few are sampled at a lower rate. A module is named as deep
    as the script's line imported it, its packages' time counted in
    (scipy.linalg, where the line imported scipy.linalg and so scipy): the
    name a preload must give. stacks: writerprof.run.stacks.ProcessStacks;
    procs: the rows of the children to read (default: the writers)."""
    from writerprof.run import roles as run_roles
    from writerprof.run.stacks import frame_parts

    counts: dict[tuple[int | None, str], int] = defaultdict(int)  # (line, module)
    rerun = 0
    for proc in stacks:
        if (proc.proc not in procs) if procs is not None else proc.role != run_roles.WRITER:
            continue
        for frames, count in proc.samples.items():
            found = _import_in_main(frames, frame_parts)
            if found is None:
                continue
            rerun += count
            if found[1]:
                counts[found] += count
    if not rerun:
        return []
    total: dict[str, int] = defaultdict(int)
    line_of: dict[str, int | None] = {}
    for line in {line for line, _ in counts}:
        names = {m for at, m in counts if at == line}
        deepest = sorted(n for n in names if not any(m.startswith(n + ".") for m in names))
        for module in names:
            named = next(n for n in deepest if n == module or n.startswith(module + "."))
            total[named] += counts[(line, module)]
            line_of.setdefault(named, line)
    return sorted(((m, n / rerun, line_of[m]) for m, n in total.items()), key=lambda x: (-x[1], x[0]))


def _import_in_main(frames, frame_parts) -> tuple[int | None, str | None] | None:
    """A stack in the re-run of the script (under spawn's prepare, in its
    <module> frame): the script's line and the module it was importing there
    (the next <module> frame's; None: not importing); None for any other stack."""
    at = next((i for i, f in enumerate(frames) if f.startswith("prepare (multiprocessing/spawn.py:")), None)
    if at is None:
        return None
    mains = [i for i in range(at + 1, len(frames)) if frame_parts(frames[i])[0] == "<module>"]
    if not mains:
        return None
    module = module_of(frame_parts(frames[mains[1]])[1] or "") if len(mains) > 1 else None
    return frame_parts(frames[mains[0]])[2], module


def module_of(file: str) -> str | None:
    """A frame's file, as the stacks shorten it by its sys.path entry, as a
    module's dotted name (scipy/linalg/__init__.py: scipy.linalg); None for
    a file that names none (<frozen ...>, an absolute path)."""
    if file.startswith(("<", "/")) or not file.endswith(".py"):
        return None
    parts = file[:-3].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def _cpu_list(cpus) -> str:
    from writerprof.units import format_cpu_list

    return format_cpu_list(cpus)


def attach(run, diagnoses: list[dict], saves: list[dict]) -> None:
    """Give each warning with a fix its `fix` (in place)."""
    wanted = [d for d in diagnoses if d["code"] in _FIXES and d["severity"] == "warning"]
    if not wanted:
        return
    main = next((d["evidence"].get("main") for d in diagnoses if d["code"] == "main-reimport"), None)
    stacks = stacks_of(run) if main else []
    modules = sorted({(frame_file or "").split("/", 1)[0] for proc in stacks for frames in proc.samples
                      for frame_file in _files(frames)})
    target = target_of(saves, diagnoses, main, modules)
    target.imports = imports_of(stacks, main)
    pythons = sorted({e["data"].get("python") for e in run.events_of("process")} - {None})
    target.python = pythons[0] if pythons else None
    target.forkserver = preload.recorded(run)
    target.native_threads = forkthreads.at_writer_starts(run)
    for d in wanted:
        d["fix"] = for_diagnosis(d, target, _saves_of(d, saves))
    # A start-up that re-runs __main__: the re-run's fix comes first, with the re-run's recovery.
    rerun = {(d["host"], d["pid"]): d["fix"] for d in wanted if d["code"] == "main-reimport"}
    for d in wanted:
        if d["code"] == "writer-startup" and (d["host"], d["pid"]) in rerun:
            first = rerun[(d["host"], d["pid"])]
            d["fix"] = first + [f for f in d["fix"] if f["id"] not in {x["id"] for x in first}]


def _saves_of(d: dict, saves: list[dict]) -> int:
    """The saves a warning's cost is summed over: its evidence's count, else its process's saves."""
    counted = d["evidence"].get("writers") or d["evidence"].get("saves")
    if isinstance(counted, int) and counted > 0:
        return counted
    mine = [s for s in saves if s["host"] == d["host"] and d["pid"] in (s["producer_pid"], s["writer_pid"])]
    return len(mine) or len(saves)


def stacks_of(run) -> list:
    from writerprof.errors import WriterprofError
    from writerprof.run.stacks import load_stacks

    try:
        return load_stacks(run)
    except (WriterprofError, OSError, ValueError):  # no stacks, or unreadable: the fixes go without imports
        return []


def _files(frames):
    from writerprof.run.stacks import frame_parts

    return (frame_parts(f)[1] for f in frames)
