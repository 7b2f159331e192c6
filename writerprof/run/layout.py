"""Where things live in a run directory, and the formats of the files that
writerprof itself (not the probe) writes. The probe's journal format is in
writerprof.probes.writerprof_probe.format.

RUN/
  run.json                     the run: format, schema, command, clocks, exit
  hosts/HOST/
    topology.json              writerprof.record.topology.snapshot() of that host
    samples.bin                the sampler's fixed-size records (SAMPLE)
    threads.bin                its per-thread CPU and run-queue readings (THREADS_HEADER, then
                               THREAD_SAMPLE); absent in older runs, headless (version 1) in runs
                               from before the run-queue readings
    cpus.bin                   the host's CPU times while recorded threads waited (CPUS_HEADER,
                               then CPU_SAMPLE); absent in runs from before it
    sampled.jsonl              the sampler's rare records (kinds below)
    stalls.jsonl               stall snapshots (STALLS_FILE below), if a save stalled
    procs/PID-CREATED.events.jsonl, .chunks.bin   per probed process
    procs/PID-CREATED.shm.bin, .placement.bin     ... and its buffers' records, if it mapped any
    stacks/                    Python stacks of CMD's Python processes
      stacks.json              the stack sampler's index (STACKS_INDEX keys below; "by": "probe"
                               and no segments when the probe took them)
      PID-CREATED.stacks.txt   a process's own, if the probe took them (record's default;
                               writerprof_probe.stacks, writerprof.record.probestacks)
      PID-NNN.raw.gz           one segment: a run of process PID's own py-spy, its raw (collapsed)
                               output gzipped by record once written (PID-NNN.raw until then)
      NNN.raw.gz               (older runs) a segment of the py-spy that followed the whole tree
      py-spy.log               py-spy's own output, every attempt, for a look when it failed

A segment file (py-spy `record --format raw --pid PID`) has one line per
distinct stack, `FRAME;FRAME;...;FRAME COUNT\n`, root first, COUNT the samples
that had exactly that stack. The stack begins with the chain of processes from
CMD down to the one sampled (put at the root of every line by record, as
py-spy --subprocesses writes it), each `process PID:"CMDLINE"` (CMDLINE may hold `;`
but not `";`), then its thread (py-spy --threads: `thread (TID): NAME`, or
`thread (TID)` before Python named it; absent in older runs, whose threads
are summed), then its Python frames, each `FUNCTION (FILE:LINE)` with FILE
shortened by py-spy to its part below the sys.path entry it was found on
(`writerprof/repro/main.py`, `numpy/__init__.py`, `<frozen importlib._bootstrap>`);
with --native, native frames too. A sample of a process with no Python frame
(starting, exiting) is its process chain alone. Lines are
in no particular order; py-spy writes the file once, when it stops, and
record then compresses it (the chains repeat long command lines on every line).

stacks.json: py_spy (version), executable, command (a process's py-spy's argv
at the sparse rate, for pid PID, segment file PID-NNN.raw), full_rate_command
(at the full rate; null when the rates are not split), enabled, rate_hz (the
full rate: the processes a Python process started), sparse_rate_hz,
tree_rate_hz (the rate of the processes not at the full rate: sparse_rate_hz,
or rate_hz when the rates are not split), native,
idle (blocked threads sampled: the counts are wall-clock time), nonblocking,
segments: [{file, root_pid, pid, rate_hz (the segment's: the sparse, full,
busy or daemons' rate), stage (startup | after_startup | whole) and ended
(target_start | startup_cap | exec | daemon: the process exec'd a
program, a daemon | exit | record_stop), started_ns,
ended_ns (CLOCK_MONOTONIC, of the py-spy run), exit_status, samples, errors
(py-spy's count of failed reads), cpu_s (that py-spy's CPU time)}]; older
runs have segments of a py-spy for the whole tree too, without pid or stage. Rewritten whole as segments end; a
segment file missing from it (record killed) is still read. The loader
weights a segment's counts by rate_hz / its rate_hz, and takes a process
with segments of its own from those only.
"""

from __future__ import annotations

import struct
from pathlib import Path

from writerprof.probes.writerprof_probe import format as journal

FORMAT = "writerprof-run"
SCHEMA = journal.SCHEMA

RUN_FILE = "run.json"
HOSTS_DIR = journal.HOSTS_DIR
PROCS_DIR = journal.PROCS_DIR
TOPOLOGY_FILE = "topology.json"
SAMPLES_FILE = "samples.bin"
THREADS_FILE = "threads.bin"
CPUS_FILE = "cpus.bin"
SAMPLED_FILE = "sampled.jsonl"
AGENT_ERROR_FILE = "agent.error"  # a host's sampler agent failed: its traceback
# A host's part sent home to record, or not (writerprof.record.agent): {"to": ADDRESS,
# "registered": bool, "error": why it stays here (absent: it went home)}.
HOMECOMING_FILE = "homecoming.json"
# One JSON object a line per stall snapshot (record --stall; writerprof.record.snapshot):
# t_ns (when the stall was found), wall_ns, last_progress_ns, stall_ns, window_ns
# (the CPU window), machine, py_spy (version; None: no stacks), stacks_error,
# processes: [{pid, ppid, created_ns, comm, window_ns, state, role (its journal's; None:
# unprobed), cmdline, exe, stack_error, threads: [{tid, name, state, cpu,
# window_cpu_ns, window_delay_ns, syscall (None: running), syscall_name, syscall_args, wchan,
# python_name, frames: [{function, file, line}] innermost first}]}].
STALLS_FILE = "stalls.jsonl"
STACKS_DIR = journal.STACKS_DIR
STACKS_INDEX = "stacks.json"
STACKS_SUFFIX = ".raw"  # py-spy's own file; STACKS_SUFFIX + ".gz" once record has compressed it

# run.json keys: format, schema, writerprof_version, run_id (random hex, the
# recording's: a host's part carries it, format.RUN_ID_FILE), command (argv list),
# cwd, host, started_wall_ns, started_ns (CLOCK_MONOTONIC), ended_ns (null
# while recording), exit_status (null while recording; 128+N if killed by
# signal N), ended_by ("exit" | "signal" | "not_started"), signal (name or
# null), signals (each signal asking CMD to end that record received and
# passed on: {signal (name), wall_ns, at_ns (CLOCK_MONOTONIC)}, written as it
# came, so that it outlives a SIGKILL of record), slurm (null outside a Slurm
# job; else writerprof.record.slurm.context's: job_id, step_id, array_job_id,
# array_task_id, nodelist, nnodes, ntasks, tasks_per_node, time_limit_s,
# end_wall_ns), interval_ns, stall_ns (record --stall: 0 off; absent in runs before it), sampler (bool), probes (added specs), env (allow-listed),
# what_if (the probe's what-if variables set for CMD by contrast: name -> value),
# stacks (null in runs that predate it; else writerprof.record.stackoptions.StackOptions's
# settings: enabled, rate_hz, native, idle, nonblocking, sparse_rate_hz; and
# once recorded: taken (bool), reason (why none were taken, else null), py_spy
# (version), segments, samples, tree_rate_hz, full_rate_processes,
# full_rate_samples (their start-up segments), busy_cpu_processes,
# after_startup_processes; busy_rate_hz among the settings).

# One record per process per sampler tick (CLOCK_MONOTONIC t_ns). Counters are
# the kernel's for the whole process; write_bytes and wchar (/proc/PID/io) also
# hold those of the children it has reaped, as the kernel adds them in.
SAMPLE_FIELDS = (
    ("t_ns", "i8"), ("pid", "i4"), ("cpu", "i4"), ("threads", "i4"),
    ("utime_ns", "i8"), ("stime_ns", "i8"),
    ("voluntary_ctxt", "i8"), ("nonvoluntary_ctxt", "i8"),
    ("minflt", "i8"), ("majflt", "i8"), ("rss_bytes", "i8"),
    ("write_bytes", "i8"), ("wchar", "i8"),
)
SAMPLE = struct.Struct("<qiiiqqqqqqqqq")

# threads.bin and cpus.bin begin with a header (HEADER: magic, version, the
# record's size in bytes), so that a reader never takes one version's records
# for another's. A threads.bin without one is version 1 (60-byte records,
# THREAD_SAMPLE_V1_FIELDS): its first 8 bytes are a t_ns, which no magic can
# be (read as an i8, THREADS_MAGIC is ~155 years of CLOCK_MONOTONIC).
HEADER = struct.Struct("<8sII")
THREADS_MAGIC = b"WPTHREAD"
THREADS_VERSION = 2
CPUS_MAGIC = b"WPCPUTIM"
CPUS_VERSION = 1

# One record per thread of a sampled process whose CPU time (utime + stime)
# or run-queue delay grew since the sampler last read it: that CPU time was
# used, and that delay waited, in (since_ns, t_ns] (the previous tick's read
# of the process, or the thread's start for a thread first seen), and cpu is
# the CPU it last ran on at t_ns. A thread whose time and delay did not grow
# is not written (an idle thread weighs nothing); the first record of a tid
# counts from zero. The main thread's tid is the pid.
# name: the thread's comm as the kernel has it (UTF-8, at most 15 bytes, NUL-padded).
# run_delay_ns: /proc/PID/task/TID/schedstat's second field, the time the
# thread spent runnable on a run queue waiting for a CPU (counted as it gets
# one); nonvoluntary_ctxt: its status's nonvoluntary_ctxt_switches, read
# where the delay grew (a preemption puts it back on the queue: none without
# delay). Both -1 where the kernel has no schedstat (no CONFIG_SCHED_INFO).
THREAD_SAMPLE_V1_FIELDS = (
    ("t_ns", "i8"), ("since_ns", "i8"), ("pid", "i4"), ("tid", "i4"), ("cpu", "i4"),
    ("utime_ns", "i8"), ("stime_ns", "i8"), ("name", "S16"),
)
THREAD_SAMPLE_FIELDS = THREAD_SAMPLE_V1_FIELDS + (("run_delay_ns", "i8"), ("nonvoluntary_ctxt", "i8"))
THREAD_SAMPLE = struct.Struct("<qqiiiqq16sqq")

# One record per CPU of the host (/proc/stat's cpuN lines, clock-tick
# precision) per tick in which a sampled thread's run-queue delay grew, and
# the tick before it: who else held the CPUs while they waited. busy_ns:
# user, nice, system, irq and softirq time; idle_ns: idle and iowait; steal_ns:
# the hypervisor's. All cumulative since boot.
CPU_SAMPLE_FIELDS = (("t_ns", "i8"), ("cpu", "i4"), ("busy_ns", "i8"), ("idle_ns", "i8"), ("steal_ns", "i8"))
CPU_SAMPLE = struct.Struct("<qiqqq")


def header(magic: bytes, version: int, record: struct.Struct) -> bytes:
    return HEADER.pack(magic, version, record.size)


# sampled.jsonl kinds, each with t_ns and pid (0 for vmstat: the host):
#   seen       first sight of a descendant: ppid, created_ns (its start on
#              CLOCK_MONOTONIC, clock-tick precision: tells a reused pid apart),
#              cmdline (list), exe; a Python's pythonpath_has_probe (bool, or
#              None: its environment unreadable; writerprof.record.pythons)
#   exec       its comm changed since (an exec, as a rule): cmdline, exe,
#              pythonpath_has_probe again
#   affinity   the allowed CPUs at first sight and whenever they change: cpus (kernel list)
#   numa_maps  a shared-memory mapping's numa_maps line: address, file, pages
#              (dict node -> pages), huge (bool)
#   gone       first tick the process was no longer there
#   vmstat     the host's /proc/vmstat NUMA counters (writerprof.record.vmstat), pid 0:
#              counters (name -> value), on a slow tick when they changed
#   numa_sched a process's NUMA balancing counters from /proc/PID/sched (balancing on): counters
#   error      the first sampler tick that failed (later ones are only counted): error, traceback


def host_dir(run: Path, host: str) -> Path:
    return Path(run) / HOSTS_DIR / journal.safe_host(host)


def procs_dir(run: Path, host: str) -> Path:
    return Path(journal.procs_dir(str(run), host))


def stacks_dir(run: Path, host: str) -> Path:
    return host_dir(run, host) / STACKS_DIR
