"""Draw flamegraphs of the Python stacks `writerprof record` took (by the probe, or py-spy).

  writerprof flame RUN [--role ROLE] [--pid P] [--threads split] [-o FILE]
  writerprof flame --diff A B [--role ROLE] [--threads split] [-o FILE]

Writes FILE.svg (interactive: hover for the frame, its samples and share;
click to zoom) and FILE.png. The stacks of the processes of a role are summed
(--role writer, the default: every writer of the run in one graph); --role
all puts each role under a root frame of its own; --pid draws one process.
Samples include blocked threads, so widths are wall-clock time: a writer's
start-up (its re-run of the parent's __main__ and the imports it makes) is a
tower of its own beside its writes and fsync.

--diff A B: one graph of both runs' stacks (e.g. a fork run A and a
forkserver run B), each frame as wide as the mean of its shares in A and B and
coloured by the change of its share of all samples: red, a larger share in B;
blue, a smaller one. Writers' stacks are compared from where the child's own
life begins (its target, its re-run of __main__, its unpickling of the
target), since below that a fork child shows its parent's frames and a
forkserver child the server's.

A graph that adds up several threads (a producer's main thread and its
queue's feeder thread) or processes says so under its title, and how long
their samples are beside the run: each thread's are its wall-clock time, so
two threads of a 4.7 s run can hold 7.6 s. --threads split draws each thread
under a root frame of its name (same-named threads of several processes, as
every writer's MainThread, share one, as they do across runs).

writerprof's own frames (the probe's wrappers around the calls it times, and
its start-up in each process) are folded out: each removed and its callees
drawn on its caller, the samples kept. --probe-frames draws them.

Default FILE: flame-RUN-ROLE (flame-diff-A-B-ROLE) in the current directory.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from writerprof.commands.common import check_outputs, shown_bytes, write_bytes, write_markup
from writerprof.errors import UsageError, WriterprofError

ROLES = ("writer", "producer", "forkserver", "resource_tracker", "other", "all")

EXAMPLE = """
writerprof flame run1 -o flame-writers
writerprof flame --diff run-fork run-forkserver --role writer
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, nargs="?", metavar="RUN", help="run directory made by writerprof record")
    parser.add_argument("--diff", type=Path, nargs=2, metavar=("A", "B"),
                        help="a differential flamegraph of run B against run A")
    parser.add_argument("--role", choices=ROLES, metavar="ROLE",
                        help="whose stacks: " + ", ".join(ROLES) + " (default: writer; with --pid: that process)")
    parser.add_argument("--pid", type=int, metavar="P", help="one process's stacks (not with --diff)")
    parser.add_argument("-o", "--output", type=Path, metavar="FILE",
                        help="FILE.svg and FILE.png (default: flame-RUN-ROLE here)")
    parser.add_argument("--probe-frames", action="store_true",
                        help="keep writerprof's own probe frames in the stacks (folded out by default)")
    parser.add_argument("--threads", choices=("sum", "split"), default="sum",
                        help="sum: a process's threads added up (the default; the subtitle says how many); "
                             "split: each thread under a root frame of its name")


def run(args: argparse.Namespace) -> int:
    if args.diff and args.run_dir is not None:
        raise UsageError("give RUN, or --diff A B, not both")
    if not args.diff and args.run_dir is None:
        raise UsageError("say which run: writerprof flame RUN, or writerprof flame --diff A B")
    if args.diff and args.pid is not None:
        raise UsageError("--pid is for one run; with --diff choose a --role")
    if args.output is not None:
        check_outputs(args.diff or [args.run_dir], [("-o", path) for path in _paths(_stem(args.output, ""))])
    if args.diff:
        return _diff(args)
    return _one(args)


def _chosen(recorded, role: str | None, pid: int | None, probe_frames: bool = False):
    from writerprof.run.stacks import require_stacks, select

    stacks = require_stacks(recorded, probe_frames)
    if pid is not None:
        mine = select(stacks, role if role is not None else "all", pid)
        if not mine:
            pids = ", ".join(str(s.pid) for s in stacks)
            who = f"{role} process" if role not in (None, "all") else "process"
            raise WriterprofError(f"{recorded.path}: no {who} with pid {pid} in its stacks (sampled: {pids})")
        return mine
    role = role or "writer"
    mine = select(stacks, role)
    if not mine:
        roles = ", ".join(sorted({s.role for s in stacks}))
        raise WriterprofError(f"{recorded.path}: no {role} process in its stacks (sampled roles: {roles})")
    return mine


def _stem(output: Path | None, default: str) -> Path:
    if output is None:
        return Path(default)
    return output.with_suffix("") if output.suffix in (".svg", ".png") else output


def _paths(stem: Path) -> tuple[Path, Path]:
    return stem.with_name(stem.name + ".svg"), stem.with_name(stem.name + ".png")


def _write(stem: Path, svg: str, png: bytes) -> tuple[Path, Path]:
    svg_path, png_path = _paths(stem)
    return write_markup(svg_path, svg, "flamegraph"), write_bytes(png_path, png, "flamegraph")


def _what(stacks, role, pid) -> str:
    if pid is not None:
        return stacks[0].label
    role = role or "writer"
    count = len(stacks)
    return f"{'every role' if role == 'all' else role}: {count} process{'es' * (count != 1)}"


def _one(args) -> int:
    from writerprof.collector import keep_until_exit
    from writerprof.render import flame
    from writerprof.run import load
    from writerprof.run.stacks import recorded_s

    recorded = load(args.run_dir)
    keep_until_exit(recorded)
    stacks = _chosen(recorded, args.role, args.pid, args.probe_frames)
    name = Path(recorded.path).resolve().name
    tag = f"pid{args.pid}" if args.pid is not None else (args.role or "writer")
    by = "role" if args.role == "all" and args.pid is None else "none"
    # Shown bytes: matplotlib cannot draw a surrogate (a non-UTF-8 byte of the run's name).
    title = shown_bytes(f"{_what(stacks, args.role, args.pid)} of {name}{_method(recorded)}")
    split, run_s = args.threads == "split", recorded_s(recorded)
    svg = flame.flame_svg(stacks, title, by=by, threads=split, run_s=run_s)
    png = flame.flame_png(stacks, title, by=by, threads=split, run_s=run_s)
    default = args.output is None
    svg_path, png_path = _write(_stem(args.output, f"flame-{name}-{tag}"), svg, png)
    how = flame.how_drawn(stacks, split)
    print(f"writerprof flame: {svg_path} and {png_path.name}"
          f"{' (in the current directory)' if default else ''}: {_what(stacks, args.role, args.pid)}, "
          f"{sum(s.total for s in stacks)} samples{f'; {how}' if how else ''}", file=sys.stderr)
    for loss in recorded.losses:
        print(f"writerprof flame: note: {loss}", file=sys.stderr)
    return 0


def _method(recorded) -> str:
    from writerprof.analysis.starts import start_methods

    methods = start_methods(recorded)
    return f" ({', '.join(methods)})" if methods else ""


def _diff(args) -> int:
    from writerprof.collector import keep_until_exit
    from writerprof.render import flame
    from writerprof.run import load

    runs = [load(path) for path in args.diff]
    keep_until_exit(runs)
    chosen = [_chosen(r, args.role, None, args.probe_frames) for r in runs]
    names = [Path(r.path).resolve().name for r in runs]
    labels = tuple(f"{tag} {name}{_method(r)}" for tag, name, r in zip("AB", names, runs))
    role = args.role or "writer"
    split = args.threads == "split"
    counts = [flame.comparable_counts(c, role, split) for c in chosen]
    title = flame.diff_title(f"{role} stacks{' from the child start' if role == 'writer' else ''}",
                             (labels[0][2:], labels[1][2:]), chosen, split)
    labels = tuple(shown_bytes(f"{label}, {len(c)} proc., {sum(s.total for s in c) / len(c) / c[0].rate_hz:.2f} "
                               f"s each") for label, c in zip(labels, chosen))
    title = shown_bytes(title)
    svg = flame.diff_svg(counts[0], counts[1], title, labels=labels)
    png = flame.diff_png(counts[0], counts[1], title, labels=labels)
    default = args.output is None
    svg_path, png_path = _write(_stem(args.output, f"flame-diff-{names[0]}-{names[1]}-{role}"), svg, png)
    print(f"writerprof flame: {svg_path} and {png_path.name}{' (in the current directory)' if default else ''}: "
          f"{role}, A {sum(s.total for s in chosen[0])} samples, B {sum(s.total for s in chosen[1])} samples",
          file=sys.stderr)
    for r in runs:
        for loss in r.losses:
            print(f"writerprof flame: note: {r.path}: {loss}", file=sys.stderr)
    return 0
