"""What the probe's stack sampling (writerprof_probe.stacks) costs the
process it runs in, per interpreter: the CPU time of one sample of threads
parked at a given depth, and of the sampling thread's whole life at a rate
while the process waits (its wake-ups: the fixed cost of every sample).

    python benchmarks/probe_stacks.py [--python PYTHON ...] [--depths 5,80] [--seconds 2]

Per interpreter (default: this one), in a child process of it:
  sample   thread CPU us per sample(), median of 5 rounds of 400, of 1 and 3
           threads parked DEPTH frames deep (80: a writer's imports at start-up);
           the same stacks every time, as a waiting process's are (a start-up's
           are new at every sample: its frames' names and files are looked up
           once, see the first-sample column)
  first    thread CPU us of the first sample of 3 new threads DEPTH deep (new
           code objects: names and files looked up)
  thread   the sampling thread's CPU us per sample over --seconds at 100 Hz and at
           10 Hz, the process blocked in select (what the "stacks" event journals)
Compare py-spy: ~0.1 ms a sample of a shallow stack and ~0.5 ms of 80 frames
read from outside, plus ~13 ms to start one per process (writerprof.record.pyspy).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

PROBES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "probes")

CHILD = r"""
import json, os, select, statistics, sys, threading, time
sys.path.insert(0, sys.argv[1])
from writerprof_probe import stacks

depths, seconds = [int(d) for d in sys.argv[2].split(",")], float(sys.argv[3])

class Journal:
    on_next_event = None
    run, host = "/nonexistent-run", "h"  # (a writer's first_start: one of the first where unwritable)
    def replace(self, suffix, data):
        return True

def parked(depth, ready, go, code_name):
    # a fresh function per call of park(): new code objects, as a start-up's imports bring
    namespace = {}
    exec(compile("def %s(n, ready, go):\n    if n:\n        return %s(n - 1, ready, go)\n"
                 "    ready.release()\n    go.wait()\n" % (code_name, code_name), "<parked>", "exec"), namespace)
    namespace[code_name](depth, ready, go)

def park(n, depth, tag):
    go, started = threading.Event(), []
    for i in range(n):
        ready = threading.Semaphore(0)
        thread = threading.Thread(target=parked, args=(depth, ready, go, "f_%s_%d" % (tag, i)))
        thread.start()
        ready.acquire()
        started.append(thread)
    return go, started

def unpark(go, started):
    go.set()
    for thread in started:
        thread.join()

out = {"python": sys.version.split()[0], "sample": {}, "first": {}, "thread": {}}
me = threading.get_ident()
for depth in depths:
    for n in (1, 3):
        go, started = park(n, depth, "s%d_%d" % (depth, n))
        sampler = stacks._Sampler(Journal(), (100, 10, 5), {"role": "main", "ppid": 1})
        sampler.sample(me, 1.0)  # the names looked up once
        rounds = []
        for _ in range(5):
            t = time.thread_time_ns()
            for _ in range(400):
                sampler.sample(me, 1.0)
            rounds.append((time.thread_time_ns() - t) / 400 / 1e3)
        out["sample"]["%d x %d" % (n, depth)] = statistics.median(rounds)
        unpark(go, started)
    go, started = park(3, depth, "f%d" % depth)
    sampler = stacks._Sampler(Journal(), (100, 10, 5), {"role": "main", "ppid": 1})
    t = time.thread_time_ns()
    sampler.sample(me, 1.0)
    out["first"]["3 x %d" % depth] = (time.thread_time_ns() - t) / 1e3
    unpark(go, started)
for rate, role in ((100, "fork_child"), (10, "main")):
    sampler = stacks._Sampler(Journal(), (100, 10, 5), {"role": role, "ppid": 1})
    sampler.full_until = time.monotonic_ns() + int(seconds * 1e9) * (rate == 100)
    sampler.start()
    r, w = os.pipe()
    select.select([r], [], [], seconds)
    sampler.stop()
    out["thread"]["%d Hz" % rate] = sampler.cpu_ns / max(sampler.samples, 1) / 1e3
print(json.dumps(out))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", dest="pythons", metavar="PYTHON",
                        help="an interpreter to measure (repeatable; default: this one)")
    parser.add_argument("--depths", default="5,80", help="stack depths, comma-separated (default: 5,80)")
    parser.add_argument("--seconds", type=float, default=2.0, help="of the sampling thread's life per rate")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} CPUs; thread CPU us")
    for python in args.pythons or [sys.executable]:
        done = subprocess.run([python, "-c", CHILD, PROBES, args.depths, str(args.seconds)], capture_output=True,
                              text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"{python} failed:\n{done.stderr}")
        out = json.loads(done.stdout)
        sample = ", ".join(f"{k} {v:.0f}" for k, v in out["sample"].items())
        first = ", ".join(f"{k} {v:.0f}" for k, v in out["first"].items())
        thread = ", ".join(f"{k} {v:.0f}" for k, v in out["thread"].items())
        print(f"Python {out['python']:<8} sample (threads x depth): {sample}; first sample: {first}; "
              f"thread per sample while waiting: {thread}")


if __name__ == "__main__":
    main()
