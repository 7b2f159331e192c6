"""What to do about a warning's cause, in the target's own terms: a list of
actions, each with what to change, where, and the seconds per save it
recovers where the run (the cause's critical-path cost) or a contrast what-if
measured it (None otherwise). The likeliest action comes first.

The target is recognised from the run: the benchmark by its modules (the
writers' target, the __main__ they re-ran, its stacks), writerprof's own
reproducer by its main module, which then stands in for the benchmark's entry
script.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from writerprof.analysis.shapes import Fix

# The benchmark's modules, as they appear in a run's targets and stacks.
BENCHMARK_MODULES = ("mlpstorage_py", "mlpstorage")
# The benchmark's checkpoint code reads its writers' start method from here.
BENCHMARK_START_METHOD_ENV = "MLPS_CHECKPOINT_MP_START_METHOD"
REPRO_MAIN = "writerprof/repro/main.py"
STANDS_IN = "the built-in reproducer's main module, standing in for the benchmark's entry script"
IMPORTS_SHOWN = 3  # the costliest module-level imports named
IMPORT_FLOOR = 0.05  # an import under this share of the costliest one is not named


@dataclass
class Target:
    """What the run shows of the profiled program."""

    main: str | None = None  # the __main__ the writers re-ran
    benchmark: bool = False
    threads_at_fork: bool = False  # a fork-with-threads warning: a fork child inherits locked locks
    imports: list[tuple[str, float, int | None]] = field(default_factory=list)  # module, s per writer, line

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
    return Target(main=main, benchmark=benchmark, threads_at_fork=threads)


def for_diagnosis(d: dict, target: Target, saves: int) -> list[Fix] | None:
    """The actions for one warning (None: its code has no fix here).
    saves: the saves its cost_s is summed over."""
    make = _FIXES.get(d["code"])
    return make(d, target, saves) if make and d["severity"] == "warning" else None


def _per_save(d: dict, saves: int) -> float | None:
    return d["cost_s"] / saves if d.get("cost_s") is not None and saves else None


def _start_method_where(target: Target, method: str) -> str:
    if target.benchmark:
        return f"{BENCHMARK_START_METHOD_ENV}={method} in the benchmark's environment (its checkpoint code reads it)"
    if target.repro:
        return f"writerprof repro --start-method {method}"
    return f"the writers' start method: multiprocessing.get_context({method!r}) where they are started"


FORK_ACTION = "start the writers with fork"


def with_fork_hazard(fix: list[dict]) -> list[dict]:
    """The fix with its fork action saying the hazard (the other side of a
    comparison showed live threads at fork)."""
    return [{**a, "what": _fork_action(Target(threads_at_fork=True), None)["what"]}
            if a["what"].startswith(FORK_ACTION) else a for a in fix]


def _fork_action(target: Target, recovery: float | None) -> Fix:
    hazard = ("; but this recording shows live threads at fork (fork-with-threads): fork carries the "
              "deadlock hazard of a lock held by another thread" if target.threads_at_fork else
              " where it is safe (this recording shows no other Python thread live at a fork)")
    return {"what": f"{FORK_ACTION}: no re-run of __main__, and each writer keeps its rank's "
                    "CPUs" + hazard,
            "where": _start_method_where(target, "fork"), "recovery_s": recovery}


def _main_reimport(d: dict, target: Target, saves: int) -> list[Fix]:
    recovery = _per_save(d, saves)
    script = main_name(target.main or d["evidence"].get("main"))
    per_writer = d["evidence"].get("per_writer_s") or 0.0
    top = target.imports[0][1] if target.imports else 0.0
    shown = [i for i in target.imports[:IMPORTS_SHOWN] if i[1] >= IMPORT_FLOOR * top]
    actions = []
    if shown:
        names = ", ".join(f"{m} {s:.2f} s" for m, s, _ in shown)
        lines = ", ".join(f"line {line}" for line in sorted({line for _, _, line in shown if line}))
        share = min(1.0, sum(s for _, s, _ in shown) / per_writer) if per_writer else None
        actions.append({
            "what": f"keep the heavy module-level imports ({names} of the re-run, per writer) under "
                    f"`if __name__ == \"__main__\":` or inside the functions that use them: the writers re-run "
                    f"the script's top level",
            "where": script + (f" ({lines})" if lines else ""),
            "recovery_s": recovery * share if recovery is not None and share is not None else None})
    else:
        actions.append({"what": "keep the script's heavy module-level imports and work under "
                                "`if __name__ == \"__main__\":`: the writers re-run its top level",
                        "where": script, "recovery_s": None})
    preload = ["__main__"] + [m for m, _, _ in shown]
    actions += [
        {"what": "start the benchmark as a module (`python -m PACKAGE`, its entry in PACKAGE/__main__.py): "
                 "multiprocessing does not re-run a package's __main__ in the children",
         "where": "the benchmark's launch command" if not target.repro else "the command that starts it",
         "recovery_s": recovery},
        {"what": f"keep forkserver and preload: multiprocessing.set_forkserver_preload({preload!r}) before the "
                 f"first writer starts; the forkserver runs them once and its children inherit them",
         "where": script, "recovery_s": recovery},
        _fork_action(target, None),
    ]
    return actions


def _writer_startup(d: dict, target: Target, saves: int) -> list[Fix]:
    method = d["evidence"].get("start_method")
    actions = []
    if method == "spawn":
        actions.append({"what": "start the writers with forkserver (with set_forkserver_preload of the "
                                "target's module): a fresh interpreter per writer is what spawn costs",
                        "where": _start_method_where(target, "forkserver"), "recovery_s": None})
    actions.append(_fork_action(target, None))
    return actions


def _binding(node: int | None) -> list[Fix]:
    n = "N" if node is None else str(node)
    return [
        {"what": f"bind each rank's CPUs and memory to one node, so the writer, its buffers' first touch and "
                 f"its copies share it: numactl --cpunodebind={n} --membind={n}",
         "where": "the rank's launch command (numactl --cpunodebind=N --membind=N CMD)", "recovery_s": None},
        {"what": "let the MPI launcher bind each rank to a node", "where":
            "mpirun --bind-to numa (Open MPI), srun --cpu-bind=ldoms --mem-bind=local (Slurm)", "recovery_s": None},
    ]


def _numa_mismatch(d: dict, target: Target, saves: int) -> list[Fix]:
    actions = _binding(d["evidence"].get("buffer_node"))
    actions[0]["recovery_s"] = _per_save(d, saves)
    return actions


def _affinity_divergence(d: dict, target: Target, saves: int) -> list[Fix]:
    cpus = d["evidence"].get("producer_cpus") or []
    return [{"what": "give each writer its producer's CPUs (forkserver children inherit the daemon's, frozen "
                     "when it started): os.sched_setaffinity(0, the producer's CPUs) at the writer's start, or "
                     "start the forkserver after the rank is bound",
             "where": "the writer's target" + (f" (producer CPUs {_cpu_list(cpus)})" if cpus else ""),
             "recovery_s": _per_save(d, saves)},
            _fork_action(target, None)] + _binding(None)


def _writer_migration(d: dict, target: Target, saves: int) -> list[Fix]:
    return _binding(None)


def _fork_with_threads(d: dict, target: Target, saves: int) -> list[Fix]:
    threads = ", ".join(d["evidence"].get("threads") or []) or "the other threads"
    return [{"what": f"start the writers with forkserver (set_forkserver_preload to keep their start-up short) "
                     f"or spawn: the child then holds none of the locks {threads} held",
             "where": _start_method_where(target, "forkserver"), "recovery_s": None},
            {"what": f"start {threads} after the writers are forked, or stop them before",
             "where": "the code that starts them", "recovery_s": None}]


_FIXES = {"main-reimport": _main_reimport, "writer-startup": _writer_startup, "numa-mismatch": _numa_mismatch,
          "affinity-divergence": _affinity_divergence, "writer-migration": _writer_migration,
          "fork-with-threads": _fork_with_threads}
# The comparison components each warning's fix acts on: a fix is shown in a
# verdict when one of them is a significant cause.
ACTS_ON = {"main-reimport": ("startup:main_rerun",),
           "writer-startup": ("startup:start", "startup:interpreter", "startup:main_rerun", "startup:unpickle",
                              "startup:bootstrap", "startup:target_setup"),
           "numa-mismatch": ("write", "generation"), "affinity-divergence": ("write", "generation"),
           "writer-migration": ("write",)}


# The contrast what-if (or reference method) that measures an action, by a
# phrase of its `what`: its recovery is then the what-if's, not the run's estimate.
MEASURED_BY = (("set_forkserver_preload", "forkserver+preload"), ("os.sched_setaffinity", "forkserver+pin"),
               ("numactl --cpunodebind", "+local"), (FORK_ACTION, "fork"))


def measured(fix: list[dict], recovered: dict[str, float]) -> list[dict]:
    """The actions with the recovery a contrast measured. recovered: method
    (a what-if, or the reference) -> seconds per save it won back of plain
    forkserver's loss; a key starting with "+" matches any what-if ending so."""
    out = []
    for action in fix:
        action = dict(action)
        for phrase, method in MEASURED_BY:
            if phrase in action["what"]:
                found = [v for m, v in recovered.items() if m == method or (method[0] == "+" and m.endswith(method))]
                if found and found[0] is not None:
                    action["recovery_s"] = found[0]
        out.append(action)
    return out


def imports_of(stacks, main: str | None) -> list[tuple[str, float, int | None]]:
    """The module-level imports the writers spent their re-run of __main__ in,
    from their stacks: (top-level module, seconds per writer, the script's
    line), costliest first. stacks: writerprof.run.stacks.ProcessStacks of
    the run."""
    from writerprof.run import roles as run_roles
    from writerprof.run.stacks import frame_parts

    seconds: dict[str, float] = defaultdict(float)
    line_of: dict[str, int | None] = {}
    writers = 0
    for proc in stacks:
        if proc.role != run_roles.WRITER:
            continue
        writers += 1
        for frames, count in proc.samples.items():
            found = _import_in_main(frames, frame_parts)
            if found:
                module, line = found
                seconds[module] += count / proc.rate_hz
                line_of.setdefault(module, line)
    if not writers:
        return []
    return sorted(((m, s / writers, line_of[m]) for m, s in seconds.items()), key=lambda x: -x[1])


def _import_in_main(frames, frame_parts) -> tuple[str, int | None] | None:
    """In a stack under spawn's prepare: the top-level module the script's
    <module> frame was importing, and the script's line."""
    at = next((i for i, f in enumerate(frames) if f.startswith("prepare (multiprocessing/spawn.py:")), None)
    if at is None:
        return None
    mains = [i for i in range(at + 1, len(frames)) if frame_parts(frames[i])[0] == "<module>"]
    if len(mains) < 2:
        return None
    line = frame_parts(frames[mains[0]])[2]
    file = frame_parts(frames[mains[1]])[1] or ""
    module = file.split("/", 1)[0].removesuffix(".py")
    return (module, line) if module and not module.startswith("<") else None


def _cpu_list(cpus) -> str:
    from writerprof.units import format_cpu_list

    return format_cpu_list(cpus)


def attach(run, diagnoses: list[dict], saves: list[dict]) -> None:
    """Give each warning with a fix its `fix` (in place)."""
    wanted = [d for d in diagnoses if d["code"] in _FIXES and d["severity"] == "warning"]
    if not wanted:
        return
    main = next((d["evidence"].get("main") for d in diagnoses if d["code"] == "main-reimport"), None)
    stacks = _stacks(run) if main else []
    modules = sorted({(frame_file or "").split("/", 1)[0] for proc in stacks for frames in proc.samples
                      for frame_file in _files(frames)})
    target = target_of(saves, diagnoses, main, modules)
    target.imports = imports_of(stacks, main)
    for d in wanted:
        d["fix"] = for_diagnosis(d, target, _saves_of(d, saves))
    # A start-up that re-runs __main__: the re-run's fix comes first, with the re-run's recovery.
    rerun = {(d["host"], d["pid"]): d["fix"] for d in wanted if d["code"] == "main-reimport"}
    for d in wanted:
        if d["code"] == "writer-startup" and (d["host"], d["pid"]) in rerun:
            first = rerun[(d["host"], d["pid"])]
            d["fix"] = first + [f for f in d["fix"] if f["what"] not in {x["what"] for x in first}]


def _saves_of(d: dict, saves: list[dict]) -> int:
    """The saves a warning's cost is summed over: its evidence's count, else its process's saves."""
    counted = d["evidence"].get("writers") or d["evidence"].get("saves")
    if isinstance(counted, int) and counted > 0:
        return counted
    mine = [s for s in saves if s["host"] == d["host"] and d["pid"] in (s["producer_pid"], s["writer_pid"])]
    return len(mine) or len(saves)


def _stacks(run) -> list:
    from writerprof.errors import WriterprofError
    from writerprof.run.stacks import load_stacks

    try:
        return load_stacks(run)
    except (WriterprofError, OSError, ValueError):  # no stacks, or unreadable: the fixes go without imports
        return []


def _files(frames):
    from writerprof.run.stacks import frame_parts

    return (frame_parts(f)[1] for f in frames)
