"""The notebooks are committed without stored outputs: no outputs, no
execution counts, no run timings, no kernel version. Outputs hold machine-specific numbers,
paths and megabytes of PNG, and would change with every run.

To strip them after running a notebook in Jupyter (no extra dependency):

    python tests/unit/test_notebooks_stripped.py
"""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# Cell metadata that running a notebook adds (nbclient's and JupyterLab's timings, output view state).
RUN_METADATA = ("execution", "collapsed", "scrolled")


def problems(notebook: dict) -> list[str]:
    """What in a notebook is left from running it."""
    found = []
    for number, cell in enumerate(notebook["cells"], start=1):
        if cell["cell_type"] == "code":
            if cell.get("outputs"):
                found.append(f"cell {number}: {len(cell['outputs'])} stored output(s)")
            if cell.get("execution_count") is not None:
                found.append(f"cell {number}: execution_count {cell['execution_count']}")
        found += [f"cell {number}: metadata {key!r}" for key in RUN_METADATA if key in cell.get("metadata", {})]
    metadata = notebook.get("metadata", {})
    if "widgets" in metadata:
        found.append("notebook metadata 'widgets' (widget state)")
    if set(metadata.get("language_info", {})) - {"name"}:
        found.append("notebook metadata 'language_info' beyond its name (the kernel's Python version)")
    return found


def strip(notebook: dict) -> dict:
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        for key in RUN_METADATA:
            cell.get("metadata", {}).pop(key, None)
    metadata = notebook.setdefault("metadata", {})
    metadata.pop("widgets", None)
    if "language_info" in metadata:
        metadata["language_info"] = {"name": metadata["language_info"].get("name", "python")}
    return notebook


def test_both_notebooks_are_there():
    assert {"explore_run.ipynb", "fork_vs_forkserver.ipynb"} <= {path.name for path in NOTEBOOKS}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_is_stored_without_outputs(path):
    notebook = json.loads(path.read_text())
    assert notebook["nbformat"] == 4
    left = problems(notebook)
    assert not left, (f"{path.name} holds what running it left ({'; '.join(left)}); strip it with "
                      f"'python tests/unit/test_notebooks_stripped.py'")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.name)
def test_notebook_runs_in_a_plain_python_kernel(path):
    """Its kernelspec is the generic one: no name from somebody's machine."""
    kernelspec = json.loads(path.read_text())["metadata"]["kernelspec"]
    assert kernelspec["name"] == "python3" and kernelspec["language"] == "python"


if __name__ == "__main__":
    for path in (Path(arg) for arg in sys.argv[1:]) if sys.argv[1:] else NOTEBOOKS:
        notebook = json.loads(path.read_text())
        if problems(notebook):
            # As nbformat writes it (indent 1, sorted keys), so that a diff shows only the change.
            path.write_text(json.dumps(strip(notebook), indent=1, sort_keys=True, ensure_ascii=False) + "\n")
            print(f"stripped {path}")
