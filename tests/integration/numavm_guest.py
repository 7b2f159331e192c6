"""Commands on the two-node guest (../shared/numavm), for the numavm tests:
the harness found or the test skipped, the guest's view of this interpreter,
and one run of shell steps whose files come back through /xfer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[3] / "shared" / "numavm" / "run-in-numa-vm.sh"


def guest_path(path: str) -> str:
    """The guest has a fresh /tmp; the host's is read-only at /host-tmp."""
    return "/host-tmp" + path[len("/tmp"):] if path == "/tmp" or path.startswith("/tmp/") else path


def guest_python() -> str:
    return guest_path(sys.executable)


# Run directories are recorded into the guest's own tmpfs and copied to /xfer
# as the steps end (passed or failed): /xfer is a 9p share without a cache, and
# every journal write there is a round trip through the emulator (a recording
# of placed_fill.py: 16.0 s into /xfer, 8.0 s into /tmp and 0.4 s to copy).
GUEST_RUNS = "/tmp/writerprof-runs"


def guest_run(name: str) -> str:
    """Where a step records run `name` (the host reads it at xfer / name)."""
    return f"{GUEST_RUNS}/{name}"


def run_steps(tmp_path_factory, name: str, steps: list[str], balancing: bool) -> Path:
    """Run the shell steps in one guest, from /xfer (a checkout in the working
    directory would shadow the installed package); the host side of /xfer.
    balancing: automatic NUMA balancing on (the guest's default), or off so
    that pages stay where first touch put them."""
    if not HARNESS.exists():
        pytest.skip(f"numavm harness not found at {HARNESS} (present in this repository's CI only)")
    xfer = tmp_path_factory.mktemp(name)
    # (Within pytest's timeout: three times the longest guest's quiet ~200 s, and a margin.)
    env = dict(os.environ, NUMAVM_XFER=str(xfer), NUMAVM_QUIET="1", NUMAVM_TIMEOUT="840")
    # norandmaps: every process maps the interpreter and its libraries at the same
    # addresses, so the emulator reuses the code it translated for the last one
    # (python -c pass: 0.35 s in the guest, against 0.72-0.80 s with ASLR).
    env["NUMAVM_APPEND"] = "norandmaps" + ("" if balancing else " numa_balancing=disable")
    script = f"set -e; mkdir -p {GUEST_RUNS}; trap 'cp -a {GUEST_RUNS}/. /xfer/' EXIT; cd /xfer; "
    done = subprocess.run(["bash", str(HARNESS), script + "; ".join(steps)], env=env,
                          capture_output=True, text=True, timeout=870)
    if done.returncode == 125:
        pytest.skip(f"the numavm guest could not start: {done.stderr.strip().splitlines()[-1:]}")
    assert done.returncode == 0, f"guest exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return xfer
