"""Run CMD with every Python process it starts probed (fork, forkserver and
spawn children, at any depth), sample them all from /proc, and leave a run
directory for `writerprof report`.

The probe reaches CMD's Python processes through PYTHONPATH (a sitecustomize
that does nothing unless WRITERPROF_RUN is set, and runs any sitecustomize it
shadows); interpreters started with -E, -I or -S ignore it and go unprobed.
py-spy samples the Python stacks of CMD's whole process tree alongside
(--stack-rate, --native, --no-stacks; see writerprof.record.pyspy): if it is
missing or may not attach (ptrace), record says so in one line and goes on
without.
Exits with CMD's exit status (128+N if a signal N killed it). CMD runs in a
process group of its own, which gets the terminal (Ctrl-C goes to CMD) and any
SIGINT or SIGTERM sent to record. The run directory is complete and loadable
however CMD ended.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import writerprof.probes
from writerprof.errors import UsageError, WriterprofError
from writerprof.probes.writerprof_probe import identity, specs
from writerprof.probes.writerprof_probe import format as journal_format
from writerprof.probes.writerprof_probe.format import host_name
from writerprof.record import pyspy as stack_sampling
from writerprof.record import topology
from writerprof.record.pyspy import StackOptions
from writerprof.run import directory, layout
from writerprof.units import format_size, parse_duration

HELP = "record a command's writer subprocesses into a run directory"
PROBE_DIR = os.path.dirname(os.path.abspath(writerprof.probes.__file__))
_STATUS_EVERY_S = 0.5
INTERVAL_NS = parse_duration("50ms")  # the default sampling interval


class CommandNotFound(WriterprofError):
    exit_code = 127  # as a shell says it


class CommandNotRunnable(WriterprofError):
    exit_code = 126


def _duration(text):
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


_duration.__name__ = "duration"


def _rate(text):
    value = int(text) if text.strip().isdigit() else 0
    if not 1 <= value <= 10_000:
        raise argparse.ArgumentTypeError(f"{text!r} is not a rate in Hz from 1 to 10000")
    return value


_rate.__name__ = "rate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", type=Path, metavar="RUN",
                        help="run directory, new or empty (default: writerprof-YYYYmmdd-HHMMSS here)")
    parser.add_argument("--interval", type=_duration, default=INTERVAL_NS,
                        metavar="TIME", help="sampling interval (default: 50ms)")
    parser.add_argument("--probe", action="append", default=[], metavar="MODULE:QUALNAME=PHASE",
                        help="also time this callable as PHASE (repeatable)")
    parser.add_argument("--no-sampler", action="store_true",
                        help="journal from inside the processes only; no /proc sampling")
    parser.add_argument("--stack-rate", type=_rate, default=stack_sampling.RATE_HZ, metavar="HZ",
                        help=f"py-spy samples of Python stacks per second (default: {stack_sampling.RATE_HZ})")
    parser.add_argument("--native", action="store_true",
                        help="py-spy also samples native frames (C, C++, Cython)")
    parser.add_argument("--no-stacks", action="store_true", help="take no Python stacks (no py-spy)")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]")


def _resolve(command: list[str]) -> list[str]:
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError("no command to record: writerprof record [OPTIONS] -- CMD [ARGS...]")
    if os.sep in command[0]:
        if not os.path.isfile(command[0]):
            raise CommandNotFound(f"command not found: {command[0]}")
    elif shutil.which(command[0]) is None:
        raise CommandNotFound(f"command not found: {command[0]}")
    return command


# OpenMPI's mpirun does not pass the environment on to remote hosts; it
# forwards the variables this names (';'-separated), which record appends to.
OMPI_ENV_LIST = "OMPI_MCA_mca_base_env_list"


def probe_environment(run: Path, added: list[str], environ=os.environ, extra: dict | None = None,
                      interval_ns: int = INTERVAL_NS) -> dict:
    """CMD's environment: the probe first on PYTHONPATH, the run directory
    named, what a host other than this one needs to start its sampler agent,
    any what-if switches (`extra`) for the probe, and OpenMPI told to forward
    all of it."""
    env = dict(environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PROBE_DIR, env.get("PYTHONPATH")) if p)
    env["WRITERPROF_RUN"] = str(run.resolve())
    env[journal_format.LAUNCH_HOST_ENV] = host_name()
    env[journal_format.AGENT_PYTHON_ENV] = sys.executable
    env[journal_format.INTERVAL_ENV] = str(interval_ns)
    if added:
        env["WRITERPROF_PROBES"] = "\n".join(added)
    else:
        env.pop("WRITERPROF_PROBES", None)
    env.update(extra or {})
    ours = sorted(k for k in env if k.startswith("WRITERPROF_")) + ["PYTHONPATH"]
    listed = [v for v in env.get(OMPI_ENV_LIST, "").split(";") if v]
    env[OMPI_ENV_LIST] = ";".join(listed + [k for k in ours if k not in listed])
    return env


def run(args: argparse.Namespace) -> int:
    command = _resolve(args.cmd)
    for spec in args.probe:
        try:
            specs.parse(spec)
        except specs.SpecError as exc:
            raise UsageError(f"--probe {exc}") from None
    stacks = StackOptions(enabled=not args.no_stacks, rate_hz=args.stack_rate, native=args.native)
    run_dir = directory.create(args.output, command, interval_ns=args.interval,
                               sampler=not args.no_sampler, probes=args.probe,
                               env=identity.allowed_env(os.environ), stacks=stacks.settings())
    print(f"writerprof record: recording into {run_dir}", file=sys.stderr)
    started = time.monotonic()
    exit_status = record(run_dir, command, args.interval, args.probe, sampler=not args.no_sampler,
                         stacks=stacks)
    print(_summary(run_dir, time.monotonic() - started, exit_status), file=sys.stderr)
    return exit_status


def record(run_dir: Path, command: list[str], interval_ns: int, probes: list[str], sampler: bool = True,
           extra_env: dict | None = None, output=None, stacks: StackOptions | None = None) -> int:
    """Run CMD under the probe into the created run_dir, sampling it, and
    finish the run directory however CMD ends; CMD's exit status (128+N if
    signal N killed it). output: a file for CMD's stdout and stderr (else ours).
    stacks: how py-spy samples CMD's Python stacks (default: StackOptions(),
    100 Hz); what was taken is written into run.json's "stacks"."""
    stacks = StackOptions() if stacks is None else stacks
    host = host_name()
    directory.write_topology(run_dir, host, topology.snapshot())
    started = time.monotonic()
    child, received = None, []

    def forward(signum, frame):  # CMD decides how to end; we wait for it
        received.append(signum)
        if child is not None:
            try:
                os.killpg(child.pid, signum)
            except ProcessLookupError:
                pass

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    # Its own process group, so that a signal reaches all of CMD, not only its leader.
    group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
    try:
        streams = {"stdout": output, "stderr": subprocess.STDOUT} if output is not None else {}
        child = subprocess.Popen(command, env=probe_environment(run_dir, probes, extra=extra_env,
                                                                interval_ns=interval_ns), **group,
                                 **streams)
    except OSError as exc:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        _set_meta(run_dir, stacks={**stacks.settings(), "taken": False, "reason": "the command did not start"})
        directory.finish(run_dir, exit_status=126, ended_by="not_started", signal=None)
        raise CommandNotRunnable(f"cannot run {command[0]}: {exc.strerror}") from None
    for signum in received:  # came while CMD was being started
        os.killpg(child.pid, signum)
    terminal = _give_terminal(child.pid)
    running = stack_recorder = None
    try:
        stack_recorder, stacks_taken = stack_sampling.start(
            child.pid, layout.stacks_dir(run_dir, host), stacks, warn=_say)
        if sampler:
            from writerprof.record.sampler import Sampler

            running = Sampler(child.pid, layout.host_dir(run_dir, host), interval_ns / 1e9)
            running.start()
        status = _wait(child, running, started)
    finally:
        if terminal is not None:
            _take_terminal(terminal)
        if running is not None:
            running.stop()
        if child.returncode is None:  # record itself failed: CMD must not outlive it
            _end(child)
        if stack_recorder is not None:  # CMD has ended: py-spy writes its file
            stacks_taken = stack_recorder.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    _set_meta(run_dir, stacks=stacks_taken)
    exit_status = 128 - status if status < 0 else status
    directory.finish(run_dir, exit_status=exit_status,
                     ended_by="signal" if status < 0 else "exit",
                     signal=signal.Signals(-status).name if status < 0 else None)
    return exit_status


def _say(line: str) -> None:
    print(f"writerprof record: no stacks: {line}", file=sys.stderr, flush=True)


def _set_meta(run_dir: Path, **items) -> None:
    """Add to run.json while recording (replaced whole, as directory does)."""
    from writerprof.run.load import read_meta

    meta = read_meta(run_dir)
    meta.update(items)
    directory._write_json(Path(run_dir) / layout.RUN_FILE, meta)


def _give_terminal(group: int) -> int | None:
    """Make CMD's process group the terminal's foreground one, when we hold the
    terminal: CMD may read it (mpiexec forwards stdin) and Ctrl-C reaches CMD
    as it would without record. Returns the terminal's fd, to take it back."""
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd) or os.tcgetpgrp(fd) != os.getpgrp():
            return None
        os.tcsetpgrp(fd, group)
    except (OSError, ValueError):
        return None
    try:  # CMD may have read the terminal before it was its own, and been stopped for it
        os.killpg(group, signal.SIGCONT)
    except ProcessLookupError:
        pass
    return fd


def _take_terminal(fd: int) -> None:
    # From a background group tcsetpgrp raises SIGTTOU, which would stop us.
    previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        os.tcsetpgrp(fd, os.getpgrp())
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, previous)


def _end(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    except ProcessLookupError:
        pass


def _wait(child: subprocess.Popen, sampler, started: float) -> int:
    show = sampler is not None and sys.stderr.isatty()
    if not show:  # a plain wait: no wake-ups that take CPU from CMD
        return child.wait()
    while True:
        try:
            status = child.wait(timeout=_STATUS_EVERY_S)
        except subprocess.TimeoutExpired:
            seen = sampler.status()
            sys.stderr.write(f"\r\033[K  {time.monotonic() - started:7.1f} s   processes seen "
                             f"{seen.processes_seen}   writers alive {seen.writers_alive}   "
                             f"{seen.written_bytes / (1 << 30):.2f} GiB written")
            sys.stderr.flush()
            continue
        sys.stderr.write("\r\033[K")
        return status


def _summary(run_dir: Path, wall_s: float, exit_status: int) -> str:
    """One screen: what was recorded, and what could not be."""
    from writerprof.run import load

    recorded = load(run_dir)
    codes = {name: code for code, name in recorded.phase_names.items()}
    chunks = recorded.chunks
    writes = chunks[chunks["phase"] == codes["write"]]
    starts = [e["data"] for e in recorded.events_of("process_start") if e["data"].get("started")]
    saves = int((chunks["phase"] == codes["save"]).sum()) or len(starts)
    problems = [f"probe in pid {e['pid']}: {e['data'].get('where')}: {e['data'].get('error')}"
                for e in recorded.events_of("error")]
    problems += [f"hook {e['data'].get('spec')} failed in pid {e['pid']}: {e['data'].get('reason')}"
                 for e in recorded.events_of("hook") if e["data"].get("status") == "failed"]
    problems += recorded.losses
    lines = [
        f"writerprof record: {run_dir}",
        f"  command exited   {exit_status}",
        f"  wall time        {wall_s:.2f} s",
        f"  processes        {len(recorded.processes)} probed, "
        f"{len({int(s['pid']) for s in recorded.sampled if s['kind'] == 'seen'})} sampled",
        f"  writers started  {len(starts)}",
        f"  saves            {saves}",
        f"  file writes      {len(writes)}, {format_size(int(writes['bytes'].clip(0).sum()))}",
        f"  warnings         {len(problems)}",
    ]
    lines += [f"    {p}" for p in problems[:5]]
    if len(problems) > 5:
        lines.append(f"    ... and {len(problems) - 5} more")
    taken = recorded.meta.get("stacks") or {}
    if taken.get("taken"):
        lines.append(f"  stacks           {taken.get('samples', 0)} samples at {taken.get('rate_hz')} Hz "
                     f"(py-spy {taken.get('py_spy') or '?'})")
    else:
        lines.append(f"  stacks           none: {taken.get('reason') or 'not recorded'}")
    lines.append(f"  next:            writerprof report {run_dir}")
    return "\n".join(lines)
