"""Where things live in a run directory, and the formats of the files that
writerprof itself (not the probe) writes. The probe's journal format is in
writerprof.probes.writerprof_probe.format.

RUN/
  run.json                     the run: format, schema, command, clocks, exit
  hosts/HOST/
    topology.json              writerprof.topology.snapshot() of that host
    samples.bin                the sampler's fixed-size records (SAMPLE)
    sampled.jsonl              the sampler's rare records (kinds below)
    procs/PID-CREATED.events.jsonl, .chunks.bin   one pair per probed process
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
SAMPLED_FILE = "sampled.jsonl"

# run.json keys: format, schema, writerprof_version, command (argv list),
# cwd, host, started_wall_ns, started_ns (CLOCK_MONOTONIC), ended_ns (null
# while recording), exit_status (null while recording; 128+N if killed by
# signal N), ended_by ("exit" | "signal" | "not_started"), signal (name or
# null), interval_ns, sampler (bool), probes (added specs), env (allow-listed),
# what_if (the probe's what-if variables set for CMD by contrast: name -> value).

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

# sampled.jsonl kinds, each with t_ns and pid:
#   seen       first sight of a descendant: ppid, created_ns (its start on
#              CLOCK_MONOTONIC, clock-tick precision: tells a reused pid apart),
#              cmdline (list), exe
#   affinity   the allowed CPUs at first sight and whenever they change: cpus (kernel list)
#   numa_maps  a shared-memory mapping's numa_maps line: address, file, pages
#              (dict node -> pages), huge (bool)
#   gone       first tick the process was no longer there
#   error      the first sampler tick that failed (later ones are only counted): error, traceback


def host_dir(run: Path, host: str) -> Path:
    return Path(run) / HOSTS_DIR / journal.safe_host(host)


def procs_dir(run: Path, host: str) -> Path:
    return Path(journal.procs_dir(str(run), host))
