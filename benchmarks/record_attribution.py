"""Where a recording's CPU time and page faults go, counted where they
happen rather than as the difference of two noisy runs: one `writerprof
record` of the reproducer under `perf record` (software events, which this
machine's VM counts: cpu-clock and minor-faults), each sample put in one
part by its process, thread and call stack.

    python benchmarks/record_attribution.py [--saves 16] [--size 512MiB] [--frequency 1000] [--keep DIR]

Why not the difference: on this project's VM a plain run's system seconds
vary by 1.5 s from run to run (the kernel's copy of each write into the
page cache waits for the host to hand back freed memory), more than all of
record's cost, so a "target's extra CPU seconds" from differences is noise.
Counted in place, a part's samples are its own.

Python frames are named through Python's perf trampoline
(PYTHONPERFSUPPORT=1, Python 3.12 and later) and perf's DWARF unwinding;
with an older interpreter the probe's Python is not told apart from the
target's (a line says so) and only its threads and the interposer are.
perf 6.1 here unwinds a child process's stacks in some runs and not in
others (only the leaf frame): the run's count of target samples whose
stacks reached a Python frame is printed, and where it is low the probe's
Python parts are a lower bound.

The parts, the first that matches a sample:

  record/start-up  record's main thread before CMD's first sample: its interpreter, imports, run directory
  record/watch     record's main thread while CMD runs (its waits, signals, the stall watch)
  record/summary   record's main thread after CMD's last sample: the summary of the run
  record/sampler   record's /proc sampler thread (the thread of writerprof/record/sampler.py)
  record/threads   record's other threads (py-spy's driver, a snapshot)
  probe/stacks     the probe's stack-sampling thread (writerprof-stk) in CMD's processes
  probe/MODULE     CMD's samples with a frame of the probe's Python (probes/writerprof_probe/MODULE.py,
                   the one nearest the leaf): the system calls it makes are its own
  interposer       CMD's samples in the C interposer (libwriterprof_io.so) outside the probe's Python
  target           everything else in CMD's processes: the reproducer's own work
  perf-map         the measurement's own: Python writing its perf map (/tmp/perf-PID.map), which
                   the interposer journals as any file write; counted apart from every part
Printed per part: samples, CPU seconds (samples / frequency), milliseconds per
save, and page faults (a sample every FAULT_PERIOD faults); then the parts
that are record's and the probe's as a share of the target's CPU seconds.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, namedtuple

from common import writerprof

FAULT_PERIOD = 16
STACK_BYTES = 32768  # of each sample's user stack for DWARF unwinding: deep Python stacks need it
STACK_THREAD = "writerprof-stk"
HEADER = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s+(\d+\.\d+):\s+(\S+):\s*$")
PROBE_FRAME = re.compile(r"py::[^:]*:\S*/probes/writerprof_probe/(\w+)\.py")
RECORD_FRAME = re.compile(r"py::[^:]*:\S*/writerprof/record/session\.py")
SAMPLER_FRAME = re.compile(r"py::[^:]*:\S*/writerprof/record/sampler\.py")
INTERPOSER = "libwriterprof_io.so"
PYTHON_FRAME = "py::"  # the trampoline's name of a Python function's frame
UNWOUND_SHARE = 0.5  # of the target's samples with a Python frame, below which the probe's parts are a lower bound
PERF_MAP = "perf_map_write_entry"  # Python's trampoline writing /tmp/perf-PID.map: no part of any run
WRAPPER_HELPERS = ("clock_gettime", "getrusage", "[vdso]")  # what a wrapper calls besides the real function


def wrappers_of(library: str) -> frozenset[str]:
    """The functions the interposer exports (nm -D): the calls it wraps."""
    listed = subprocess.run(["nm", "-D", "--defined-only", library], capture_output=True, text=True).stdout
    return frozenset(line.split()[-1] for line in listed.splitlines() if line.strip())
Sample = namedtuple("Sample", "comm pid tid time event frames")  # frames leaf first


def samples(script: str):
    """Each sample of perf script's output (-F comm,pid,tid,time,event,ip,sym,dso)."""
    block: list[str] = []
    for line in script.splitlines() + [""]:
        if line.strip():
            block.append(line)
            continue
        if block:
            head = HEADER.match(block[0])
            if head:
                comm, pid, tid, when, event = head.groups()
                yield Sample(comm, int(pid), int(tid), float(when), event.split("/")[0],
                             [frame.strip() for frame in block[1:]])
            block = []


class Parts:
    """Which part a sample is counted in (the module's docstring). record's
    process is the one whose stacks pass through its session; its sampler
    thread the one whose stacks pass through the sampler (a stack unwound
    only part of the way, in a system call, still counts by its thread);
    CMD's life, from its first sample to its last, splits record's main
    thread into its start-up, its watch and its summary."""

    def __init__(self, parsed: list[Sample], wrappers: frozenset[str]):
        self.record = {s.pid for s in parsed if any(RECORD_FRAME.search(f) for f in s.frames)}
        self.sampler = {s.tid for s in parsed if s.pid in self.record and s.tid != s.pid
                        and any(SAMPLER_FRAME.search(f) for f in s.frames)}
        cmd = [s.time for s in parsed if s.pid not in self.record]
        self.cmd_start, self.cmd_end = (min(cmd), max(cmd)) if cmd else (0.0, 0.0)
        self.wrappers = wrappers

    def __call__(self, sample: Sample) -> str:
        if any(PERF_MAP in f for f in sample.frames):
            return "perf-map"  # the measurement's own: the trampoline's map written (through the interposer)
        if sample.pid in self.record:
            if sample.tid in self.sampler:
                return "record/sampler"
            if sample.tid != sample.pid:
                return "record/threads"
            if sample.time < self.cmd_start:
                return "record/start-up"
            return "record/summary" if sample.time > self.cmd_end else "record/watch"
        if sample.comm == STACK_THREAD:
            return "probe/stacks"
        for frame in sample.frames:  # leaf first: the probe's frame nearest the leaf names the part
            probe = PROBE_FRAME.search(frame)
            if probe:
                return f"probe/{probe.group(1)}"
        return "interposer" if self._interposers(sample.frames) else "target"

    def _interposers(self, frames: list[str]) -> bool:
        """Whether the interposer's own code made this sample: its frame
        nearest the leaf is one of its helpers (the journal's records, its
        file table), or one of its wrappers (write, fsync, ...) in anything
        but the real call it wraps (its clock and fault readings). The real
        call under a wrapper is the target's: the write it would make anyway."""
        for i, frame in enumerate(frames):
            if INTERPOSER in frame:
                name = frame.split()[1]
                if i == 0 or name not in self.wrappers:
                    return True
                return any(helper in frames[i - 1] for helper in WRAPPER_HELPERS)
        return False


def attribute(script: str, wrappers: frozenset[str]) -> tuple[Counter, Counter, int]:
    """CPU samples and fault samples by part (wrappers: the interposer's
    exported functions), and how many of the target's CPU samples have a
    Python frame (perf unwound their stacks that far)."""
    parsed = list(samples(script))
    part = Parts(parsed, wrappers)
    cpu, faults, unwound = Counter(), Counter(), 0
    for sample in parsed:
        name = part(sample)
        (cpu if sample.event == "cpu-clock" else faults)[name] += 1
        if name == "target" and sample.event == "cpu-clock" and any(PYTHON_FRAME in f for f in sample.frames):
            unwound += 1
    return cpu, faults, unwound


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=16)
    parser.add_argument("--size", default="512MiB")
    parser.add_argument("--frequency", type=int, default=1000, help="cpu-clock samples a second (default 1000)")
    parser.add_argument("--keep", default=None, help="keep perf's data and the run here")
    args = parser.parse_args()
    if shutil.which("perf") is None:
        sys.exit("record_attribution: perf not found (Debian: linux-perf)")
    if sys.version_info < (3, 12):
        print(f"Python {sys.version.split()[0]} has no perf trampoline: the probe's Python is counted in the target")
    where = args.keep or tempfile.mkdtemp(prefix="writerprof-attribution-")
    os.makedirs(where, exist_ok=True)
    run, data, files = (os.path.join(where, name) for name in ("run", "perf.data", "files"))
    shutil.rmtree(run, ignore_errors=True)
    os.makedirs(files, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}  # as installed: bytecode cached
    env["PYTHONPERFSUPPORT"] = "1"
    repro = writerprof() + ["repro", "--json", "--saves", str(args.saves), "--size", args.size, "--start-method",
                            "forkserver", "--main-imports", "numpy,matplotlib.pyplot", "--dir", files]
    try:
        subprocess.run(["perf", "record", "-q", "-e", f"cpu-clock/freq={args.frequency}/",
                        "-e", f"minor-faults/period={FAULT_PERIOD}/", "--call-graph", f"dwarf,{STACK_BYTES}",
                        "-o", data, "--", *writerprof(), "record", "-o", run, "--", *repro],
                       env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "comm,pid,tid,time,event,ip,sym,dso"],
                                capture_output=True, text=True, check=True).stdout
    finally:
        shutil.rmtree(files, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)
    from writerprof.record.interposer import LIBRARY

    cpu, faults, unwound = attribute(script, wrappers_of(LIBRARY))
    _print(cpu, faults, args.frequency, args.saves)
    share = unwound / max(cpu["target"], 1)
    print(f"target samples with a Python frame: {unwound} of {cpu['target']} ({100 * share:.0f}%)"
          + ("" if share >= UNWOUND_SHARE else ": perf unwound few stacks to Python this run, so the probe's "
             "Python parts are a lower bound (their samples are counted in the target)"))


def _print(cpu: Counter, faults: Counter, frequency: int, saves: int) -> None:
    load = os.getloadavg()
    print(f"{saves} saves of the reproducer under record; cpu-clock at {frequency} Hz, a fault sample every "
          f"{FAULT_PERIOD}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'part':<18} {'samples':>8} {'CPU s':>8} {'ms/save':>8} {'faults':>9}")
    for name in sorted(set(cpu) | set(faults), key=lambda n: (n == "target", n)):
        seconds = cpu[name] / frequency
        print(f"{name:<18} {cpu[name]:>8} {seconds:>8.3f} {1000 * seconds / saves:>8.1f} "
              f"{faults[name] * FAULT_PERIOD:>9}")
    target = cpu["target"] / frequency
    for side in ("record", "probe", "interposer"):
        seconds = sum(n for name, n in cpu.items() if name.split("/")[0] == side) / frequency
        print(f"{side}: {seconds:.3f} CPU s, {100 * seconds / target:.2f}% of the target's {target:.2f}")


if __name__ == "__main__":
    main()
