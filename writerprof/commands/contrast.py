"""Record one command under each start method, interleaved (A B A B ...) so
that drift cancels, and explain the difference: per cause, in seconds per
save, adding up to the measured difference.

Without CMD it runs the built-in reproducer modelling the benchmark:
  writerprof repro --saves 4 --size 512MiB --main-imports numpy,matplotlib.pyplot
(4 x 32 MiB shared-memory buffers, one os.write per chunk, fsync at close, a
main module that imports numpy and matplotlib at module level, as a benchmark
script does). With the default --repeat 3 it takes under 40 s, 95% of it the
recordings. --backend s3 --endpoint URL --bucket B (and --upload, --prefix)
are passed on to it: its saves are uploaded to that object store instead.

On a program that makes no checkpoint saves (a Pool map, a
ProcessPoolExecutor, a DataLoader's workers), or with --metric REGEX, it
explains the difference in CMD's wall time (and in the figure REGEX reads in
its output) instead: cut into parts that add up to it (the children's tasks
and waits for tasks, each start-up phase, the forkserver's start,
Process.start() and its pickling, the parent's own), per child and per
task, with the same checked fixes; the what-ifs are not run there.

Every run uses the command's own code; only the start method is switched,
by the probe, whatever the command asks for.
Methods: fork, forkserver, spawn, and what-ifs on forkserver, each removing
one cause and nothing else. Two run an action of the plain forkserver
recording's fix itself, with exactly its modules (so forkserver is recorded
before them):
  forkserver+preload  multiprocessing.set_forkserver_preload(ITS LIST), the
                      program's own list replaced; CPython does the rest
                      ('__main__' in it is skipped before 3.13.8 and 3.14.1)
  forkserver+guard    the writers' re-run of __main__ defers the imports the
                      fix says to move, to their first use: as if they were
                      under `if __name__ == "__main__":` or inside the
                      functions that use them (a target in __main__ too)
and the others:
  forkserver+pin      each child takes the CPU affinity of the process that
                      started it, not the forkserver's
  forkserver+local    each writer runs on the node holding its buffers (and the
                      producer's filling thread, where the buffers are not yet
                      touched, is pinned to the node it is on)
  forkserver+first-touch  each buffer is first touched, at its creation, from
                      the node its writer will run on
The first method is the reference. A what-if that cannot apply (this Python
does not re-run __main__; the fix has no such action to run; the writers
already had their producer's CPUs; one NUMA node) is reported, not run, and
named in contrast.json's details as not tested; where none but the reference is left,
contrast writes contrast.json and exits 1. The plain
forkserver recording's numa-mismatch and affinity-divergence warnings are
listed with the seconds per save the what-if removing their cause won back
(cost_s; placement_costs in contrast.json).

Writes DIR/runs/NN-METHOD (the recordings, each with the command's output in
output.log), DIR/contrast.json
("schema": "writerprof.contrast/1") and DIR/contrast.html, and prints the verdict.
Each recording's line, `[i/N] METHOD repeat K ... its outcome`, stays on the
screen: nothing is written over it while the command runs. SIGINT or SIGTERM
ends the recording under way (the command gets the signal, the recording is
finished) and contrast with 130 or 143, without a verdict.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import textwrap
import time
from pathlib import Path

from writerprof.analysis import contrast
from writerprof import interrupts
from writerprof.commands import misplaced
from writerprof.commands.common import new_directory, write_text
from writerprof.errors import Interrupted, UsageError, WriterprofError
from writerprof.probes.writerprof_probe.format import (DEFER_ENV, FORCE_ENV, MITIGATE_ENV, PRELOAD_ENV,
                                                       START_METHODS)

WHAT_IFS = contrast.WHAT_IFS
# Where the probe reads the modules of a what-if that runs the fix's advice.
MODULES_ENV = {"preload": PRELOAD_ENV, "guard": DEFER_ENV}
_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)
# Why the what-ifs do not run on a program without saves.
PROGRAM_WHAT_IFS = ("its what-ifs act on checkpoint writers; a program without saves is contrasted by its start "
                    "methods alone")
REPRO_ARGS = ["repro", "--saves", "4", "--size", "512MiB", "--main-imports", "numpy,matplotlib.pyplot"]
EXAMPLE = """
writerprof contrast -o contrast1
writerprof contrast --repeat 5 --methods fork,forkserver,forkserver+preload -- python train.py --epochs 1
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--methods", default="fork,forkserver", metavar="M,M,...",
                        help="start methods to record, the first the reference (default: fork,forkserver;"
                        f" also: {', '.join(('spawn',) + tuple(WHAT_IFS))})")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="recordings of each method, interleaved (default: 3)")
    parser.add_argument("--metric", metavar="REGEX",
                        help="explain a figure CMD prints rather than its wall time: the number REGEX's first group "
                        "(else its whole match) reads in CMD's output, its last match; CMD then need make no saves")
    parser.add_argument("-o", "--output", type=Path, metavar="DIR",
                        help="where to write (default: writerprof-contrast-YYYYmmdd-HHMMSS here)")
    from writerprof.commands.repro import add_store_arguments

    add_store_arguments(parser.add_argument_group("the built-in reproducer's object store (no CMD)"))
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]",
                        help="the command to record (default: the built-in reproducer); every word after it is its own")


def methods_from(text: str) -> list[str]:
    methods = [m.strip() for m in text.split(",") if m.strip()]
    known = START_METHODS + tuple(WHAT_IFS)
    for m in methods:
        if m not in known:
            raise UsageError(f"--methods: unknown method {m!r} (known: {', '.join(known)})")
    if len(methods) < 2 or len(set(methods)) != len(methods):
        raise UsageError("--methods: name at least two different methods, the reference first")
    for m in methods:
        if m in contrast.ADVISED and contrast.PLAIN not in methods[:methods.index(m)]:
            raise UsageError(f"--methods: {m} runs the fix of the {contrast.PLAIN} recording: name "
                             f"{contrast.PLAIN} before it")
    return methods


def writerprof_command() -> list[str]:
    """This writerprof's console script (a venv need not be on PATH)."""
    script = Path(sys.executable).with_name("writerprof")
    if script.exists():
        return [str(script)]
    found = shutil.which("writerprof")
    if found:
        return [found]
    return [sys.executable, "-m", "writerprof"]


def run(args: argparse.Namespace) -> int:
    from writerprof.commands.repro import STORE_OPTIONS, store_argv
    from writerprof.record import session as recording
    from writerprof.render import format as text, terminal
    from writerprof.render.table import terminal_width

    interrupts.install()  # between recordings too, SIGINT and SIGTERM end contrast with 128+N
    methods = methods_from(args.methods)
    if args.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    store = store_argv(args)  # the reproducer's backend, passed through
    if command and store:
        raise UsageError(f"{' '.join(store)}: the built-in reproducer's options; with CMD, give them to CMD")
    command = recording.resolve(command) if command else writerprof_command() + REPRO_ARGS + store
    metric = _metric_regex(args.metric)
    out = _output(args.output)
    misplaced.warn(args.parser, args.argv, args.cmd, cmd_own=tuple(f"--{name}" for name in STORE_OPTIONS))
    (out / "runs").mkdir()  # in the directory just claimed, empty
    total = len(methods) * args.repeat
    print(f"writerprof contrast: {' vs '.join(methods)}, {args.repeat} of each, interleaved, into {out}",
          file=sys.stderr)
    print(f"  command: {text.command(command)}", file=sys.stderr)
    started = time.monotonic()
    runs: list[dict] = []
    skipped: dict[str, str] = {}
    advised: dict[str, list[str]] = {}
    count = 0
    program_mode = None  # decided by the first recording: CMD's saves, or its wall time (or metric)
    for repeat in range(1, args.repeat + 1):
        for method in methods:
            if method in skipped:
                continue
            count += 1
            runs.append(_record_one(out / "runs", command, method, repeat, count, total, started,
                                    advised.get(method)))
            summary = runs[-1]["summary"]
            if program_mode is None:
                program_mode = metric is not None or not summary["saves"]
                if program_mode:
                    print("  no checkpoint saves" if not summary["saves"] else f"  --metric {metric.pattern}",
                          "— contrasting CMD's wall time" + (" and its figure" if metric else "")
                          + ", cut by what its child processes did", file=sys.stderr)
                    skipped.update((m, PROGRAM_WHAT_IFS) for m in methods if m in WHAT_IFS)
                    total -= args.repeat * len(skipped)
            if program_mode:
                runs[-1]["program"] = _program_of(runs[-1]["path"], metric)
            elif not summary["saves"]:
                raise WriterprofError(f"the {method} recording has no saves: no probed process started a "
                                      f"writer (see 'writerprof report {runs[-1]['path']}')")
            elif repeat == 1 and method == contrast.PLAIN:
                advised.update((m, found) for m, found in contrast.advice(summary).items() if m in methods)
                for m, modules in advised.items():
                    print(f"  {m}: runs the fix with {modules!r}", file=sys.stderr)
                skipped.update(contrast.cannot_apply(summary, methods))
                for skip, reason in skipped.items():
                    print(f"  {skip}: not run: {reason}", file=sys.stderr)
                total -= args.repeat * len(skipped)
    if program_mode:
        return _program_contrast(out, command, methods, args.repeat, runs, skipped, metric)
    result = contrast.result(command, methods, args.repeat, runs, skipped, advised)
    write_text(out / "contrast.json", json.dumps(result, indent=1), "contrast result")
    if not result["comparisons"]:  # the reasons were printed as the what-ifs were skipped
        raise WriterprofError(f"{result['verdict']}; {out / 'contrast.json'}")
    _write_html(out, result, runs)
    width = terminal_width()
    sys.stdout.write(terminal.contrast_text(result, out / "contrast.html", width))
    for d in result["placement_costs"]:
        cost = f"{d['cost_s']:+.3f} s per save (by {d['cost_from']})" if d["cost_s"] is not None else "not measured"
        print("\n".join(textwrap.wrap(f"{d['code']}: cost {cost}: {d['message']}", width, initial_indent="  ",
                                       subsequent_indent="    ", break_on_hyphens=False)))
    return 0


def _record_one(runs_dir: Path, command: list[str], method: str, repeat: int, count: int, total: int,
                started: float, modules: list[str] | None) -> dict:
    """The count-th of total recordings: command under method (a what-if that
    runs the fix's advice with its modules), its progress line, and its summary."""
    from writerprof.record import interposer
    from writerprof.record import session as recording
    from writerprof.render import world as world_text
    from writerprof.run import directory

    base, what_if = WHAT_IFS.get(method, (method, None))
    env = {FORCE_ENV: base}
    if what_if:
        env[MITIGATE_ENV] = what_if
    if what_if in MODULES_ENV:
        env[MODULES_ENV[what_if]] = ",".join(modules or ())
    path = runs_dir / f"{count:02d}-{method.replace('+', '-')}"
    run_dir = directory.create(path, command, interval_ns=recording.INTERVAL_NS,
                               sampler=True, probes=[], env={}, what_if=env, interposer=interposer.available())
    print(f"  [{count}/{total}] {method:<19} repeat {repeat}  ...", end="", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    log = run_dir / "output.log"
    with open(log, "wb") as output:
        recorded = recording.record(run_dir, command, recording.INTERVAL_NS, [], extra_env=env,
                                    output=output)
    # A signal sent to contrast was passed on to the command, which has ended; a Ctrl-C
    # at the terminal went to the command alone (its group has the terminal): both end contrast.
    stopped_by = recorded.signals[:1] or [s for s in (recorded.killed_by,) if s in _INTERRUPTS]
    if stopped_by:  # the run directory is finished
        print(" interrupted", file=sys.stderr)
        raise Interrupted(stopped_by[0])
    status = recorded.exit_status
    summary = _summarize(run_dir)
    rate = summary["throughput"]["gib_s"]
    print(f" {time.monotonic() - t0:5.1f} s, {summary['throughput']['saves']} saves"
          + (f", {rate:.2f} GiB/s" if rate else "") + f"   (elapsed {time.monotonic() - started:.0f} s)",
          file=sys.stderr)
    partial = world_text.headline(summary["world"]) if summary["world"]["partial"] else None
    for note in [partial] * bool(partial) + recorded.notes + recorded.recording_notes():  # held while CMD ran
        print(f"      {note}", file=sys.stderr)
    if status != 0:
        raise WriterprofError(f"the {method} recording failed: the command exited with status "
                              f"{status}; its output is in {log}")
    return {"method": method, "repeat": repeat, "path": str(run_dir), "summary": summary}


def _output(path: Path | None) -> Path:
    from writerprof.run import directory

    if path is None:
        return directory.new_default(time.strftime("writerprof-contrast-%Y%m%d-%H%M%S"), "contrast directory")
    return new_directory(path, "contrast directory")


def _summarize(run_dir: Path) -> dict:
    from writerprof.collector import collector_paused
    from writerprof.analysis.summary import summarize
    from writerprof.run import load

    with collector_paused():
        return summarize(load(run_dir))


def _write_html(out: Path, result: dict, runs: list[dict]) -> None:
    from writerprof.render import flame, html, plots
    from writerprof.render.markup import HTML_DPI
    from writerprof.render.plots import parallel
    from writerprof.run import load
    from writerprof.run.stacks import load_stacks

    sides = {m: [r["summary"] for r in runs if r["method"] == m] for m in result["methods"]
             if any(r["method"] == m for r in runs)}
    primary = next(iter(result["comparisons"].values()))
    # Made and rendered in parallel, each once (plots.parallel).
    figures = parallel.render({"save_decomposition": lambda both: plots.save_decomposition(both[0]),
                               "compare_waterfall": lambda both: plots.compare_waterfall(both[1])},
                              (sides, primary), [("png", HTML_DPI)])
    reference, other = result["methods"][0], next(iter(result["comparisons"]))
    pooled = {m: [s for r in runs if r["method"] == m for s in load_stacks(load(r["path"]))]
              for m in (reference, other)}
    flames = flame.role_diffs(pooled[reference], pooled[other], (reference, other))
    write_text(out / "contrast.html", html.contrast_html(primary, sides, figures, contrast=result, flames=flames),
               "contrast report")


def _metric_regex(text: str | None):
    import re

    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise UsageError(f"--metric: {text!r} is not a regular expression: {exc}") from None


def _program_of(path: str, metric) -> dict:
    """analysis.program of one recording, with the figure --metric reads in its output."""
    from writerprof.analysis.program import program
    from writerprof.collector import collector_paused
    from writerprof.run import load

    with collector_paused():
        found = program(load(path))
    found["metric"] = None
    if metric is not None:
        found["metric"] = _figure(metric, Path(path) / "output.log")
    return found


def _figure(metric, log: Path) -> float:
    """The number metric's last match reads in log (its first group, else the whole match)."""
    text = log.read_text(errors="replace")
    matches = list(metric.finditer(text))
    if not matches:
        raise WriterprofError(f"--metric {metric.pattern!r} matched nothing in the command's output ({log})")
    found = matches[-1]
    figure = found.group(1) if metric.groups else found.group(0)
    try:
        return float(figure)
    except (TypeError, ValueError):
        raise WriterprofError(f"--metric {metric.pattern!r} read {figure!r} in {log}: not a number "
                              f"(put the number in the regex's first group)") from None


def _program_contrast(out: Path, command: list[str], methods: list[str], repeat: int, runs: list[dict],
                      skipped: dict[str, str], metric) -> int:
    """The contrast of a program without saves (analysis.program_contrast):
    contrast.json, contrast.html and the verdict."""
    from writerprof.analysis import program_contrast
    from writerprof.collector import collector_paused
    from writerprof.render import programs
    from writerprof.render.table import terminal_width
    from writerprof.run import load

    sides = {m: [r for r in runs if r["method"] == m] for m in methods if m not in skipped}
    if len(sides) < 2:
        raise WriterprofError(f"nothing to contrast: no method but the reference applies here; "
                              f"{out / 'contrast.json'}")
    with collector_paused():  # what the fixes read of each side's first run: its stacks, Python, forkserver
        context = {m: program_contrast.fix_inputs(load(rs[0]["path"]), rs[0]["program"]) for m, rs in sides.items()}
    reference = methods[0]
    comparisons = {m: program_contrast.compare([r["program"] for r in sides[reference]],
                                               [r["program"] for r in sides[m]], (reference, m),
                                               metric.pattern if metric else None,
                                               {reference: context[reference], m: context[m]})
                   for m in sides if m != reference}
    first = next(iter(comparisons.values()))
    result = {"schema": contrast.SCHEMA, "mode": "program", "command": list(command), "methods": list(methods),
              "repeat": repeat, "metric": metric.pattern if metric else None,
              "runs": [{"method": r["method"], "repeat": r["repeat"], "path": r["path"],
                        "wall_s": r["program"]["wall_s"], "metric": r["program"]["metric"],
                        "world": r["summary"]["world"]} for r in runs],
              "comparisons": comparisons,
              "what_ifs": [{"method": m, "ran": False, "reason": why} for m, why in skipped.items()],
              "verdict": first["verdict"]}
    write_text(out / "contrast.json", json.dumps(result, indent=1, default=_plain), "contrast result")
    write_text(out / "contrast.html", programs.contrast_html(result), "contrast report")
    sys.stdout.write(programs.contrast_text(result, out / "contrast.html", terminal_width()))
    return 0


def _plain(value):
    """numpy's scalars in the result, as JSON numbers."""
    return value.item() if hasattr(value, "item") else str(value)
