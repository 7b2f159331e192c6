"""What `writerprof record` costs the recorded, variant by variant, against
the reproducer alone and against other tools, on the workloads of issue 16.

    python benchmarks/record_overhead.py [--cycles 5] [--quick] [--workloads disk,cpu]
                                         [--variants default,no-stacks,...] [--meter-py-spy] [--scratch DIR]

Workloads (`writerprof repro --json --saves 4 --size 512MiB --start-method
forkserver --main-imports numpy,matplotlib.pyplot`, files in a temporary
directory on disk):

  disk   as above: fsync, I/O-bound
  cpu    the same with --generator random --gen-threads 2: the producer's
         generation keeps both CPUs of a small machine busy

Variants, each a separate run of the reproducer:

  plain       the reproducer alone
  default     under `writerprof record` (probe, sampler, stacks as recorded by default)
  one-rate    `record --sparse-stack-rate 100`: one py-spy for the whole tree at 100 Hz (the
              default before issue 16)
  no-stacks   `record --no-stacks`
  no-sampler  `record --no-sampler` (stacks still taken)
  py-spy      `py-spy record --subprocesses --idle --nonblocking --rate 100` alone
              (what record ran by default before issue 16)
  dftracer    the pip package's LD_PRELOAD tracer (DFTRACER_ENABLE=1), when
              `dftracer` is importable; left out otherwise

A cycle runs every variant of a workload once, in an order rotated from
cycle to cycle, so that drift of a shared machine falls on all alike. Per
variant: the median over cycles of the ratio of `mean_throughput_gib_s`
(variant / plain of the same cycle) and the median of the extra CPU seconds
(variant - plain, and as a share of plain's): user + system time of every process of the run, the
recorder's and the tool's included. This script is made the child subreaper
(prctl), so that processes orphaned in the run (the forkserver and its
writers once the reproducer's main process has gone) are reaped here and
counted in RUSAGE_CHILDREN too. The CPU seconds are the steadier signal on a
loaded machine; steadier still, for the record variants that take stacks,
the CPU seconds of record's py-spys alone (py-spy CPU s: each py-spy is run
through a meter that reports its rusage), which do not depend on how the
reproducer itself fared in that run (with --meter-py-spy only: the meter
is a Python process per py-spy, whose start-up the run's CPU seconds then
include, several for default against one for one-rate). --quick: one workload cycle of three variants (plain,
default, no-stacks), to check a change in a minute.

Targets (issue 16): default median loss < 1% on disk, <= 3% on cpu, in CPU
seconds as well as throughput.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from common import children_cpu_s, writerprof

REPRO = ["repro", "--json", "--saves", "4", "--size", "512MiB", "--start-method", "forkserver",
         "--main-imports", "numpy,matplotlib.pyplot"]
WORKLOADS = {"disk": [], "cpu": ["--generator", "random", "--gen-threads", "2"]}
VARIANTS = ("plain", "default", "one-rate", "no-stacks", "no-sampler", "py-spy", "dftracer")
QUICK = ("plain", "default", "no-stacks")
_PR_SET_CHILD_SUBREAPER = 36
METER = False  # --meter-py-spy


def py_spy() -> str | None:
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    return beside if os.path.exists(beside) else shutil.which("py-spy")


def dftracer_preload() -> str | None:
    """The LD_PRELOAD library of the dftracer pip package, if installed."""
    spec = importlib.util.find_spec("dftracer")
    if spec is None or not spec.submodule_search_locations:
        return None
    for where in spec.submodule_search_locations:
        library = os.path.join(where, "lib64", "libdftracer_preload.so")
        if os.path.exists(library):
            return library
    return None


def command(variant: str, workload: str, scratch: str) -> tuple[list[str], dict]:
    """The argv and environment of one run of a variant."""
    repro = writerprof() + REPRO + ["--dir", tempfile.mkdtemp(prefix="files-", dir=scratch)] + WORKLOADS[workload]
    env = dict(os.environ)
    if variant == "plain":
        return repro, env
    if variant in ("default", "one-rate", "no-stacks", "no-sampler"):
        run = tempfile.mkdtemp(prefix=f"run-{variant}-", dir=scratch)
        options = {"default": [], "one-rate": ["--sparse-stack-rate", "100"], "no-stacks": ["--no-stacks"],
                   "no-sampler": ["--no-sampler"]}[variant]
        return writerprof() + ["record", "-o", run, *options, "--"] + repro, env
    if variant == "py-spy":
        out = os.path.join(tempfile.mkdtemp(prefix="py-spy-", dir=scratch), "stacks.raw")
        return [py_spy(), "record", "--subprocesses", "--idle", "--nonblocking", "--rate", "100", "--format",
                "raw", "--output", out, "--"] + repro, env
    if variant == "dftracer":
        logs = tempfile.mkdtemp(prefix="dftracer-", dir=scratch)
        env.update(LD_PRELOAD=dftracer_preload(), DFTRACER_ENABLE="1", DFTRACER_INIT="PRELOAD",
                   DFTRACER_LOG_FILE=os.path.join(logs, "trace"), DFTRACER_DATA_DIR="all",
                   DFTRACER_INC_METADATA="1")
        return repro, env
    raise ValueError(variant)


# Stands in for py-spy under `record` (WRITERPROF_PY_SPY): runs it, passes on
# the signals record sends, and adds its CPU seconds to a file.
_PY_SPY_METER = """#!{python}
import os, signal, subprocess, sys
spy = subprocess.Popen([{py_spy!r}] + sys.argv[1:])
for signum in (signal.SIGINT, signal.SIGTERM):
    signal.signal(signum, lambda n, _: spy.send_signal(n))
while True:
    try:
        _, status, usage = os.wait4(spy.pid, 0)
        break
    except InterruptedError:
        continue
with open({log!r}, "a") as log:
    log.write(f"{{usage.ru_utime + usage.ru_stime}}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def py_spy_meter(scratch: str) -> tuple[str, str]:
    """(the meter's path, the file it adds py-spy's CPU seconds to)."""
    log, meter = os.path.join(scratch, "py-spy-cpu.log"), os.path.join(scratch, "py-spy-meter")
    with open(meter, "w") as f:
        f.write(_PY_SPY_METER.format(python=sys.executable, py_spy=py_spy(), log=log))
    os.chmod(meter, 0o755)
    return meter, log


def _spy_cpu_s(log: str) -> float:
    try:
        with open(log) as f:
            return sum(float(line) for line in f if line.strip())
    except FileNotFoundError:
        return 0.0


def _reap_orphans(deadline_s: float = 30.0) -> None:
    """Wait for the processes of the run reparented to us (we are the subreaper)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            time.sleep(0.02)


def run_once(variant: str, workload: str, scratch: str) -> tuple[float, float, float]:
    """(mean_throughput_gib_s, CPU seconds of every process of the run, of
    record's py-spys alone)."""
    argv, env = command(variant, workload, scratch)
    meter, log = py_spy_meter(scratch) if METER and py_spy() else (None, "")
    if meter and variant in ("default", "one-rate", "no-sampler"):
        env["WRITERPROF_PY_SPY"] = meter
    spy_before = _spy_cpu_s(log)
    before = children_cpu_s()
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out, _ = child.communicate()
    _reap_orphans()
    cpu = children_cpu_s() - before
    if child.returncode != 0:
        raise RuntimeError(f"{variant} {workload}: exit status {child.returncode}: {' '.join(argv)}")
    summary = next(json.loads(line) for line in out.splitlines()
                   if line.startswith("{") and json.loads(line).get("record") == "summary")
    return summary["mean_throughput_gib_s"], cpu, _spy_cpu_s(log) - spy_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one cycle of plain, default and no-stacks")
    parser.add_argument("--workloads", default="disk,cpu", help="comma-separated: disk, cpu")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, plain always included")
    parser.add_argument("--scratch", default=None, help="where run directories and files go (default: a temporary "
                        "directory on disk, removed afterwards)")
    parser.add_argument("--meter-py-spy", action="store_true",
                        help="run record's py-spys through a meter of their CPU seconds (the meter, a Python "
                        "process per py-spy, adds its own start-up to the run's CPU seconds)")
    args = parser.parse_args()
    global METER
    METER = args.meter_py_spy
    variants = list(QUICK) if args.quick else ["plain"] + [v for v in args.variants.split(",") if v and v != "plain"]
    cycles = 1 if args.quick else args.cycles
    if "py-spy" in variants and py_spy() is None:
        print("py-spy not found: left out")
        variants.remove("py-spy")
    if "dftracer" in variants and dftracer_preload() is None:
        print("dftracer not installed (pip install dftracer): left out")
        variants.remove("dftracer")
    workloads = [w for w in args.workloads.split(",") if w]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("cannot become the child subreaper: orphaned processes' CPU time is not counted")
    load = os.getloadavg()
    print(f"{cycles} cycles of {', '.join(variants)}; workloads {', '.join(workloads)}; {os.cpu_count()} CPUs, "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; Python {sys.version.split()[0]}", flush=True)
    scratch = tempfile.mkdtemp(prefix="writerprof-record-overhead-", dir=args.scratch)
    results = {w: {v: [] for v in variants} for w in workloads}
    try:
        for cycle in range(cycles):
            for workload in workloads:
                shift = cycle % len(variants)
                for variant in variants[shift:] + variants[:shift]:
                    results[workload][variant].append(run_once(variant, workload, scratch))
                plain_gib, plain_cpu, _ = results[workload]["plain"][-1]
                line = " ".join(f"{v} {g / plain_gib:.3f} {c - plain_cpu:+.2f}s" + (f" (py-spy {p:.2f}s)" if p else "")
                                for v in variants[1:] for g, c, p in results[workload][v][-1:])
                print(f"cycle {cycle + 1} {workload}: plain {plain_gib:.3f} GiB/s {plain_cpu:.2f} CPU s; {line}",
                      flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    load = os.getloadavg()
    print(f"\nload average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'workload':<8} {'variant':<11} {'ratio':>6} {'range':>13} {'extra CPU s':>12} {'%':>6} {'range':>15} "
          f"{'py-spy CPU s':>13} {'%':>6}")
    for workload in workloads:
        plain = results[workload]["plain"]
        for variant in variants[1:]:
            runs = results[workload][variant]
            ratios = [g / p[0] for (g, _, _), p in zip(runs, plain)]
            extra = [c - p[1] for (_, c, _), p in zip(runs, plain)]
            share = 100 * statistics.median(e / p[1] for e, p in zip(extra, plain))
            spy = [s for _, _, s in runs]
            spy_share = 100 * statistics.median(s / p[1] for s, p in zip(spy, plain))
            spy_text = f"{statistics.median(spy):>13.2f} {spy_share:>5.1f}%" if any(spy) else ""
            print(f"{workload:<8} {variant:<11} {statistics.median(ratios):>6.3f} "
                  f"{min(ratios):>6.3f}-{max(ratios):<6.3f} {statistics.median(extra):>+12.2f} {share:>+5.1f}% "
                  f"{min(extra):>+7.2f}/{max(extra):<+7.2f} {spy_text}")
    print("targets: default ratio >= 0.99 on disk, >= 0.97 on cpu (and the CPU seconds alike)")


if __name__ == "__main__":
    main()
