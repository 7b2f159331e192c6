"""What the probe costs a Python interpreter's start-up: short `python -c`
children bare, with the probe inert and with it on.

    python benchmarks/probe_startup.py [--repeats 40] [--python PYTHON ...] [--bytecode both]

Cases, for `python -c pass` and `python -c "import multiprocessing"`:
  bare   no probe on PYTHONPATH
  inert  the probe's directory on PYTHONPATH, no WRITERPROF_RUN
  on     PYTHONPATH, WRITERPROF_RUN (a temporary run directory) and WRITERPROF_STACKS
         (as `record` runs a process by default: the probe's stack-sampling thread
         started at activation, stopped and its file written at exit)
Every round runs every case once, in a shuffled order, so that the load of a
shared machine falls on all of them alike; each child is timed from spawn to
exit. Prints median and p90 per case and the probe's increment (median of the
case minus median of bare).

The probe is copied to a temporary directory, once with its bytecode compiled
for each interpreter ("on" and "inert", as a wheel install has it) and once as
sources only, run under PYTHONDONTWRITEBYTECODE=1 ("on, source" and "inert,
source": an editable install on a machine that sets the flag). There the
first probed process writes the probe's bytecode (probes/writerprof_probe/
bytecode.py; its time is printed apart) and the rounds measure the processes
after it; --bytecode picks one or both.

The probe's own share, from `-X importtime` (median over the rounds): the
cumulative time of the `sitecustomize` import, which is the probe's bootstrap
and its activation. And what the interpreter's own site does before it, which
is not the probe's: every module a .pth file imports at start-up with its
cumulative time (a pyenv Python here imports certifi from a .pth, ~15 ms).
Target (issue 15): the probe's increment <= 5 ms per interpreter.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import writerprof.probes

SCRIPTS = {"pass": "pass", "import mp": "import multiprocessing"}
# What site imports for itself, whatever the .pth files say.
_SITE_OWN = {"os", "_sitebuiltins", "usercustomize", "_distutils_hack"}
# "import time:  self |  cumulative | <two spaces per level>name"
_IMPORTTIME = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def probe_copies(scratch: str, pythons: list[str], bytecode: str) -> dict[str, str]:
    """{label: a copy of the probe's directory}: compiled for every interpreter, and/or not."""
    source = os.path.dirname(writerprof.probes.__file__)
    copies = {}
    for label, compiled in (("", True), (", source", False)):
        if bytecode != "both" and compiled != (bytecode == "compiled"):
            continue
        where = os.path.join(scratch, "compiled" if compiled else "source", "probes")
        shutil.copytree(source, where, ignore=shutil.ignore_patterns("__pycache__"))
        if compiled:
            for python in pythons:
                subprocess.run([python, "-m", "compileall", "-q", where], check=True,
                               env=dict(os.environ, PYTHONDONTWRITEBYTECODE=""))
        copies[label] = where
    return copies


def case_env(mode: str, probe_dir: str | None, run_dir: str) -> dict[str, str]:
    """mode: bare, inert or on, with ", source" for the copy without bytecode."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("WRITERPROF_") and k != "PYTHONPATH"}
    if mode != "bare":
        env["PYTHONPATH"] = probe_dir
    if mode.startswith("on"):
        env["WRITERPROF_RUN"] = run_dir
        env["WRITERPROF_STACKS"] = "100,10,5"
    if mode.endswith("source"):
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def timed_run(python: str, script: str, env: dict, importtime=False) -> tuple[float, str]:
    argv = [python, *(["-X", "importtime"] if importtime else []), "-c", script]
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stderr}")
    return elapsed * 1e3, done.stderr


def importtime_ms(stderr: str) -> tuple[float, dict[str, float]]:
    """(cumulative ms of sitecustomize, {module a .pth imported: cumulative ms})
    from one `-X importtime` report. A .pth import is one that site makes
    directly (one level under site), other than sitecustomize."""
    lines = [m.groups() for m in map(_IMPORTTIME.match, stderr.splitlines()) if m]
    probe, pth = 0.0, {}
    # Children are reported before their parent: site's direct children are the
    # lines one level deeper than site in the run of deeper lines just before it.
    site_at = next((i for i, line in enumerate(lines) if line[3] == "site"), None)
    if site_at is None:
        return probe, pth
    site_depth = len(lines[site_at][2])
    start = site_at
    while start > 0 and len(lines[start - 1][2]) > site_depth:
        start -= 1
    for _, cumulative, indent, name in lines[start:site_at]:
        if len(indent) != site_depth + 2:
            continue
        if name == "sitecustomize":
            probe = int(cumulative) / 1e3
        elif name not in _SITE_OWN:
            pth[name] = pth.get(name, 0.0) + int(cumulative) / 1e3
    return probe, pth


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=40, help="rounds of every case (default: 40)")
    parser.add_argument("--python", action="append", dest="pythons", metavar="PYTHON",
                        help="an interpreter to measure (repeatable; default: this one)")
    parser.add_argument("--bytecode", choices=("both", "compiled", "source"), default="both",
                        help="measure the probe with its bytecode compiled, as sources only, or both")
    args = parser.parse_args()
    if args.repeats < 5:
        parser.error("at least 5 repeats")
    pythons = args.pythons or [sys.executable]
    with tempfile.TemporaryDirectory(prefix="writerprof-startup-") as scratch:
        copies = probe_copies(scratch, pythons, args.bytecode)
        run_dir = os.path.join(scratch, "run")
        os.mkdir(run_dir)
        modes = [("bare", None)] + [(mode + label, where) for label, where in copies.items()
                                    for mode in ("inert", "on")]
        for python in pythons:
            measure(python, modes, run_dir, args.repeats)


def measure(python: str, modes, run_dir: str, repeats: int) -> None:
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    cases = [(script, mode, where) for script in SCRIPTS for mode, where in modes]
    first = [timed_run(python, "import multiprocessing", case_env(mode, where, run_dir))[0]
             for mode, where in modes if mode == "on, source"]
    wall = {(script, mode): [] for script, mode, _ in cases}
    probe_ms = {(script, mode): [] for script, mode, _ in cases if mode.startswith("on")}
    pth_ms: dict[str, list[float]] = {}
    for _ in range(repeats):
        order = cases * 2  # once timed, once with -X importtime
        random.shuffle(order)
        seen = set()
        for script, mode, where in order:
            env = case_env(mode, where, run_dir)
            importtime = (script, mode) in seen
            seen.add((script, mode))
            elapsed, stderr = timed_run(python, SCRIPTS[script], env, importtime)
            if not importtime:
                wall[script, mode].append(elapsed)
                continue
            probe, pth = importtime_ms(stderr)
            if (script, mode) in probe_ms:
                probe_ms[script, mode].append(probe)
            if mode == "bare" and script == "pass":
                for name, ms in pth.items():
                    pth_ms.setdefault(name, []).append(ms)
    print(f"\n{python} (Python {version}), {repeats} interleaved rounds; wall ms per child")
    print(f"{'case':<34} {'median':>8} {'p90':>8} {'increment':>10} {'probe import':>13}")
    for script in SCRIPTS:
        bare = statistics.median(wall[script, "bare"])
        for mode, _ in modes:
            times = wall[script, mode]
            increment = "" if mode == "bare" else f"{statistics.median(times) - bare:+10.2f}"
            share = probe_ms.get((script, mode))
            share = f"{statistics.median(share):13.2f}" if share else ""
            print(f"{SCRIPTS[script] + ', ' + mode:<34} {statistics.median(times):8.2f} "
                  f"{p90(times):8.2f} {increment:>10} {share:>13}")
    print("site's own .pth imports (not the probe's), median cumulative ms: "
          + (", ".join(f"{name} {statistics.median(ms):.1f}" for name, ms in sorted(pth_ms.items())
                       if len(ms) == repeats and statistics.median(ms) >= 0.5) or "none"))
    if first:
        print(f"the first probed process without bytecode, which writes it: {first[0]:.1f} ms")
    print("target: the probe's increment <= 5 ms per interpreter")


if __name__ == "__main__":
    main()
