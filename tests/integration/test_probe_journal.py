"""The probe on its own: a standard-library target run with the probe
directory on PYTHONPATH and WRITERPROF_RUN set, journals read back raw."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import writerprof.probes
from writerprof.probes.writerprof_probe import format as journal_format

PROBE_DIR = os.path.dirname(writerprof.probes.__file__)
TARGET = Path(__file__).parent / "targets" / "shm_writer.py"


def _interpreters():
    """This interpreter, and every other CPython from 3.9 up that pyenv has."""
    found = {"current": sys.executable}
    pyenv = shutil.which("pyenv")
    if pyenv:
        versions = subprocess.run([pyenv, "versions", "--bare"], capture_output=True, text=True)
        for version in versions.stdout.split():
            parts = version.split(".")
            if len(parts) == 3 and parts[0] == "3" and parts[1].isdigit() and int(parts[1]) >= 9:
                python = subprocess.run([pyenv, "prefix", version], capture_output=True,
                                        text=True).stdout.strip() + "/bin/python3"
                if os.path.exists(python):
                    found[version] = python
    return found


INTERPRETERS = _interpreters()


def run_probed(tmp_path, *args, python=sys.executable, extra_env=None):
    run = tmp_path / "run"
    run.mkdir()
    env = dict(os.environ, WRITERPROF_RUN=str(run), PYTHONPATH=PROBE_DIR, **(extra_env or {}))
    done = subprocess.run([python, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=120)
    return run, done


def journals(run):
    """{pid: (events, chunk records)} of every probed process; its SHM and
    PLACEMENT records among the events, as their "shm" and "placement" events."""
    out = {}
    for events_file in run.glob("hosts/*/procs/*" + journal_format.EVENTS_SUFFIX):
        events = [json.loads(line) for line in events_file.read_text().splitlines()]
        base = str(events_file)[: -len(journal_format.EVENTS_SUFFIX)]
        events += buffer_events(base)
        dtype = np.dtype([(n, "<" + t) for n, t in journal_format.CHUNK_FIELDS])
        chunks_file = Path(base + journal_format.CHUNKS_SUFFIX)  # made at the first batch of records
        chunks = np.fromfile(chunks_file, dtype=dtype) if chunks_file.exists() else np.empty(0, dtype)
        out[events[0]["pid"]] = (events, chunks)
    return out


def buffer_events(base):
    """A journal's SHM and PLACEMENT records as the events they stand for."""
    codes = {"op": journal_format.SHM_OPS, "when": journal_format.PLACEMENT_WHENS,
             "source": journal_format.PLACEMENT_SOURCES}
    out = []
    for kind, suffix in journal_format.RECORD_SUFFIXES.items():
        fields = journal_format.SHM_FIELDS if kind == "shm" else journal_format.PLACEMENT_FIELDS
        data = Path(base + suffix).read_bytes() if Path(base + suffix).exists() else b""
        record = getattr(journal_format, kind.upper())
        for values in record.iter_unpack(data):
            it = iter(values)
            e = {"kind": kind}
            for name, code in fields:
                count = int(code[0]) if code[0].isdigit() else 1
                taken = [next(it) for _ in range(count)]
                e[name] = taken if count > 1 else taken[0]
            e["name"] = e["name"].rstrip(b"\0").decode()
            for name, table in codes.items():
                if name in e:
                    e[name] = {c: s for s, c in table.items()}[e[name]]
            if kind == "placement":
                n = e.pop("nodes")
                e["nodes"] = {str(node): pages for node, pages in zip(e.pop("node")[:n], e.pop("node_pages")[:n])}
            out.append(e)
    return out


def kinds(events, kind):
    return [e for e in events if e["kind"] == kind]


@pytest.mark.parametrize("python", sorted(INTERPRETERS))
@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_writer_child_is_journaled_under_each_start_method(tmp_path, method, python):
    out = tmp_path / "out.bin"
    run, done = run_probed(tmp_path, TARGET, method, out, python=INTERPRETERS[python])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "writer exit 0\n" and "writerprof" not in done.stderr
    assert out.stat().st_size == 4 << 20  # the target's file is unchanged by the probe
    procs = journals(run)
    (main,) = [p for p, (ev, _) in procs.items() if ev[0]["role"] == "main"]
    (start,) = kinds(procs[main][0], "process_start")
    assert start["method"] == method and start["target"].endswith(".write")
    writer_events, writer_chunks = procs[start["child_pid"]]
    assert writer_events[0]["forked_from" if method != "spawn" else "ppid"] is not None
    assert kinds(writer_events, "bootstrap") and kinds(writer_events, "target_start")
    assert bool(kinds(writer_events, "main_rerun")) == (method != "fork")
    assert kinds(writer_events, "exit")
    writes = writer_chunks[writer_chunks["phase"] == journal_format.PHASES["write"]]
    assert len(writes) == 4 and (writes["bytes"] == 1 << 20).all()
    (attach,) = [e for e in kinds(writer_events, "shm") if e["op"] == "attach"]
    assert (writes["buffer"] == attach["index"]).all()
    assert (writer_chunks["phase"] == journal_format.PHASES["fsync"]).sum() == 1
    whens = {e["when"] for e in kinds(writer_events, "placement")}
    assert {"attach", "end"} <= whens
    assert not [e for ev, _ in procs.values() for e in kinds(ev, "hook")
                if e["status"] == "failed"]
    roles = {ev[0]["role"] for ev, _ in procs.values()}
    assert ("forkserver" in roles) == (method == "forkserver")


def test_inert_without_run_variable(tmp_path):
    out = tmp_path / "out.bin"
    env = dict(os.environ, PYTHONPATH=PROBE_DIR)
    env.pop("WRITERPROF_RUN", None)
    done = subprocess.run([sys.executable, TARGET, "fork", out], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "writer exit 0\n"
    assert not list(tmp_path.glob("**/*.events.jsonl"))


def test_shadowed_sitecustomize_still_runs(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text(
        "import os\nopen(os.environ['MARKER'], 'w').write('ran')\n")
    marker = tmp_path / "marker"
    run = tmp_path / "run"
    run.mkdir()
    env = dict(os.environ, WRITERPROF_RUN=str(run), MARKER=str(marker),
               PYTHONPATH=os.pathsep.join([PROBE_DIR, str(other)]))
    done = subprocess.run([sys.executable, "-c", "print('hi')"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout == "hi\n" and marker.read_text() == "ran"
    assert list(run.glob("hosts/*/procs/*.events.jsonl"))


def test_forced_start_method_overrides_the_targets_choice(tmp_path):
    run, done = run_probed(tmp_path, TARGET, "fork", tmp_path / "out.bin",
                           extra_env={"WRITERPROF_FORCE_START_METHOD": "spawn"})
    assert done.returncode == 0, done.stderr
    procs = journals(run)
    (main,) = [p for p, (ev, _) in procs.items() if ev[0]["role"] == "main"]
    (start,) = kinds(procs[main][0], "process_start")
    assert start["method"] == "spawn"
    forced = kinds(procs[main][0], "forced_start_method")
    assert any(e.get("requested") == "fork" and e["forced"] == "spawn" for e in forced)


FORK_WITH_THREAD = """
import os, threading, time
stop = threading.Event()
worker = threading.Thread(target=stop.wait, name="uploader")
worker.start()
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
stop.set()
worker.join()
"""


def test_fork_hazard_counts_live_threads(tmp_path):
    run, done = run_probed(tmp_path, "-c", FORK_WITH_THREAD)
    assert done.returncode == 0, done.stderr
    procs = journals(run)
    (parent,) = [p for p, (ev, _) in procs.items() if ev[0]["created_via"] == "exec"]
    (fork,) = kinds(procs[parent][0], "fork")
    assert fork["native_threads"] >= 2 and fork["python_threads"] == 2
    assert "uploader" in fork["threads"]
    (child,) = [ev for p, (ev, _) in procs.items() if p != parent]
    assert child[0]["role"] == "fork_child" and child[0]["forked_from"] == parent
    assert kinds(child, "exit")[0]["via"] == "os._exit"
