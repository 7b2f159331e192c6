"""What the I/O interposer costs per call, against the probe's os.write hook.

    python benchmarks/interposer_cost.py [--calls 200000] [--rounds 5]

C: a small program (built here with gcc) times each of --calls 1-byte
pwrite(2)s to a file in /dev/shm (tmpfs: the call itself is short, so the
interposer's share is the largest it can be), and each write(2) to a pipe
(an fd it does not time: its cost of looking the fd up). Run bare, with the
interposer loaded but inert (no WRITERPROF_RUN), and recording. Prints the
median and p99 of the per-call times and the recording's cost over bare, the
median of --rounds interleaved rounds.

Python: os.write of 1 byte to the same kind of file, ns per call over bare
(a loop timed whole), with the interposer recording and with the probe's
os.write hook instead (the probe as record starts it, without the
interposer): the two ways writerprof times a Python writer's calls.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

C_BENCH = r"""
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static long long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000LL + t.tv_nsec; }
static int cmp(const void *a, const void *b) { long long x = *(long long *)a, y = *(long long *)b; return (x > y) - (x < y); }
static void report(const char *what, long long *t, int n) {
    qsort(t, n, sizeof *t, cmp);
    printf("%s %lld %lld\n", what, t[n / 2], t[n * 99 / 100]);
}
int main(int argc, char **argv) {
    int n = atoi(argv[2]);
    long long *t = malloc(sizeof *t * n);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char c = 'x';
    for (int i = 0; i < n; i++) { long long a = now(); pwrite(fd, &c, 1, 0); t[i] = now() - a; }
    report("file", t, n);
    close(fd);
    int p[2];
    if (pipe(p)) return 1;
    for (int i = 0; i < n; i++) { long long a = now(); write(p[1], &c, 1); t[i] = now() - a; char r; read(p[0], &r, 1); }
    report("pipe", t, n);
    unlink(argv[1]);
    return 0;
}
"""

PY_BENCH = r"""
import os, sys, time
n = int(sys.argv[2])
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
write, data = os.write, b"x"
for _ in range(1000):
    write(fd, data)
t = time.thread_time_ns()
for _ in range(n):
    write(fd, data)
print((time.thread_time_ns() - t) / n)
os.close(fd)
os.unlink(sys.argv[1])
"""


def library() -> str:
    from writerprof.record import interposer

    if not interposer.available():
        sys.exit(f"the interposer is not built ({interposer.LIBRARY}): pip install the package")
    return interposer.LIBRARY


def environments(run: str, lib: str) -> dict[str, dict]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("WRITERPROF_") and k != "LD_PRELOAD"}
    return {
        "bare": base,
        "inert": {**base, "LD_PRELOAD": lib},
        "recording": {**base, "LD_PRELOAD": lib, "WRITERPROF_RUN": run},
    }


def c_round(program: str, target: str, calls: int, env: dict) -> dict[str, tuple[int, int]]:
    done = subprocess.run([program, target, str(calls)], env=env, capture_output=True, text=True, check=True)
    return {kind: (int(median), int(p99)) for kind, median, p99 in (line.split() for line in done.stdout.splitlines())}


def py_round(target: str, calls: int, env: dict) -> float:
    done = subprocess.run([sys.executable, "-c", PY_BENCH, target, str(calls)], env=env, capture_output=True,
                          text=True, check=True)
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    lib = library()
    with tempfile.TemporaryDirectory(prefix="wpio-bench-") as scratch:
        program = os.path.join(scratch, "bench")
        subprocess.run(["gcc", "-O2", "-o", program, "-x", "c", "-"], input=C_BENCH, text=True, check=True)
        run = os.path.join(scratch, "run")
        os.mkdir(run)
        target = f"/dev/shm/wpio-bench-{os.getpid()}"
        envs = environments(run, lib)
        c = {name: [] for name in envs}
        for _ in range(args.rounds):
            for name, env in envs.items():
                c[name].append(c_round(program, target, args.calls, env))
        print(f"C, ns per call (median of {args.rounds} rounds of {args.calls} calls; per-call median and p99):")
        for kind, what in (("file", "pwrite 1 B to tmpfs (timed)"), ("pipe", "write 1 B to a pipe (not timed)")):
            figures = {name: tuple(statistics.median(r[kind][i] for r in c[name]) for i in (0, 1)) for name in envs}
            bare = figures["bare"]
            print(f"  {what}:")
            for name, (median, p99) in figures.items():
                extra = "" if name == "bare" else f"   ({median - bare[0]:+.0f} median, {p99 - bare[1]:+.0f} p99)"
                print(f"    {name:10s} median {median:6.0f}  p99 {p99:6.0f}{extra}")
        # Python: the interposer recording, against the probe's os.write hook (the probe without the interposer).
        py_envs = {"bare": envs["bare"], "interposer": envs["recording"],
                   "probe hook": {**envs["bare"], "WRITERPROF_RUN": run,
                                  "PYTHONPATH": os.path.join(ROOT, "probes")}}
        py = {name: [] for name in py_envs}
        for _ in range(args.rounds):
            for name, env in py_envs.items():
                py[name].append(py_round(target, args.calls, env))
        bare = statistics.median(py["bare"])
        print(f"Python os.write of 1 B to tmpfs, ns per call (median of {args.rounds} rounds, thread CPU time):")
        for name in py_envs:
            median = statistics.median(py[name])
            extra = "" if name == "bare" else f"   ({median - bare:+.0f} over bare)"
            print(f"    {name:10s} {median:7.0f}{extra}")


if __name__ == "__main__":
    main()
