"""The analysis notebooks run top to bottom, headless and offline, in a
Jupyter kernel of the interpreter running the tests (so on the writerprof
under test): explore_run.ipynb against a small real recording and on its
own default (it records one itself), fork_vs_forkserver.ipynb running its
own small contrast. A cell that raises fails the test (nbclient's
CellExecutionError, with the cell and its traceback)."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from helpers import run_writerprof
from nbclient import NotebookClient

from writerprof.analysis.diagnoses import CODES
from writerprof.analysis.summary import summarize
from writerprof.render import plots
from writerprof.run import load

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
KERNEL = "writerprof-notebooks-test"
CELL_TIMEOUT_S = 240
# Small enough to keep the three notebook runs well under a minute and a half.
SMALL = {"WRITERPROF_NOTEBOOK_SAVES": "2", "WRITERPROF_NOTEBOOK_SIZE": "128MiB",
         "WRITERPROF_NOTEBOOK_REPEAT": "1", "WRITERPROF_NOTEBOOK_MAIN_IMPORTS": "numpy,matplotlib.pyplot"}


@pytest.fixture(scope="module")
def jupyter_dirs(tmp_path_factory):
    """A kernelspec for sys.executable under a prefix of its own, named so that
    no kernel of the machine's can be picked instead, and Jupyter's runtime
    and IPython's profile directories kept out of the home directory."""
    root = tmp_path_factory.mktemp("jupyter")
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(root / "prefix"),
                    "--name", KERNEL, "--display-name", "writerprof tests"],
                   check=True, capture_output=True, timeout=120)
    data = root / "prefix" / "share" / "jupyter"
    assert (data / "kernels" / KERNEL / "kernel.json").exists()
    return {"JUPYTER_PATH": str(data), "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
            "IPYTHONDIR": str(root / "ipython"), "JUPYTER_PLATFORM_DIRS": "1"}


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    """A small real recording: the reproducer under forkserver, its main
    module importing numpy and matplotlib."""
    run_dir = tmp_path_factory.mktemp("notebook-run") / "run"
    run_writerprof("record", "-o", run_dir, "--", "writerprof", "repro", "--saves", "2", "--size", "128MiB",
                   "--start-method", "forkserver", "--main-imports", "numpy,matplotlib.pyplot")
    return run_dir


def execute(name: str, jupyter_dirs: dict, workdir: Path, monkeypatch, **env) -> nbformat.NotebookNode:
    """Run notebooks/NAME in a fresh kernel, in workdir, with env on top of ours; the executed notebook."""
    for key, value in jupyter_dirs.items():
        monkeypatch.setenv(key, value)  # this process finds the kernelspec and writes its connection file
    for key in [k for k in os.environ if k.startswith("WRITERPROF_NOTEBOOK_")]:
        monkeypatch.delenv(key)
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(notebook, kernel_name=KERNEL, timeout=CELL_TIMEOUT_S, allow_errors=False,
                            resources={"metadata": {"path": str(workdir)}})
    client.execute(env={**os.environ, "TMPDIR": str(workdir), **env})
    return notebook


def outputs(notebook) -> list[dict]:
    return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]


def texts(notebook) -> str:
    """Everything the notebook printed or displayed as text or HTML."""
    parts = []
    for o in outputs(notebook):
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type in ("display_data", "execute_result"):
            parts += [o.data.get("text/html", ""), o.data.get("text/markdown", "")]
    return "\n".join(parts)


def figures(notebook) -> int:
    return sum("image/png" in o.get("data", {}) for o in outputs(notebook))


def assert_explored(notebook, run_dir: Path) -> None:
    summary = summarize(load(run_dir))
    shown = texts(notebook)
    assert f"loaded {run_dir}:" in shown
    # Buffer placement, chunk timeline, save decomposition; the affinity timeline where it shows something.
    assert figures(notebook) >= 4 - len(plots.left_out(summary))
    for why in plots.left_out(summary).values():
        assert why in shown
    for p in summary["processes"]:  # the process table, a row each
        assert f">{p['pid']}<" in shown
    for s in summary["saves"]:
        assert f">{s['duration_s']:.3f}<" in shown
    assert summary["diagnoses"], "a forkserver writer re-running a heavy __main__ is diagnosed"
    for d in summary["diagnoses"]:
        assert f">{d['code']}<" in shown
        assert html.escape(d["message"], quote=False) in shown
    for code in CODES.values():  # the meanings' table, from the checks' own declarations
        assert html.escape(code.meaning, quote=False) in shown
    assert "writerprof report " in shown  # the terminal report at the end


def test_explore_run_on_a_recording(recording, jupyter_dirs, tmp_path, monkeypatch):
    notebook = execute("explore_run.ipynb", jupyter_dirs, tmp_path, monkeypatch,
                       WRITERPROF_NOTEBOOK_RUN=str(recording))
    assert_explored(notebook, recording)
    assert "main-reimport" in texts(notebook)


def test_explore_run_records_a_run_when_none_is_given(jupyter_dirs, tmp_path, monkeypatch):
    notebook = execute("explore_run.ipynb", jupyter_dirs, tmp_path, monkeypatch, **SMALL)
    (run_dir,) = tmp_path.glob("writerprof-notebook-*/run")  # in the kernel's TMPDIR
    assert "WRITERPROF_NOTEBOOK_RUN is not set" in texts(notebook)
    assert_explored(notebook, run_dir)


def test_fork_vs_forkserver_runs_the_contrast_and_explains_it(jupyter_dirs, tmp_path, monkeypatch):
    out = tmp_path / "contrast"
    notebook = execute("fork_vs_forkserver.ipynb", jupyter_dirs, tmp_path, monkeypatch,
                       WRITERPROF_NOTEBOOK_OUT=str(out), **SMALL)
    contrast = json.loads((out / "contrast.json").read_text())
    assert contrast["methods"] == ["fork", "forkserver", "forkserver+preload", "forkserver+pin"]
    shown = texts(notebook)
    assert "[1/" in shown  # the contrast's progress
    # The verdict, the component table closing on the difference, the start-up phases.
    assert html.escape(contrast["verdict"], quote=False) in shown
    primary = contrast["comparisons"]["forkserver"]
    assert f">{primary['difference_s']:+.3f}<" in shown
    assert ">start-up: __main__ re-run<" in shown and ">main_rerun<" in shown
    # The waterfall, the per-save decomposition, and a waterfall per what-if that ran.
    ran = [w for w in contrast["what_ifs"] if w["ran"]]
    assert figures(notebook) == 2 + len(ran)
    assert {w["method"] for w in contrast["what_ifs"]} == {"forkserver+preload", "forkserver+pin"}
    for w in contrast["what_ifs"]:
        if w["ran"]:
            assert f"<b>{w['method']}</b> recovers {w['recovered_s']:.3f} s per save" in shown
        else:  # said clearly, with the reason
            assert f"<b>{w['method']} was not run</b>: {html.escape(w['reason'], quote=False)}" in shown
