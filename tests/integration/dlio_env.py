"""A virtual environment with writerprof[dlio] and DLIO 2.0.0 (installed
--no-deps: see the extra in pyproject.toml), made once per pyproject.toml
and Python and kept in the tests' cache. The target runs in it; writerprof
records it from the tests' own environment (the probe and the interposer
reach it through PYTHONPATH and LD_PRELOAD, not as installed packages)."""

from __future__ import annotations

from pathlib import Path

from openmpi_env import ROOT, cached_venv, install

DLIO = "dlio-benchmark==2.0.0"


def dlio_venv() -> Path:
    with cached_venv("dlio") as (venv, ready):
        if not ready.exists():
            install(venv, f"{ROOT}[dlio]", timeout=1800)
            install(venv, "--no-deps", DLIO)
            ready.write_text(DLIO)
    return venv
