"""What one sampler tick costs with the per-thread reads, for a process of N
threads.

    python benchmarks/sampler_threads.py [--threads 4,64,256] [--ticks 200] [--interval 20ms] [--cpus M] [--floor]

A child Python process starts N real threads (threading, no C extension),
each looping over a busy spell of ~0.5 ms and a sleep of ~5 ms, so that the
process's CPU time grows between ticks: the sampler then reads every
/proc/PID/task/TID/schedstat, and the stat of each thread that ran, its
worst case (a record is written for each thread whose CPU time grew by a
clock tick, or whose run-queue delay grew by 1 ms: at 64 threads and more
on 2 CPUs, each waits that long every tick, and its status is read too). The writerprof Sampler
(writerprof.record.sampler) ticks over it every interval, as `writerprof
record` does, and each tick is measured around Sampler.tick(): its wall
time, and the sampler thread's own CPU time (on a loaded machine the wall
time also counts the waits for a CPU). A second run with the threads idle
(blocked on an Event) shows the common case: the process's stat says
nothing ran, and no thread is read.

Prints per N: thread records written per tick, and the tick's median and
p90 in milliseconds, wall and CPU, busy and idle.

--floor also times, on a child of the same shape, a C loop that makes the
reads of a busy tick (the process's stat, io and status, every thread's
schedstat, /proc/stat and /proc/loadavg, through descriptors kept open, at
the same interval) and nothing else: what a tick would cost compiled, the
kernel's part, which no code of the sampler's can save (on a VM, much of it
its page walks after the interval's other work). An idle tick reads less:
there the loop reads more than the sampler does. It needs a C compiler (cc).

--cpus M reads the host's CPU times (/proc/stat, read every tick) from a
copy as a host of M CPUs has it: this machine's own text, its per-CPU line
repeated under the numbers 0 to M-1. The sampler's work on that file grows
with the CPUs (a big checkpoint client has hundreds); this shows it on a
machine of two.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from writerprof.record import procfs
from writerprof.record.sampler import Sampler
from writerprof.record.system import System
from writerprof.run import layout
from writerprof.run.loader import thread_samples
from writerprof.units import parse_duration

CHILD = """
import sys, threading, time
n, busy = int(sys.argv[1]), sys.argv[2] == "busy"
started = threading.Barrier(n + 1)
idle = threading.Event()
def work():
    started.wait()
    while not busy:
        idle.wait()
    while True:
        if busy:
            end = time.perf_counter() + 0.0005
            while time.perf_counter() < end:
                pass
        time.sleep(0.005)
for _ in range(n):
    threading.Thread(target=work, daemon=True).start()
started.wait()
print("ready", flush=True)
sys.stdin.read()
"""


# The reads a tick makes at least, and nothing else (--floor): argv PID TICKS INTERVAL_NS;
# prints the CPU ns of each tick's reads, one a line.
FLOOR_C = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int open_at(const char *format, const char *pid, const char *tid) {
    char path[256];
    snprintf(path, sizeof path, format, pid, tid);
    return open(path, O_RDONLY | O_CLOEXEC);
}

int main(int argc, char **argv) {
    const char *pid = argv[1];
    int ticks = atoi(argv[2]), fds[4096], n = 0;
    long long interval = atoll(argv[3]);
    static char buf[65536];
    const char *own[] = {"/proc/%s/stat", "/proc/%s/io", "/proc/%s/status"};
    for (int i = 0; i < 3; i++) fds[n++] = open_at(own[i], pid, "");
    char task[64];
    snprintf(task, sizeof task, "/proc/%s/task", pid);
    DIR *dir = opendir(task);
    for (struct dirent *e; dir && (e = readdir(dir)) && n < 4094;)
        if (e->d_name[0] != '.') fds[n++] = open_at("/proc/%s/task/%s/schedstat", pid, e->d_name);
    if (dir) closedir(dir);
    fds[n++] = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    fds[n++] = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
    struct timespec pause = {interval / 1000000000LL, interval % 1000000000LL};
    long long sum = 0;
    for (int t = 0; t < ticks; t++) {
        nanosleep(&pause, NULL);
        long long began = cpu_ns();
        for (int i = 0; i < n; i++) {
            ssize_t got = pread(fds[i], buf, sizeof buf, 0);
            sum += got > 0 ? buf[0] : 0;
        }
        printf("%lld\n", cpu_ns() - began);
    }
    return sum == -1;
}
"""


def many_cpus(root: Path, cpus: int) -> System:
    """A System whose /proc/stat is this machine's with a line for each of cpus CPUs."""
    lines = Path("/proc/stat").read_text().splitlines()
    per_cpu = [line for line in lines if line.startswith("cpu") and line[3:4].isdigit()]
    fields = per_cpu[0].split(" ", 1)[1]
    rest = [line for line in lines if not line.startswith("cpu")]
    (root / "proc").mkdir(parents=True)
    widened = [lines[0]] + [f"cpu{i} {fields}" for i in range(cpus)] + rest
    (root / "proc" / "stat").write_text("\n".join(widened) + "\n")
    return System(root)


def measure(threads: int, busy: bool, ticks: int, interval_s: float, cpus: int | None = None) -> dict:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(threads), "busy" if busy else "idle"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        with tempfile.TemporaryDirectory() as tmp:
            sampler = Sampler(child.pid, Path(tmp), interval_s)
            if cpus:
                sampler._host = procfs.HostFiles(many_cpus(Path(tmp) / "host", cpus))
            sampler.tick()  # first sight: cmdline, exe, numa_maps, not a steady tick
            took, cpu = [], []
            for _ in range(ticks):
                time.sleep(interval_s)
                began, began_cpu = time.perf_counter_ns(), time.thread_time_ns()
                sampler.tick()
                cpu.append(time.thread_time_ns() - began_cpu)
                took.append(time.perf_counter_ns() - began)
            sampler.stop()
            records = len(thread_samples(Path(tmp) / layout.THREADS_FILE))
    finally:
        child.stdin.close()
        child.kill()
        child.wait()
    return {"wall": _ms(took), "cpu": _ms(cpu), "records_per_tick": records / (ticks + 1)}


def floor(threads: int, busy: bool, ticks: int, interval_s: float, program: Path) -> tuple[float, float]:
    """The reads alone, in C (FLOOR_C): median and p90 CPU ms a tick."""
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(threads), "busy" if busy else "idle"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        done = subprocess.run([str(program), str(child.pid), str(ticks), str(int(interval_s * 1e9))],
                              capture_output=True, text=True, check=True)
    finally:
        child.stdin.close()
        child.kill()
        child.wait()
    return _ms([int(line) for line in done.stdout.split()])


def compiled_floor(directory: Path) -> Path:
    """FLOOR_C built with cc, or a one-line exit where there is none."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SystemExit("--floor needs a C compiler (cc): none found")
    source, program = directory / "floor.c", directory / "floor"
    source.write_text(FLOOR_C)
    subprocess.run([compiler, "-O2", "-o", str(program), str(source)], check=True)
    return program


def _ms(values: list[int]) -> tuple[float, float]:
    """Median and p90, in ms."""
    values = sorted(values)
    return statistics.median(values) / 1e6, values[int(len(values) * 0.9)] / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", default="4,64,256")
    parser.add_argument("--ticks", type=int, default=200)
    parser.add_argument("--interval", default="20ms")
    parser.add_argument("--cpus", type=int, help="a /proc/stat of this many CPUs (see above)")
    parser.add_argument("--floor", action="store_true", help="also the reads alone, in C (see above)")
    args = parser.parse_args()
    interval_s = parse_duration(args.interval) / 1e9
    if args.cpus:
        print(f"/proc/stat read as a host of {args.cpus} CPUs has it")
    print(f"{'threads':>7} {'load':>5} {'records/tick':>12} {'wall median':>11} {'wall p90':>8} "
          f"{'cpu median':>10} {'cpu p90':>8}" + (f" {'C reads median':>14} {'p90':>6}" if args.floor else "")
          + "  (ms)")
    with tempfile.TemporaryDirectory() as tmp:
        program = compiled_floor(Path(tmp)) if args.floor else None
        for n in (int(x) for x in args.threads.split(",")):
            for busy in (True, False):
                r = measure(n, busy, args.ticks, interval_s, args.cpus)
                reads = f" {f[0]:>14.3f} {f[1]:>6.3f}" if program and (
                    f := floor(n, busy, args.ticks, interval_s, program)) else ""
                print(f"{n:>7} {'busy' if busy else 'idle':>5} {r['records_per_tick']:>12.1f} "
                      f"{r['wall'][0]:>11.3f} {r['wall'][1]:>8.3f} {r['cpu'][0]:>10.3f} {r['cpu'][1]:>8.3f}{reads}",
                      flush=True)


if __name__ == "__main__":
    main()
