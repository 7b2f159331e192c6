"""What one sampler tick costs with the raw /proc reads writerprof makes
(writerprof.procfs) against their psutil equivalents, for N processes.

    python benchmarks/sampler_psutil.py [--processes 8,32,128] [--ticks 200]

A tree of N sleeping processes under one root is started; each tick then
does what the sampler does per interval, both ways, interleaved tick by tick
so that drift of the machine falls on both alike:

  discovery   the root's live descendants: ProcessTree.pids() (the kernel's
              children files) against psutil.Process.children(recursive=True)
  counters    per process, the fields the sampler journals: /proc/PID/stat,
              status and io, parsed (ppid, state, cpu, threads, utime, stime,
              minflt, majflt, rss, context switches, Cpus_allowed_list,
              write_bytes, wchar) against psutil's oneshot() of ppid, status,
              cpu_num, num_threads, cpu_times, memory_info, num_ctx_switches,
              cpu_affinity and io_counters (the page faults psutil does not
              give at all)
  full memory /proc/PID/smaps_rollup read raw against memory_full_info()
              (USS/PSS; the sampler reads neither today)

Prints, per N and per part, the median and p90 of the tick's time in
microseconds (and per process), raw and psutil, and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

import psutil

from writerprof import procfs
from writerprof.system import HOST


def _tree(n: int) -> subprocess.Popen:
    root = subprocess.Popen(["sh", "-c", f"for i in $(seq {n}); do sleep 600 & done; wait"])
    deadline = time.monotonic() + 30
    while len(psutil.Process(root.pid).children()) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the tree of {n} processes did not start")
        time.sleep(0.05)
    return root


def raw_discovery(tree: procfs.ProcessTree, root: int) -> list[int]:
    return tree.pids()


def psutil_discovery(root: psutil.Process) -> list[int]:
    return [root.pid, *(p.pid for p in root.children(recursive=True))]


def raw_counters(pids) -> int:
    seen = 0
    for pid in pids:
        stat = procfs.read_stat(HOST, pid)
        status = procfs.read_status(HOST, pid)
        io = procfs.read_io(HOST, pid)
        seen += stat is not None and status is not None and io.wchar >= -1
    return seen


def psutil_counters(procs) -> int:
    seen = 0
    for p in procs:
        try:
            with p.oneshot():
                p.ppid(), p.status(), p.cpu_num(), p.num_threads(), p.cpu_times(), p.memory_info()
                p.num_ctx_switches(), p.cpu_affinity(), p.io_counters()
            seen += 1
        except psutil.Error:
            pass
    return seen


def raw_full_memory(pids) -> int:
    return sum(HOST.read(f"/proc/{pid}/smaps_rollup") is not None for pid in pids)


def psutil_full_memory(procs) -> int:
    seen = 0
    for p in procs:
        try:
            p.memory_full_info()
            seen += 1
        except psutil.Error:
            pass
    return seen


def _time_us(fn, *args) -> float:
    start = time.perf_counter_ns()
    fn(*args)
    return (time.perf_counter_ns() - start) / 1000


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def measure(n: int, ticks: int) -> dict[str, tuple[list[float], list[float]]]:
    root = _tree(n)
    try:
        tree, proot = procfs.ProcessTree(HOST, root.pid), psutil.Process(root.pid)
        pids = tree.pids()
        procs = [psutil.Process(pid) for pid in pids]  # the sampler keeps its processes between ticks
        assert len(pids) == n + 1 and sorted(pids) == sorted(psutil_discovery(proot))
        parts = {
            "discovery": ((raw_discovery, tree, root.pid), (psutil_discovery, proot)),
            "counters": ((raw_counters, pids), (psutil_counters, procs)),
            "full memory": ((raw_full_memory, pids), (psutil_full_memory, procs)),
        }
        times = {name: ([], []) for name in parts}
        for tick in range(ticks):
            for name, (raw, ps) in parts.items():
                first, second = (raw, ps) if tick % 2 == 0 else (ps, raw)  # alternate who goes first
                t_first, t_second = _time_us(*first), _time_us(*second)
                raw_us, ps_us = (t_first, t_second) if tick % 2 == 0 else (t_second, t_first)
                times[name][0].append(raw_us)
                times[name][1].append(ps_us)
        return times
    finally:
        for child in psutil.Process(root.pid).children(recursive=True):
            child.kill()
        root.kill()
        root.wait()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", default="8,32,128", help="tree sizes, comma-separated")
    parser.add_argument("--ticks", type=int, default=200)
    args = parser.parse_args(argv)
    print(f"psutil {psutil.__version__}; {args.ticks} ticks each; microseconds per tick (per process)")
    print(f"{'N':>4}  {'part':<12} {'raw median':>16} {'raw p90':>9} {'psutil median':>17} {'psutil p90':>10}"
          f" {'psutil/raw':>10}")
    for n in (int(x) for x in args.processes.split(",")):
        for name, (raw, ps) in measure(n, args.ticks).items():
            rm, pm = statistics.median(raw), statistics.median(ps)
            print(f"{n:>4}  {name:<12} {rm:>9.0f} ({rm / (n + 1):>4.0f}) {_p90(raw):>9.0f} "
                  f"{pm:>10.0f} ({pm / (n + 1):>4.0f}) {_p90(ps):>10.0f} {pm / rm:>10.2f}")


if __name__ == "__main__":
    main()
