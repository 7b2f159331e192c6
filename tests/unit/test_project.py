"""The README's promises about set-up hold for the files that CI runs."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    """The set-up's first two blocks: making a virtual environment and the
    main job, then the test command."""
    setup = ROOT.joinpath("README.md").read_text().split("## Set up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", setup, re.S)[:2]


def test_readme_sets_up_a_virtual_environment_then_the_main_job_then_the_tests():
    venv, main = _readme_commands()[0].splitlines()
    assert venv.startswith("python3 -m venv ") and main.startswith("pip install . && writerprof ")
    assert _readme_commands()[1].startswith("pip install '.[test]' && pytest")


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = _readme_commands()[1]
    ci_lines = ROOT.joinpath(".ci", "run").read_text().splitlines()
    assert test_command in ci_lines


def test_every_package_is_installed():
    """setuptools lists packages by hand (probes/ maps into writerprof.probes):
    a package missing from the list would be missing from `pip install .`."""
    tomllib = pytest.importorskip("tomllib")  # 3.11+

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = {package: ROOT / path for package, path in config["package-dir"].items()}
    listed = set(config["packages"])
    for package in listed:
        base = next((d for p, d in mapped.items() if package == p or package.startswith(p + ".")),
                    None)
        if base is None:
            path = ROOT / package.replace(".", "/")
        else:
            prefix = next(p for p in mapped if package == p or package.startswith(p + "."))
            path = base.joinpath(*package[len(prefix):].split(".")[1:])
        assert (path / "__init__.py").exists(), package
    on_disk = {str(d.relative_to(ROOT)).replace("/", ".") for d in (ROOT / "writerprof").rglob("*")
               if (d / "__init__.py").exists()} | {"writerprof"}
    on_disk |= {"writerprof." + str(d.relative_to(ROOT)).replace("/", ".")
                for d in (ROOT / "probes").rglob("*") if (d / "__init__.py").exists()}
    on_disk.add("writerprof.probes")
    assert on_disk - {p for p in on_disk if "__pycache__" in p} <= listed
