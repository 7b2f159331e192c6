"""The example outputs shown in README.md and docs/: each made by a real
command here, and the shape a documented example must keep.

    python docs/examples/examples.py [NAME ...] [--dir DIR]

runs the examples (all, or those named) in DIR (default: a new temporary
directory) and prints each one's output, to paste into the docs. A code
block in the docs shows an example's output when the line before its fence
is `<!-- example: NAME -->`. tests/integration/test_doc_examples.py runs
them and fails when a block's shape drifts from what the command prints
now: its headed lines (those that start at the first column: titles,
headings, the verdict's lines, `fix:`), numbers, paths and spacing masked,
must all be among the output's, in the same order (a fix's lines only
where that run found a cause to fix). Trimmed parts (`...`),
indented rows and wrapped lines are free: they vary with the numbers.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from writerprof.analysis.compare import DETAIL_HEADINGS

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ROOT / "tests" / "integration" / "targets"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TAG = re.compile(r"^<!-- example: ([a-z0-9-]+) -->$")


def writerprof() -> list[str]:
    script = Path(sys.executable).with_name("writerprof")
    return [str(script)] if script.exists() else [sys.executable, "-m", "writerprof"]


def _run(args: list[str], cwd: Path) -> str:
    """What the command prints, stderr then stdout (as a terminal shows a run that ends)."""
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {done.returncode}:\n{done.stderr}")
    return done.stderr + done.stdout


def _contrast_default(work: Path) -> str:
    return _run(writerprof() + ["contrast", "-o", str(work / "cdefault")], work)


def _report(work: Path) -> str:
    if not (work / "cdefault").exists():
        _contrast_default(work)
    return _run(writerprof() + ["report", str(work / "cdefault" / "runs" / "02-forkserver")], work)


def _contrast_program(work: Path) -> str:
    for name in ("pool_heavy_main.py", "slow_import.py"):
        shutil.copy(TARGETS / name, work / name)
    return _run(writerprof() + ["contrast", "-o", str(work / "ex"), "--", sys.executable, "pool_heavy_main.py"],
                work)


def _record(work: Path) -> str:
    return _run(writerprof() + ["record", "-o", str(work / "fl"), "--"] + writerprof()
                + ["repro", "--saves", "2", "--size", "256MiB", "--start-method", "forkserver",
                   "--main-imports", "numpy,matplotlib.pyplot"], work)


def _compare_same(work: Path) -> str:
    for name in ("fork-1", "fork-2"):
        _run(writerprof() + ["record", "-o", str(work / name), "--"] + writerprof()
             + ["repro", "--saves", "4", "--size", "64MiB", "--start-method", "fork"], work)
    return _run(writerprof() + ["compare", "fork-1", "fork-2"], work)


EXAMPLES = {"contrast-default": _contrast_default, "report": _report, "contrast-program": _contrast_program,
            "record": _record, "compare-same": _compare_same}


def produce(name: str, work: Path) -> str:
    return EXAMPLES[name](work)


def documented() -> dict[str, list[tuple[str, list[str]]]]:
    """Each example's blocks in the docs: name -> [(where, the block's lines)]."""
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for path in DOCS:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            found = TAG.match(line)
            if not found or i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
                continue
            end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
            where = f"{path.relative_to(ROOT)}:{i + 1}"
            out.setdefault(found.group(1), []).append((where, lines[i + 2:end]))
    return out


# The verdict's second line says what this run found: a top cause, a part
# clear of a difference that is noise, or none. One shape, whichever it is.
FINDINGS = ("Top cause:", "Clear of", "No cause", "No single", "That is", "The figure's")
FINDING = "<the verdict's finding>"
# Lines only a run that found a cause prints (its fix), and the verdict's details'
# headings, each printed only where the run has lines for it: checked where the output has them.
WITH_A_CAUSE = ("Best fix", "fix:")
DETAILS = tuple(heading + ":" for heading in DETAIL_HEADINGS)
_NUMBER = re.compile(r"[-+±]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def mask(line: str) -> str:
    """A line's shape: paths, numbers and runs of spaces made alike."""
    words = ["<path>" if "/" in w and not w.startswith("(") else w for w in line.split()]
    return " ".join(_NUMBER.sub("#", w) for w in words)


def headed(lines: list[str]) -> list[str]:
    """The masked lines that start at the first column, but the command's own
    line, trims (`...`) and what the documented program prints itself."""
    return [mask(line) for line in lines
            if line and not line[0].isspace() and not line.startswith(("$ ", "...")) and not line.endswith("\\")]


def drift(block: list[str], output: str) -> list[str]:
    """The block's headed lines that are not among the output's in order
    (by their first two words, masked: the rest says what this run found):
    [] where the shape holds."""
    def key(line: str) -> str:
        words = " ".join(line.split()[:2])
        return FINDING if words.startswith(FINDINGS) else words

    theirs = [key(line) for line in headed(output.splitlines())]
    missing, at = [], 0
    for line in headed(block):
        if line.startswith(WITH_A_CAUSE + DETAILS) and key(line) not in theirs:
            continue  # this run found no cause to fix (the verdict's finding says so), or nothing to detail
        if key(line) == FINDING and FINDING not in theirs:
            continue  # a one-line verdict: the two sides took the same time within 1%
        try:
            at = theirs.index(key(line), at) + 1
        except ValueError:
            missing.append(line)
    return missing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"of: {', '.join(EXAMPLES)} (default: all)")
    parser.add_argument("--dir", type=Path)
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in EXAMPLES]
    if unknown:
        parser.error(f"unknown example(s) {', '.join(unknown)}: known are {', '.join(EXAMPLES)}")
    work = args.dir or Path(tempfile.mkdtemp(prefix="writerprof-examples-"))
    work.mkdir(parents=True, exist_ok=True)
    for name in args.names or EXAMPLES:
        print(f"<!-- example: {name} -->\n```\n{produce(name, work)}```\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
