"""Damaged run directories, made by hypothesis from a real recording (the
reproducer with stacks) and a synthetic run of two hosts: every file they
hold is cut, overwritten with random bytes, replaced by a directory, or has
a JSON field given a value of another type (a string for a dict, a number
for a list, null, huge and negative numbers, nested wrong types), a future
or impossible schema; and every command that reads a run either works or
says in one line why not and exits 1. Never a traceback, and never because
cli.main's last-resort catch hid an exception: the loader handles the damage.

The commands run in-process (writerprof.cli.main) for speed; the examples
are derandomized, so a run in CI tries the same ones every time."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import run_writerprof, writerprof_command

from writerprof import cli
from writerprof.synthetic import Scenario, write_run

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# A value of some other type than the one a field has, or an extreme one.
ODD_VALUES = st.one_of(
    st.sampled_from(["oops", "", None, True, -1, 0, 2**63, -(2**63), 10**30, -(10**30), 1.5, [], {},
                     [1, "x", None], {"a": {"b": []}}, {"nodes": "oops"}, "\udce9", 99]),
    st.integers(), st.text(max_size=5), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers() | st.none(), max_size=2),
)

FAST = (  # each reads the run: loader, analysis, text and JSON renderers, exports (stacks included)
    ["report", "{run}"], ["report", "--json", "{run}"], ["compare", "{run}", "{base}"],
    ["export", "{run}", "--perfetto", "{out}/trace.json", "--speedscope", "{out}/stacks.json"],
    ["merge", "{run}", "-o", "{out}/merged"],
)
SLOW = (  # the ones that draw (matplotlib): a second each
    ["report", "{run}", "--html", "{out}/report.html", "--plots", "{out}/plots"], ["plot", "{run}", "-o", "{out}/p"],
    ["flame", "{run}", "--role", "all", "-o", "{out}/flame"],
)


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    """The undamaged runs: a real recording with stacks and a synthetic one of two hosts."""
    tmp = tmp_path_factory.mktemp("fuzz")
    run_writerprof("record", "-o", tmp / "real", "--", *writerprof_command(), "repro", "--saves", "1",
                   "--size", "8MiB", "--chunk-size", "1MiB")
    write_run(tmp / "synthetic", Scenario(hosts=2, ranks_per_host=1, saves=1, chunks_per_save=4))
    return {"real": tmp / "real", "synthetic": tmp / "synthetic"}


def files_of(run: Path) -> list[str]:
    return sorted(p.relative_to(run).as_posix() for p in run.rglob("*") if p.is_file())


def _paths(value, prefix=()):
    """Every path into a JSON document, the document itself first."""
    yield prefix
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, prefix + (key,))


def _set(document, path, value):
    if not path:
        return value
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


def _confuse(draw, document, values) -> bytes:
    """A JSON document with one of its values (or itself) replaced."""
    paths = list(_paths(document))
    path = draw(st.sampled_from(paths[1:] or paths))
    return json.dumps(_set(document, path, draw(values))).encode()


DIRECTORY = None  # the file replaced by a directory


@st.composite
def damage(draw, base: Path):
    """(what was done, file, its new bytes or DIRECTORY), from an undamaged run."""
    name = draw(st.sampled_from(files_of(base)))
    how = draw(st.sampled_from(["truncate", "random bytes", "overwrite a slice", "directory", "confuse a field",
                                "future schema", "impossible schema", "huge numbers"]))
    data = (base / name).read_bytes()
    what = f"{how} {name}"
    if how == "truncate":
        return what, name, data[: draw(st.integers(0, max(len(data) - 1, 0)))]
    if how == "random bytes":
        return what, name, draw(st.binary(min_size=1, max_size=4096))
    if how == "overwrite a slice":
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        patch = draw(st.binary(min_size=1, max_size=64))
        return what, name, data[:at] + patch + data[at + len(patch):]
    if how == "directory":
        return what, name, DIRECTORY
    if how == "huge numbers" and name.endswith(".bin") and len(data) >= 8:
        # An 8-byte field of some record set to a huge or negative value.
        at = draw(st.integers(0, len(data) // 8 - 1)) * 8
        value = draw(st.sampled_from([2**63 - 1, -(2**63), -1, 2**62, 10**18]))
        return what, name, data[:at] + value.to_bytes(8, "little", signed=True) + data[at + 8:]
    new_schema = how in ("future schema", "impossible schema")
    schema = 99 if how == "future schema" else draw(st.sampled_from([0, -1, "1", None, 1.0])) if new_schema else None
    huge = st.sampled_from([2**63 - 1, -(2**63), -1, 10**30, -(10**30)])
    if name.endswith(".json"):
        document = json.loads(data)
        if new_schema:
            document["schema"] = schema
            return what, name, json.dumps(document).encode()
        return what, name, _confuse(draw, document, huge if how == "huge numbers" else ODD_VALUES)
    if name.endswith(".jsonl") and data:
        lines = data.split(b"\n")
        if new_schema:  # the identity line, in a journal
            at = 0
            record = json.loads(lines[0])
            record["schema"] = schema
            lines[0] = json.dumps(record).encode()
        else:
            at = draw(st.integers(0, max(len(lines) - 2, 0)))
            lines[at] = _confuse(draw, json.loads(lines[at]), huge if how == "huge numbers" else ODD_VALUES)
        return f"{what} line {at}", name, b"\n".join(lines)
    return f"cut in half (for {how}) {name}", name, data[: len(data) // 2]


def run_command(argv: list[str]) -> tuple[int, str, str]:
    """cli.main in-process: its exit status and everything it printed."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exc:  # --help, --version only
            code = exc.code
    return code, out.getvalue() + err.getvalue(), err.getvalue()


def check_commands(commands, run: Path, base: Path, out: Path, what: str) -> None:
    for template in commands:
        if out.exists():
            shutil.rmtree(out)
        out.mkdir()
        argv = [a.format(run=run, base=base, out=out) for a in template]
        code, printed, errors = run_command(argv)
        said = f"{what}: writerprof {' '.join(argv)} exited {code}:\n{printed[-3000:]}"
        assert "Traceback" not in printed, said
        assert cli.INTERNAL_ERROR not in printed, said  # the loader must handle damage, not the catch-all
        assert code in (0, 1), said
        if code == 1:  # one line saying why (a flame or export of a run without stacks also notes losses)
            lines = errors.strip().splitlines()
            assert lines and ": " in lines[0], said
            assert all(line.startswith(f"writerprof {argv[0]}") for line in lines), said


def _fuzz(bases, tmp_path_factory, kind: str, commands, data) -> None:
    base = bases[kind]
    what, name, content = data.draw(damage(base))
    tmp = tmp_path_factory.mktemp("damaged")
    run = tmp / "run"
    shutil.copytree(base, run)
    (run / name).unlink()
    if content is DIRECTORY:
        (run / name).mkdir()
    else:
        (run / name).write_bytes(content)
    check_commands(commands, run, base, tmp / "out", what)
    if _must_be_stated(what, name, content):
        code, printed, _ = run_command(["report", "--json", str(run)])
        assert code == 1 or json.loads(printed)["run"]["losses"], f"{what}: loaded without a loss"
    shutil.rmtree(tmp)


# Files the loader reads (the stacks are read by flame and export, and say their losses there).
LOADED = ("run.json", "topology.json", "samples.bin", "sampled.jsonl", ".events.jsonl", ".chunks.bin")


def _must_be_stated(what: str, name: str, content) -> bool:
    """Whether this damage cannot pass unsaid: a directory for a file, random
    bytes (unless only blank lines), a schema no writerprof wrote."""
    if not name.endswith(LOADED):
        return False
    if what.startswith("directory"):
        return True
    if what.startswith("random bytes"):
        return bool(content.strip()) or name.endswith((".events.jsonl", ".bin", ".json"))
    return what.startswith(("future schema", "impossible schema")) and not name.endswith("sampled.jsonl")


def fuzz_settings(examples: int) -> settings:
    return settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.mark.parametrize("kind", ["real", "synthetic"])
@fuzz_settings(int(os.environ.get("WRITERPROF_FUZZ_EXAMPLES", 300)))
@given(data=st.data())
def test_damaged_runs_work_or_say_why(bases, tmp_path_factory, kind, data):
    _fuzz(bases, tmp_path_factory, kind, FAST, data)


@pytest.mark.parametrize("kind", ["real", "synthetic"])
@fuzz_settings(int(os.environ.get("WRITERPROF_FUZZ_SLOW_EXAMPLES", 4)))
@given(data=st.data())
def test_damaged_runs_draw_or_say_why(bases, tmp_path_factory, kind, data):
    _fuzz(bases, tmp_path_factory, kind, SLOW, data)
