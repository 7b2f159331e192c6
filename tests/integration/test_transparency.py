"""The probe stays out of the target's way (issue 30): programs drawn by
hypothesis (transparency_targets.py: start methods, fds closed, signals,
threads, writes, exits), each run plainly and under `writerprof record`, do
exactly the same: exit status, stdout, stderr and the files they leave,
byte for byte.

A batch of programs goes through one driver (targets/transparency_driver.py)
run twice, plainly and recorded, rather than one `record` per program: 300
programs in a few minutes. The recorded run must really have been recorded:
every process of every program says it had the probe loaded and the
interposer mapped, and each has a journal. The examples are derandomized,
so CI tries the same programs every time."""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import TARGETS, run_writerprof
from test_probe_journal import INTERPRETERS

from writerprof.probes.writerprof_probe import format as journal_format

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from transparency_targets import PRELUDE, programs  # noqa: E402

DRIVER = os.path.join(TARGETS, "transparency_driver.py")
BATCH = 30
BATCHES = int(os.environ.get("WRITERPROF_TRANSPARENCY_BATCHES", 10))  # 300 programs
COMPARED = ("status", "stdout", "stderr", "files")
DRIVER_TIMEOUT_S = 1800  # the driver's own per-program timeout comes first


def _interpreter(version: str) -> str:
    """The interpreter of that version (3.12: pyenv's 3.12.x), else the current one."""
    found = [python for name, python in INTERPRETERS.items() if name == version or name.startswith(version + ".")]
    return (found or [INTERPRETERS["current"]])[0]


def _write_batch(directory: Path, batch) -> Path:
    manifest = []
    for n, program in enumerate(batch):
        home = directory / ("p%03d" % n)
        home.mkdir(parents=True)
        (home / "prog.py").write_text(program.source(), encoding="utf-8")
        python = _interpreter(program.python)
        manifest.append({"name": home.name, "dir": str(home),
                         "argv": [python, *program.options, str(home / "prog.py")]})
    path = directory / "manifest.json"
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return path


def _drive(manifest: Path, results: Path, run: Path | None = None) -> dict:
    command = [sys.executable, DRIVER, str(manifest), str(results)]
    if run is None:
        subprocess.run(command, check=True, timeout=DRIVER_TIMEOUT_S)
    else:
        run_writerprof("record", "-o", run, "--", *command, timeout=DRIVER_TIMEOUT_S)
    return json.loads(results.read_text(encoding="utf-8"))


def _witnessed(results: dict) -> dict[str, list[tuple[int, bool, bool, bool]]]:
    """Each program's processes: (pid, probe loaded, interposer mapped, LD_PRELOAD
    taken out of its environment by the program)."""
    return {name: [(int(pid), probed == "1", mapped == "1", no_preload == "1")
                   for pid, probed, mapped, no_preload in (line.split() for line in result["witness"])]
            for name, result in results.items()}


def _journaled_pids(run: Path) -> set[int]:
    return {int(f.name.split("-")[0]) for f in run.glob("hosts/*/procs/*" + journal_format.EVENTS_SUFFIX)}


def _difference(name: str, program, argv: list[str], plain: dict, recorded: dict) -> str:
    lines = ["=== %s: %s" % (name, " ".join(argv[1:-1]) or "(no options)"),
             "python: %s (%s)" % (program.python, argv[0]),
             program.source()[len(PRELUDE):].strip()]
    for key in COMPARED:
        if plain[key] == recorded[key]:
            continue
        if key in ("stdout", "stderr"):
            lines.append("--- %s, plain vs recorded:" % key)
            lines += difflib.unified_diff(plain[key].splitlines(), recorded[key].splitlines(), "plain", "recorded",
                                          lineterm="")
        elif key == "files":
            for path in sorted(set(plain[key]) | set(recorded[key])):
                if plain[key].get(path) != recorded[key].get(path):
                    lines.append("--- file %s: plain %s, recorded %s" % (path, plain[key].get(path),
                                                                         recorded[key].get(path)))
        else:
            lines.append("--- %s: plain %r, recorded %r" % (key, plain[key], recorded[key]))
    return "\n".join(lines)


@pytest.mark.timeout(2 * DRIVER_TIMEOUT_S)
@settings(max_examples=BATCHES, derandomize=True, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(batch=st.lists(programs(), min_size=BATCH, max_size=BATCH, unique=True))
def test_a_recorded_program_does_exactly_what_it_does_plainly(tmp_path_factory, batch):
    work = tmp_path_factory.mktemp("transparency")
    manifest = _write_batch(work / "programs", batch)
    argvs = {p["name"]: p["argv"] for p in json.loads(manifest.read_text(encoding="utf-8"))}
    plain = _drive(manifest, work / "plain.json")
    recorded = _drive(manifest, work / "recorded.json", run=work / "run")

    # The plain run ran plainly, and the recorded one under the probe and the interposer, every process.
    journaled = _journaled_pids(work / "run")
    for name, processes in _witnessed(plain).items():
        assert processes and not any(probed or mapped for _, probed, mapped, _ in processes), (name, processes)
    for name, processes in _witnessed(recorded).items():
        # (None: not even the main process said so; what it did instead says why.)
        assert processes, (name, recorded[name]["status"], recorded[name]["stderr"][-2000:])
        unprobed = [p for p in processes if not (p[1] and (p[2] or p[3]) and p[0] in journaled)]
        assert not unprobed, "%s: processes not probed, not mapped or not journaled: %s" % (name, unprobed)

    differences = [_difference(name, program, argvs[name], plain[name], recorded[name])
                   for name, program in zip(sorted(argvs), batch)
                   if any(plain[name][key] != recorded[name][key] for key in COMPARED)]
    assert not differences, "%d of %d programs did otherwise when recorded:\n\n%s" % (
        len(differences), len(batch), "\n\n".join(differences))
