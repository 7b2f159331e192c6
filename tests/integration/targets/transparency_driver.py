"""Runs a batch of transparency programs (tests/integration/test_transparency.py)
and writes what each did, as JSON: its exit status, stdout, stderr and the
files it left in its own directory (each one's mode, size and SHA-256, and
its first bytes), plus what is not compared: its pid and its witness lines.

  python transparency_driver.py MANIFEST RESULTS

MANIFEST lists {"name", "dir", "argv"}: each program runs in DIR/files (made
anew), stdin from /dev/null, in a session of its own (a timeout kills all of
its processes). Two at a time, where two CPUs are allowed: the programs are
independent, and what each prints does not depend on the other's timing."""

import concurrent.futures
import hashlib
import json
import os
import shutil
import signal
import stat
import subprocess
import sys

TIMEOUT_S = 120  # generous: a loaded machine; a program that hangs is a finding, reported as such
HEAD_BYTES = 256


def _text(data):
    return data.decode("utf-8", "backslashreplace")


def _files(top):
    found = {}
    for directory, dirs, names in os.walk(top):
        dirs.sort()
        for name in sorted(dirs + names):
            path = os.path.join(directory, name)
            status = os.lstat(path)
            entry = {"mode": oct(stat.S_IMODE(status.st_mode)), "type": stat.S_IFMT(status.st_mode)}
            if stat.S_ISREG(status.st_mode):
                with open(path, "rb") as f:
                    data = f.read()
                entry.update(size=len(data), sha256=hashlib.sha256(data).hexdigest(), head=_text(data[:HEAD_BYTES]))
            found[os.path.relpath(path, top)] = entry
    return found


def run(program):
    files = os.path.join(program["dir"], "files")
    witness = os.path.join(program["dir"], "witness")
    shutil.rmtree(files, ignore_errors=True)
    os.mkdir(files)
    if os.path.exists(witness):
        os.remove(witness)
    proc = subprocess.Popen(program["argv"], cwd=files, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
        status = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        status = "timed out after %d s" % TIMEOUT_S
    lines = []
    if os.path.exists(witness):
        with open(witness, encoding="utf-8") as f:
            lines = f.read().splitlines()
    return {"status": status, "stdout": _text(out), "stderr": _text(err), "files": _files(files),
            "pid": proc.pid, "witness": lines}


def main():
    manifest, results = sys.argv[1:]
    with open(manifest, encoding="utf-8") as f:
        programs = json.load(f)
    workers = min(2, len(os.sched_getaffinity(0)))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        done = dict(zip((p["name"] for p in programs), pool.map(run, programs)))
    with open(results, "w", encoding="utf-8") as f:
        json.dump(done, f)


if __name__ == "__main__":
    main()
