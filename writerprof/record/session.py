"""One recording session, as `writerprof record` and each run of `writerprof
contrast` make it: CMD resolved and started with the probe's environment, in
a process group of its own that gets the terminal and any SIGINT or SIGTERM
sent to record; py-spy (writerprof.record.pyspy) and the /proc sampler
(writerprof.record.sampler) following it until it ends; the run directory
finished however CMD ended, with CMD's exit status (128+N if signal N killed
it); and the one-screen summary `writerprof record` ends with.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import writerprof.probes
from writerprof.errors import UsageError, WriterprofError
from writerprof.probes.writerprof_probe import format as journal_format
from writerprof.probes.writerprof_probe import identity
from writerprof.probes.writerprof_probe.format import host_name
from writerprof.record import pyspy, topology
from writerprof.record.pyspy import StackOptions
from writerprof.record.sampler import Sampler
from writerprof.run import directory, layout
from writerprof.units import format_size, parse_duration

PROBE_DIR = os.path.dirname(os.path.abspath(writerprof.probes.__file__))
INTERVAL_NS = parse_duration("50ms")  # the default sampling interval
_STATUS_EVERY_S = 0.5
# OpenMPI's mpirun does not pass the environment on to remote hosts; it
# forwards the variables this names (';'-separated), which record appends to.
OMPI_ENV_LIST = "OMPI_MCA_mca_base_env_list"


class CommandNotFound(WriterprofError):
    exit_code = 127  # as a shell says it


class CommandNotRunnable(WriterprofError):
    exit_code = 126


def resolve(command: list[str]) -> list[str]:
    """CMD as given after `--`, checked to name a program that exists."""
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


def probe_environment(run: Path, added: list[str], environ=os.environ, extra: dict | None = None,
                      interval_ns: int = INTERVAL_NS) -> dict:
    """CMD's environment: the probe first on PYTHONPATH, the run directory
    named, what a host other than this one needs to start its sampler agent,
    any what-if switches (`extra`) for the probe, and OpenMPI told to forward
    all of it."""
    env = dict(environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PROBE_DIR, env.get("PYTHONPATH")) if p)
    env[journal_format.RUN_ENV] = str(run.resolve())
    env[journal_format.LAUNCH_HOST_ENV] = host_name()
    env[journal_format.AGENT_PYTHON_ENV] = sys.executable
    env[journal_format.INTERVAL_ENV] = str(interval_ns)
    if added:
        env[journal_format.PROBES_ENV] = "\n".join(added)
    else:
        env.pop(journal_format.PROBES_ENV, None)
    env.update(extra or {})
    ours = sorted(k for k in env if k.startswith("WRITERPROF_")) + ["PYTHONPATH"]
    listed = [v for v in env.get(OMPI_ENV_LIST, "").split(";") if v]
    env[OMPI_ENV_LIST] = ";".join(listed + [k for k in ours if k not in listed])
    return env


def run(output: Path | None, command: list[str], *, interval_ns: int, probes: list[str], sampler: bool,
        stacks: StackOptions) -> int:
    """`writerprof record`'s session: a new run directory at output (None: a
    default name here), CMD recorded into it, the summary on stderr; CMD's
    exit status."""
    run_dir = directory.create(output, command, interval_ns=interval_ns, sampler=sampler, probes=probes,
                               env=identity.allowed_env(os.environ), stacks=stacks.settings())
    print(f"writerprof record: recording into {run_dir}", file=sys.stderr)
    started = time.monotonic()
    exit_status = record(run_dir, command, interval_ns, probes, sampler=sampler, stacks=stacks)
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
    env = probe_environment(run_dir, probes, extra=extra_env, interval_ns=interval_ns)
    with _ForwardedSignals() as signals:
        child = _start(run_dir, command, env, output, stacks)
        signals.follow(child.pid)
        status, stacks_taken = _follow(child, run_dir, host, interval_ns, sampler, stacks)
    directory.update_meta(run_dir, stacks=stacks_taken)
    exit_status = 128 - status if status < 0 else status
    directory.finish(run_dir, exit_status=exit_status,
                     ended_by="signal" if status < 0 else "exit",
                     signal=signal.Signals(-status).name if status < 0 else None)
    return exit_status


class _ForwardedSignals:
    """SIGINT and SIGTERM sent to record, passed on to CMD's process group
    while this is entered: CMD decides how to end, and record waits for it.
    One that comes while CMD is being started is passed on once it has."""

    def __enter__(self) -> _ForwardedSignals:
        self._group: int | None = None
        self._received: list[int] = []
        self._previous = {s: signal.signal(s, self._forward) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _forward(self, signum, frame) -> None:
        self._received.append(signum)
        if self._group is not None:
            try:
                os.killpg(self._group, signum)
            except ProcessLookupError:
                pass

    def follow(self, group: int) -> None:
        self._group = group
        for signum in self._received:  # came while CMD was being started
            os.killpg(group, signum)


def _start(run_dir: Path, command: list[str], env: dict, output, stacks: StackOptions) -> subprocess.Popen:
    """CMD started in a process group of its own, so that a signal reaches all
    of CMD, not only its leader. If it cannot be started, the run directory is
    finished as not started and CommandNotRunnable raised."""
    group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
    streams = {"stdout": output, "stderr": subprocess.STDOUT} if output is not None else {}
    try:
        return subprocess.Popen(command, env=env, **group, **streams)
    except OSError as exc:
        directory.update_meta(run_dir, stacks={**stacks.settings(), "taken": False,
                                               "reason": "the command did not start"})
        directory.finish(run_dir, exit_status=126, ended_by="not_started", signal=None)
        raise CommandNotRunnable(f"cannot run {command[0]}: {exc.strerror}") from None


def _follow(child: subprocess.Popen, run_dir: Path, host: str, interval_ns: int, sampler: bool,
            stacks: StackOptions) -> tuple[int, dict]:
    """Give CMD the terminal, follow it with py-spy and the sampler until it
    ends; its wait status, and what py-spy took. If record itself fails
    meanwhile, CMD is ended too: it must not outlive record."""
    started = time.monotonic()
    terminal = _give_terminal(child.pid)
    running = stack_recorder = None
    try:
        stack_recorder, stacks_taken = pyspy.start(child.pid, layout.stacks_dir(run_dir, host), stacks,
                                                   warn=_say)
        if sampler:
            running = Sampler(child.pid, layout.host_dir(run_dir, host), interval_ns / 1e9)
            running.start()
        status = _wait(child, running, started)
    finally:
        if terminal is not None:
            _take_terminal(terminal)
        if running is not None:
            running.stop()
        if child.returncode is None:
            _end(child)
        if stack_recorder is not None:  # CMD has ended: py-spy writes its file
            stacks_taken = stack_recorder.stop()
    return status, stacks_taken


def _say(line: str) -> None:
    print(f"writerprof record: no stacks: {line}", file=sys.stderr, flush=True)


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


def _wait(child: subprocess.Popen, sampler: Sampler | None, started: float) -> int:
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
