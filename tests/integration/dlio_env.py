"""A virtual environment with writerprof[dlio] and DLIO 2.0.0 (installed
--no-deps: see the extra in pyproject.toml), made once per pyproject.toml
and Python and kept in the tests' cache. The target runs in it; writerprof
records it from the tests' own environment (the probe and the interposer
reach it through PYTHONPATH and LD_PRELOAD, not as installed packages)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openmpi_env import ROOT, _locked
from testcache import CACHE

DLIO = "dlio-benchmark==2.0.0"


def _install(venv: Path, *args: str) -> None:
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *args],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        shutil.rmtree(venv, ignore_errors=True)
        pytest.skip(f"cannot install {' '.join(args)}: {done.stderr.strip()[-400:]}")


def dlio_venv() -> Path:
    key = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + sys.version.encode())
    venv = CACHE / f"venv-dlio-{key.hexdigest()[:12]}"
    ready = venv / ".writerprof-ready"
    with _locked(CACHE / "venv-dlio.lock"):
        if not ready.exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            _install(venv, f"{ROOT}[dlio]")
            _install(venv, "--no-deps", DLIO)
            ready.write_text(DLIO)
    return venv
