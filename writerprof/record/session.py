"""One recording session, as `writerprof record` and each run of `writerprof
contrast` make it: CMD resolved and started with the probe's environment, in
a process group of its own that record follows as a shell its job
(writerprof.record.parent: the terminal, the signals record gets, CMD's
stops); py-spy (writerprof.record.pyspy) and the /proc sampler
(writerprof.record.sampler) following it until it ends; the run directory
finished however CMD ended, with CMD's exit status (128+N if signal N killed
it); and the one-screen summary `writerprof record` ends with.

The terminal is CMD's while it runs: record writes nothing then (no live
status line, no warning), so CMD's lines and a caller's labels (contrast's
`[i/N] method repeat k`) stay as they were written. What record has to say
comes after CMD ended (Recorded.notes, then the summary).

record never fails because its run directory did: where the disk is full or
the directory is gone, the sampler and py-spy stop writing, run.json is
finished as far as it can be with an "incomplete" list saying what is
missing, and record still exits with CMD's status.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from writerprof import blas
from writerprof.analysis.hooks import unmatched_in  # the report's own; not the whole analysis (0.04 CPU s)
from writerprof.collector import collector_paused
from writerprof.errors import UsageError, WriterprofError
from writerprof.probes.writerprof_probe import format as journal_format
from writerprof.probes.writerprof_probe import identity
from writerprof.probes.writerprof_probe.format import host_name
from writerprof.record import interposer, launchers, parent, probestacks, procfs, slurm, topology
from writerprof.record.pythons import PROBE_DIR
from writerprof.record.stackoptions import BY_PROBE, StackOptions
from writerprof.record.sampler import Sampler, journaled_by
from writerprof.record.stall import STALL_NS, StallWatch
from writerprof.record.system import HOST
from writerprof.run import RunDirectoryError, directory, layout, meta
from writerprof.units import format_size, parse_duration, signal_name

# The default sampling interval. A tick costs ~0.5-0.7 ms of CPU on this
# project's 2-CPU VM whatever it reads (sampler.py: mostly its code and the
# kernel's being cold after the sleep): at 50 ms that was ~1.5% of a CPU, at
# 100 ms it is half that, and a second-long save still has ~10 samples.
INTERVAL_NS = parse_duration("100ms")
MIN_INTERVAL_NS = parse_duration("1ms")  # below it the sampler thread takes a CPU of its own
# After CMD's end, how long the processes it leaves (the resource tracker, a
# forkserver) have to end before they count as having outlived it.
_STRAGGLERS_S = 0.5
_LATE_SHARE = 0.1  # ticks over the interval, as a share of all, that make "the sampler fell behind"


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
                      interval_ns: int = INTERVAL_NS, command: list[str] = (), stall_ns: int = 0) -> dict:
    """CMD's environment: the probe first on PYTHONPATH, the run directory
    named, what a host other than this one needs to start its sampler agent
    (its interval and stall time),
    any what-if switches (`extra`) for the probe, and Open MPI's mpirun told
    to forward all of it to other hosts where it accepts that (launchers)."""
    env = dict(environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (PROBE_DIR, env.get("PYTHONPATH")) if p)
    env[journal_format.RUN_ENV] = str(run.resolve())
    env[journal_format.RUN_ID_ENV] = meta.run_id(run)  # a host's part carries it: merge checks it
    env[journal_format.LAUNCH_HOST_ENV] = host_name()
    env[journal_format.AGENT_PYTHON_ENV] = sys.executable
    env[journal_format.INTERVAL_ENV] = str(interval_ns)
    env[journal_format.STALL_ENV] = str(stall_ns)
    preload = interposer.preload(env)
    if preload:
        env["LD_PRELOAD"] = preload
    if added:
        env[journal_format.PROBES_ENV] = "\n".join(added)
    else:
        env.pop(journal_format.PROBES_ENV, None)
    env.update(extra or {})
    ours = forwarded(env)
    launchers.forward(env, ours, command)
    # Record's variables first: MPICH Hydra 5.0's -genvlist passes on every variable it lists but the
    # environment's last (tests/integration/test_launcher_lists.py).
    return {**{name: env[name] for name in ours}, **{k: v for k, v in env.items() if k not in ours}}


def forwarded(env: dict) -> list[str]:
    """The names of record's variables in CMD's environment, which a
    launcher is told to pass on to ranks on other hosts: every WRITERPROF_*,
    PYTHONPATH, and LD_PRELOAD where it holds the interposer."""
    return (sorted(k for k in env if k.startswith("WRITERPROF_")) + ["PYTHONPATH"]
            + ["LD_PRELOAD"] * (interposer.LIBRARY in env.get("LD_PRELOAD", "").split()))


def run(output: Path | None, command: list[str], *, interval_ns: int, probes: list[str], sampler: bool,
        stacks: StackOptions, save_files: list[str] = (), stall_ns: int = STALL_NS) -> int:
    """`writerprof record`'s session: a new run directory at output (None: a
    default name here), CMD recorded into it, the summary on stderr; CMD's
    exit status."""
    run_dir = directory.create(output, command, interval_ns=interval_ns, sampler=sampler, probes=probes,
                               env=identity.allowed_env(os.environ), stacks=stacks.settings(),
                               save_files=save_files, interposer=interposer.available(),
                               slurm=slurm.context(os.environ))
    print(f"writerprof record: recording into {run_dir}", file=sys.stderr)
    started = time.monotonic()
    recorded = record(run_dir, command, interval_ns, probes, sampler=sampler, stacks=stacks, stall_ns=stall_ns)
    for note in recorded.notes:
        print(f"writerprof record: {note}", file=sys.stderr)
    print(_summary(run_dir, time.monotonic() - started, recorded), file=sys.stderr)
    if recorded.killed_by is not None:  # as CMD ended: its shell, and Slurm, see the signal, not 128+N
        parent.end_as(recorded.killed_by)
    return recorded.exit_status


class Recorded:
    """How a recording went, as record() returns it once CMD has ended. (A
    plain class: dataclasses imports inspect, ~6 ms of CPU before CMD starts;
    the summary's numpy imports it once CMD has ended.)"""

    def __init__(self, exit_status: int):
        self.exit_status = exit_status  # CMD's, 128+N if signal N killed it
        self.signals: list[int] = []  # the signals asking CMD to end that record passed on (parent.ENDING)
        self.signals_at: list[dict] = []  # each as run.json's "signals" has it (name, wall and monotonic ns)
        self.killed_by: int | None = None  # the signal that ended CMD, if one did
        self.notes: list[str] = []  # py-spy's one-liners, held while CMD ran
        self.incomplete: list[str] = []  # what the run directory lacks, and why
        self.outlived: list[dict] = []  # processes still running after CMD ended
        self.sampler_ticks: dict | None = None  # the sampler thread's timing (Sampler.timing())
        self.cmd_usage: resource.struct_rusage | None = None  # CMD's (and its waited-for descendants'), from wait4
        self.stacks_threads_s = 0.0  # the CPU seconds of record's thread that drives py-spy (StackRecorder)
        self.came_home: dict | None = None  # the other hosts' parts (homecoming.Listener.collect), where it listened
        # The hosts whose parts did not come home, and the merge that brings them in (in run.json's
        # "homecoming" alone: once merged, a part is no longer missing).
        self.parts_missing: list[str] = []

    def recording_notes(self) -> list[str]:
        """What went wrong with the recording itself, a line each (not the
        report's warnings, which are diagnoses of the run)."""
        lines = [f"recording incomplete: {why}" for why in self.incomplete] + self.parts_missing
        ticks = self.sampler_ticks
        if ticks and ticks["ticks"] and ticks["late"] >= _LATE_SHARE * ticks["ticks"]:
            lines.append(f"the sampler fell behind its {_ms(ticks['interval_ns'])} interval: {ticks['late']} "
                         f"of {ticks['ticks']} ticks took longer (longest {_ms(ticks['longest_ns'])}): "
                         f"samples are further apart than asked")
        lines += [f"pid {p['pid']} ({_argv_text(p['cmdline'])}) outlived CMD: still running when the "
                  f"recording ended, not waited for" for p in self.outlived]
        return lines


def record(run_dir: Path, command: list[str], interval_ns: int, probes: list[str], sampler: bool = True,
           extra_env: dict | None = None, output=None, stacks: StackOptions | None = None,
           stall_ns: int = 0) -> Recorded:
    """Run CMD under the probe into the created run_dir, sampling it, and
    finish the run directory however CMD ends (and whatever became of the run
    directory meanwhile). output: a file for CMD's stdout and stderr (else
    ours). stacks: how py-spy samples CMD's Python stacks (default:
    StackOptions(), 100 Hz); what was taken is written into run.json's "stacks".
    stall_ns: record --stall's time (writerprof.record.stall), 0 for none."""
    stacks = StackOptions() if stacks is None else stacks
    # What this process spent before (record's start-up: imports, arguments), and its
    # children so far (none for record; contrast's earlier runs).
    before = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    host = host_name()
    recorded = Recorded(exit_status=-1)
    try:
        directory.write_topology(run_dir, host, topology.snapshot())
    except RunDirectoryError as exc:
        recorded.incomplete.append(f"no topology: {exc}")
    home = None
    if launchers.may_reach_other_hosts(command, os.environ):  # their parts come home to a listener of this run's
        from writerprof.record import homecoming  # (sockets, HMAC: ~8 ms of start-up, only where it is used)

        home = homecoming.Listener.open(run_dir, meta.run_id(run_dir), host)
    env = probe_environment(run_dir, probes, extra={**(extra_env or {}), **(
        probestacks.environment(stacks) if stacks.by_probe else {}), **(home.environment() if home else {})},
        interval_ns=interval_ns, command=command, stall_ns=stall_ns if sampler else 0)
    ending = _Ending(run_dir, recorded)
    with parent.Forwarding(on_ending=ending.received) as signals:
        child = _start(run_dir, command, env, output, stacks, recorded)
        signals.follow(child.pid)
        status, stacks_taken = _follow(child, run_dir, host, interval_ns, sampler, stacks, recorded, signals,
                                       ending, stall_ns, home)
    if recorded.came_home is not None:
        notes, recorded.parts_missing = homecoming.said(recorded.came_home, str(run_dir))
        recorded.notes += notes
    recorded.signals = list(signals.received)
    recorded.exit_status = 128 - status if status < 0 else status
    recorded.killed_by = -status if status < 0 else None
    try:
        directory.finish(run_dir, exit_status=recorded.exit_status,
                         ended_by="signal" if status < 0 else "exit",
                         signal=signal_name(-status) if status < 0 else None,
                         signals=recorded.signals_at, stacks=stacks_taken, incomplete=recorded.incomplete, outlived_cmd=recorded.outlived,
                         sampler_ticks=recorded.sampler_ticks, record_cpu=_record_cpu(*before, recorded),
                         stall_ns=stall_ns if sampler else 0, homecoming=recorded.came_home)
    except RunDirectoryError as exc:
        recorded.incomplete.append(f"run.json not finished: {exc}")
    return recorded


class _Ending:
    """record's own part of an end that a signal asks for, done at once
    (within ms) while CMD has its grace period: under Slurm, the batch step
    may SIGKILL record a second after the SIGTERM, and then what record
    holds in memory is lost. So the signal goes into run.json as it comes,
    and the sampler writes what it holds; the rest of the run is already
    on disk in the journals."""

    def __init__(self, run_dir: Path, recorded: Recorded):
        self.run_dir = run_dir
        self.recorded = recorded
        self.sampler: Sampler | None = None

    def received(self, signum: int) -> None:
        self.recorded.signals_at.append({"signal": signal_name(signum), "wall_ns": time.time_ns(),
                                         "at_ns": time.monotonic_ns()})
        try:
            # (If this handler came in the middle of another run.json write, that one may
            # replace it; finish() writes them all again.)
            directory.update_meta(self.run_dir, signals=self.recorded.signals_at)
        except RunDirectoryError:
            pass  # said at finish, if that fails too
        self._flush()

    def _flush(self) -> None:
        if self.sampler is not None:
            self.sampler.flush()


def _start(run_dir: Path, command: list[str], env: dict, output, stacks: StackOptions,
           recorded: Recorded) -> subprocess.Popen:
    """CMD started in a process group of its own, so that a signal reaches all
    of CMD, not only its leader. If it cannot be started, the run directory is
    finished as not started and CommandNotRunnable raised; if only record's
    additions to its environment keep it from starting (E2BIG: execlimit),
    it is started without them (and as given: record's names in a launcher's
    list on its command line (launchers.on_command_line) would name variables
    it has not), unprobed and sampled, and said so: the probe never costs the
    target its run.

    CMD gets the fds it would get without record: those record inherited
    (close_fds=False: a make jobserver's, a scheduler's), not record's own
    (Python opens every file close-on-exec), and a standard fd that was
    closed stays closed (writerprof.streams holds it close-on-exec)."""
    group = {"process_group": 0} if sys.version_info >= (3, 11) else {"preexec_fn": os.setpgrp}
    streams = {"stdout": output, "stderr": subprocess.STDOUT} if output is not None else {}
    # A list of variables on a launcher's command line outranks the environment's: record's names join it.
    listed, options = launchers.on_command_line(command, forwarded(env))
    try:
        child = subprocess.Popen(listed, env=env, close_fds=False, **group, **streams)
    except OSError as exc:
        failure = exc
    else:
        if options:
            recorded.notes.append(f"record added its variables to the list on CMD's command line "
                                  f"({'; '.join(options)}), which outranks the environment: ranks on other "
                                  f"hosts get them")
        return child
    from writerprof.record import execlimit  # (only for a command that did not start)

    why = execlimit.over_by_additions(shutil.which(command[0]) or command[0], command, env, os.environ) if (
        failure.errno == execlimit.E2BIG) else None
    if why:
        try:
            child = subprocess.Popen(command, close_fds=False, **group, **streams)
        except OSError as exc:
            failure = exc
        else:
            recorded.incomplete.append(f"CMD ran without the probe: {why}")
            return child
    try:
        directory.finish(run_dir, exit_status=126, ended_by="not_started", signal=None,
                         stacks={**stacks.settings(), "taken": False, "reason": "the command did not start"})
    except RunDirectoryError:
        pass  # the command's failure is the one to say
    raise CommandNotRunnable(f"cannot run {command[0]}: {failure.strerror}") from None


def _follow(child: subprocess.Popen, run_dir: Path, host: str, interval_ns: int, sampler: bool,
            stacks: StackOptions, recorded: Recorded, signals: parent.Forwarding,
            ending: _Ending, stall_ns: int = 0, home=None) -> tuple[int, dict]:
    """Follow CMD with py-spy and the sampler until it ends; its wait status,
    and what py-spy took (what record has to say, and what could not be
    written, into `recorded`). If record itself fails meanwhile, CMD is
    ended too: it must not outlive record. Once CMD has ended, the other
    hosts' agents are told at once (home: a homecoming.Listener, or None),
    to send their parts while record finishes its own."""
    running = stack_recorder = None
    procs = layout.procs_dir(run_dir, host)
    tree = procfs.ProcessTree(HOST, child.pid)  # looked at by py-spy's watch and the sampler, once for both
    try:
        if stacks.by_probe:
            stacks_taken = _probe_index(run_dir, host, stacks, recorded)
        else:
            from writerprof.record import pyspy  # (py-spy's driver, and ctypes for ptrace, only where it is used)

            stack_recorder, stacks_taken = pyspy.start(
                child.pid, layout.stacks_dir(run_dir, host), stacks,
                warn=lambda line: recorded.notes.append(f"no stacks: {line}"), journals=procs, tree=tree)
        if sampler:
            try:
                running = Sampler(child.pid, layout.host_dir(run_dir, host), interval_ns / 1e9, tree=tree,
                                  stall_ns=stall_ns)
            except OSError as exc:
                recorded.incomplete.append(f"no samples: cannot open the sampler's files: {exc.strerror or exc}")
            else:
                running.start()
                ending.sampler = running
        status = _wait(child, recorded, signals)
    finally:
        if child.returncode is None:
            _end(child)
        if home is not None:
            home.end()
        recorded.outlived = _outliving(procs, child.pid, running)
        ending.sampler = None
        if running is not None:
            running.stop()
            recorded.sampler_ticks = running.timing()
            if running.write_error:
                recorded.incomplete.append(f"samples end early: {running.write_error}")
            if running.stalls is not None:
                _stall_notes(running.stalls, host, recorded)
        if home is not None:  # before the stacks are counted: the other hosts' are in their parts
            recorded.came_home = home.collect()
        if stack_recorder is not None:  # CMD has ended: py-spy writes its file
            # py-spy follows what is left of the tree: once that is only what outlived CMD, it is stopped.
            stacks_taken = stack_recorder.stop(grace_s=0.0 if recorded.outlived else None)
            recorded.stacks_threads_s = stack_recorder.thread_cpu_s
            if stack_recorder.write_error:
                recorded.incomplete.append(f"stacks end early: {stack_recorder.write_error}")
        elif stacks.by_probe and stacks_taken.get("reason") is None:
            stacks_taken = probestacks.outcome(run_dir, stacks)
        tree.close()
    return status, stacks_taken


def _stall_notes(stalls: StallWatch, host: str, recorded: Recorded) -> None:
    """What record says after CMD of the stalls it took snapshots of (and of one it could not write)."""
    where = layout.host_dir(Path(), host) / layout.STALLS_FILE
    recorded.notes += [f"no save made progress for {taken['stalled_ns'] / 1e9:.1f} s: a snapshot of "
                       f"{taken['processes']} processes is in {where} (the report names the wait)"
                       for taken in stalls.taken]
    if stalls.error:
        recorded.incomplete.append(stalls.error)


def _probe_index(run_dir: Path, host: str, stacks: StackOptions, recorded: Recorded) -> dict:
    """stacks.json for the probe's stacks; the outcome so far (its reason
    if the index could not be written: the stacks are then not read)."""
    try:
        probestacks.write_index(layout.stacks_dir(run_dir, host), stacks)
    except OSError as exc:
        reason = f"cannot write {layout.STACKS_INDEX}: {exc.strerror or exc}"
        recorded.incomplete.append(f"no stacks: {reason}")
        return {**stacks.settings(), "taken": False, "reason": reason}
    return {**stacks.settings(), "taken": False, "reason": None}


def _wait(child: subprocess.Popen, recorded: Recorded, signals: parent.Forwarding) -> int:
    """CMD's wait status, and its CPU time into recorded.cmd_usage: a plain
    wait4, no wake-ups that take CPU from CMD, nothing on its terminal."""
    status, recorded.cmd_usage = signals.wait(child.pid)
    child.returncode = os.waitstatus_to_exitcode(status)
    return child.returncode


def _cpu_s(usage: resource.struct_rusage) -> float:
    return usage.ru_utime + usage.ru_stime


def _record_cpu(own_before: resource.struct_rusage, children_before: resource.struct_rusage,
                recorded: Recorded) -> dict:
    """What record itself cost in CPU seconds, by part (run.json's
    "record_cpu"; benchmarks/record_overhead.py prints it): its process
    before the recording (record's imports) and during it, its sampler
    thread, its py-spy thread, and the py-spys it ran (its children's time
    since less CMD's; the summary's reading of the run comes after, and is
    not in it)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler = (recorded.sampler_ticks or {}).get("cpu_ns")
    return {"record_s": round(_cpu_s(own) - _cpu_s(own_before), 4), "before_cmd_s": round(_cpu_s(own_before), 4),
            "sampler_s": None if sampler is None else round(sampler / 1e9, 4),
            "stacks_threads_s": round(recorded.stacks_threads_s, 4),
            "cmd_s": None if recorded.cmd_usage is None else round(_cpu_s(recorded.cmd_usage), 4),
            "py_spy_s": None if recorded.cmd_usage is None else
            round(_cpu_s(children) - _cpu_s(children_before) - _cpu_s(recorded.cmd_usage), 4)}


def _argv_text(argv: list[str], width: int = 60) -> str:
    """A command line on one line of the summary, shortened."""
    import shlex  # (only for a process that outlived CMD)

    text = shlex.join(argv).replace("\n", "\\n")
    return (text if len(text) <= width else text[:width - 3] + "...") or "?"


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3g} ms"


def _outliving(procs: Path, cmd_pid: int, sampler: Sampler | None) -> list[dict]:
    """The processes CMD left running (the probed ones, and those the sampler
    followed), once those that end with CMD (a resource tracker, a forkserver)
    have had a moment to: pid and command line of each."""
    deadline = time.monotonic() + _STRAGGLERS_S
    while True:
        known = _journaled_pids(procs)
        if sampler is not None:
            known.update((pid, None) for pid in sampler.status().alive if pid not in known)
        alive = sorted(pid for pid, created_ns in known.items()
                       if pid != cmd_pid and _running(pid, created_ns))
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    return [{"pid": pid, "cmdline": identity.redact_argv(procfs.read_cmdline(HOST, pid))} for pid in alive]


def _journaled_pids(procs: Path) -> dict[int, int | None]:
    """pid -> created_ns of each journal in procs (the latest of a pid)."""
    found: dict[int, int | None] = {}
    try:
        names = os.listdir(procs)
    except OSError:
        return found
    for name in names:
        pid, _, created = name.removesuffix(journal_format.EVENTS_SUFFIX).partition("-")
        if name.endswith(journal_format.EVENTS_SUFFIX) and pid.isdigit() and created.isdigit():
            found[int(pid)] = max(int(created), found.get(int(pid)) or 0)
    return found


def _running(pid: int, created_ns: int | None) -> bool:
    stat = procfs.read_stat(HOST, pid)
    if stat is None or stat.state in "ZX":
        return False
    return created_ns is None or journaled_by(stat.start_ticks, created_ns)  # not a reused pid


def _end(child: subprocess.Popen) -> None:
    try:
        os.killpg(child.pid, signal.SIGTERM)
        child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    except ProcessLookupError:
        pass


def _summary(run_dir: Path, wall_s: float, done: Recorded) -> str:
    """One screen: what was recorded, and what could not be."""
    load = _loader()
    head = [f"writerprof record: {run_dir}", f"  command exited   {done.exit_status}",
            f"  wall time        {wall_s:.2f} s"]
    try:
        recorded = load(run_dir)
    except (WriterprofError, OSError) as exc:  # a run directory gone or damaged under us
        lines = head + [f"  recording problems {len(done.recording_notes()) + 1}",
                        f"    cannot read the recording: {exc}"]
        return "\n".join(lines + [f"    {note}" for note in done.recording_notes()])
    codes = {name: code for code, name in recorded.phase_names.items()}
    phase = recorded.chunk_columns["phase"]  # counts and sums: the columns, not Run.chunks's sorted copy
    written = recorded.chunk_columns["bytes"][phase == codes["write"]]
    starts = [e["data"] for e in recorded.events_of("process_start") if e["data"].get("started")]
    # Where the interposer saw the files: one save per checkpoint file (run.files), whoever wrote it.
    from writerprof.run import files, roles  # numpy's, as load's: after CMD

    writers = len(roles.writer_starts(recorded))
    uploaded = _uploads(recorded)
    saves = (len(files.checkpoint_spans(recorded)) + len(uploaded) if len(recorded.io)
             else int((phase == codes["save"]).sum()) or len(starts))
    unmatched = unmatched_in(recorded)
    problems = done.recording_notes()
    problems += [f"--probe {spec} matched nothing: {why}" for spec, why in unmatched.items()]
    problems += [f"probe in pid {e['pid']}: {e['data'].get('where')}: {e['data'].get('error')}"
                 for e in recorded.events_of("error")]
    problems += [f"hook {e['data'].get('spec')} failed in pid {e['pid']}: {e['data'].get('reason')}"
                 for e in recorded.events_of("hook") if e["data"].get("status") == "failed"]
    problems += recorded.losses
    problems += launchers.unprobed_ranks(recorded)
    from writerprof.analysis.world import world  # the report's own
    from writerprof.render import world as world_text

    job = world(recorded)
    if (ranks := world_text.headline(job)) is not None:  # first: what the rest of the summary is of
        head.insert(1, f"  world            {ranks}")
    from writerprof.analysis.unprobed import not_probed  # (the report's own, as unmatched_in)
    from writerprof.render.format import not_probed as not_probed_line

    unprobed = not_probed(recorded)
    problems += [not_probed_line(entry) for entry in unprobed]
    pythons = sum(entry["processes"] for entry in unprobed)
    lines = head + [
        f"  processes        {len(recorded.processes)} probed, "
        f"{len({int(s['pid']) for s in recorded.sampled if s['kind'] == 'seen'})} sampled"
        + (f", {pythons} Python process{'es' * (pythons != 1)} not probed" if pythons else ""),
        f"  writers started  {writers} (of {len(starts)} processes started; {len(starts) - writers} wrote no "
        f"checkpoint file)"
        if writers != len(starts) else f"  writers started  {writers}",
        f"  saves            {saves}" + (f" (CMD cut short by {cut}: the report tells complete saves from "
                                             f"interrupted ones)" if saves and (cut := _cut_signal(recorded.meta))
                                             else "") + (f", {over}" if (over := world_text.seen_only(job)) else ""),
        f"  file writes      {len(written)}, {format_size(int(written.clip(0).sum()))}",
    ]
    if uploaded:
        lines.append(f"  uploads          {len(uploaded)}, {format_size(sum(u.bytes for u in uploaded))}")
    if recorded.meta.get("probes"):
        lines.append(f"  probes           {len(recorded.meta['probes'])} given, {len(unmatched)} matched nothing")
    lines.append(f"  recording problems {len(problems) or 'none'}")
    lines += [f"    {p}" for p in problems[:5]]
    if len(problems) > 5:
        lines.append(f"    ... and {len(problems) - 5} more")
    lines.append(f"  diagnoses        {_diagnoses(recorded)}")  # of the run, not of the recording: report's
    taken = recorded.meta.get("stacks") or {}
    if taken.get("taken") and taken.get("by") == BY_PROBE:
        lines.append(f"  stacks           {taken.get('samples', 0)} samples by the probe in "
                     f"{taken.get('processes', 0)} processes: the first {journal_format.FULL_RATE_STARTS} writers of each parent "
                     f"at {taken.get('rate_hz')} Hz in start-up, the rest at {taken.get('tree_rate_hz')} Hz or less "
                     f"while idle")
    elif taken.get("taken"):
        own = taken.get("full_rate_processes") or 0
        where = (f"{own} process{'es' * (own != 1)} started by Python at {taken.get('rate_hz')} Hz in start-up, "
                 f"the rest at "
                 f"{taken.get('tree_rate_hz')} Hz" if taken.get("tree_rate_hz", taken.get("rate_hz")) !=
                 taken.get("rate_hz") else f"at {taken.get('rate_hz')} Hz")
        lines.append(f"  stacks           {taken.get('samples', 0)} samples, {where} "
                     f"(py-spy {taken.get('py_spy') or '?'})")
    else:
        lines.append(f"  stacks           none: {taken.get('reason') or 'not recorded'}")
    if job["partial"]:  # a report of this run alone is of the part recorded, not of the job
        rest = world_text.to_complete(str(run_dir), str(run_dir.resolve()))
        lines.append(f"  next:            the job is not whole here: {rest}; `writerprof report {run_dir}` reports the "
                     f"part recorded, as partial")
    else:
        lines.append(f"  next:            writerprof report {run_dir}")
    return "\n".join(lines)


def _uploads(recorded) -> list:
    """The run's uploads, where it made any file or network call (the analysis imported only then)."""
    if not len(recorded.io):
        return []
    from writerprof.analysis import uploads  # (the report's own: an upload is a save)

    return uploads.checkpoints(recorded)


def _cut_signal(meta: dict) -> str | None:
    from writerprof.analysis.ending import cut_signal  # the report's own word on a cut

    return cut_signal(meta)


def _diagnoses(recorded) -> str:
    """The run's diagnoses, counted as `report` lists them (its analysis of the run as recorded)."""
    if not len(recorded.processes):  # nothing journaled, nothing to diagnose (and the analysis not imported)
        return "none"
    from writerprof.analysis.summary import diagnosed

    try:
        found = diagnosed(recorded)
    except Exception as exc:  # report would fail too: one line here, and record still exits with CMD's status
        return f"not counted: {type(exc).__name__}: {exc}"
    if not found:
        return "none"
    warnings = sum(d["severity"] == "warning" for d in found)
    return f"{len(found)} ({warnings} warning{'s' * (warnings != 1)}): writerprof report lists them"


def _loader():
    """writerprof.run.load, for the summary: its numpy imported (if it is not
    yet) with one BLAS thread (writerprof.blas), and without the cyclic
    collector's passes over the objects the import makes (~5 of its ~48 ms of CPU)."""
    with blas.one_thread(), collector_paused():
        from writerprof.run import load
    return load
