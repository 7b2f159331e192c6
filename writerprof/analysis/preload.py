"""The forkserver's preload list, as CPython treats it: whether an
interpreter honours '__main__' in it, and the list a recorded forkserver was
started with.

With '__main__' in the list, the forkserver is meant to run the parent's main
script once, so that its children do not re-run it. CPython passed the
script's path under a key (main_path) that spawn.get_preparation_data() has
not produced since 3.4, so '__main__' was silently skipped (gh-126631,
gh-137996) until the fix of September 2025: CPython 3.13.8 on the 3.13 line,
3.14.1 on 3.14 (the backport came after 3.14.0), and 3.15. The other names in
the list were always imported by the forkserver, its children inheriting
them.

A recorded forkserver says it for itself: its command line holds
`main(FD, FD, PRELOAD, **KWARGS)`, and KWARGS has main_path exactly when the
interpreter hands the script to the forkserver (every fixed CPython does
whenever the list is not empty).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from writerprof.run import roles

# The first releases that honour '__main__' in the preload list, per line (later lines all do).
HONOURED_FROM = {(3, 13): (3, 13, 8), (3, 14): (3, 14, 1)}
FIRST_LINE_FIXED = (3, 15)
ISSUE = "gh-126631"
FIXED_IN = "3.13.8 and 3.14.1"


@dataclass(frozen=True)
class Forkserver:
    """A recorded forkserver daemon's start: its preload list and whether it
    was given the main script's path (None: it was not, or it had no list)."""

    preload: tuple[str, ...]
    main_path: str | None


def version(text: str | None) -> tuple[int, ...] | None:
    """'3.11.7' as (3, 11, 7); None where it is not a version."""
    try:
        return tuple(int(part) for part in (text or "").split(".")[:3]) or None
    except ValueError:
        return None


def honours_main(python: str | None, recorded: Forkserver | None = None) -> bool | None:
    """Whether '__main__' in set_forkserver_preload's list spares the children
    the re-run of __main__: as the recorded forkserver shows it (it had a
    list and was, or was not, given the script's path), else by the CPython
    version; None where neither tells."""
    if recorded is not None and recorded.preload:
        return recorded.main_path is not None
    v = version(python)
    if v is None or len(v) < 2:
        return None
    if v[:2] >= FIRST_LINE_FIXED:
        return True
    fixed_from = HONOURED_FROM.get(v[:2])
    return fixed_from is not None and v >= fixed_from


def recorded(run) -> Forkserver | None:
    """The first forkserver daemon of the run, from its command line; None
    where the run has none (or its command line does not say)."""
    for event in run.events_of("process"):
        data = event["data"]
        if data.get("role") == roles.FORKSERVER:
            found = from_argv(data.get("argv") or [])
            if found is not None:
                return found
    return None


def from_argv(argv: list[str]) -> Forkserver | None:
    """The preload list and main path of `python -c "from multiprocessing.forkserver
    import main; main(FD, FD, PRELOAD, **KWARGS)"` (CPython 3.9-3.15; from
    gh-144503 also `sys_argv=sys.argv[1:]`, the parent's arguments after it)."""
    code = argv[argv.index("-c") + 1] if "-c" in argv[:-1] else None
    if code is None:
        return None
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "main" and len(node.args) >= 3:
            try:
                preload = ast.literal_eval(node.args[2])
                kwargs = {}
                for keyword in node.keywords:
                    if keyword.arg == "sys_argv":  # sys.argv[1:], the parent's arguments (gh-144503): not a literal
                        continue
                    value = ast.literal_eval(keyword.value)
                    kwargs.update(value if keyword.arg is None else {keyword.arg: value})
            except (ValueError, TypeError):  # not literals: not CPython's line
                return None
            if not isinstance(preload, list) or not all(isinstance(m, str) for m in preload):
                return None
            main_path = kwargs.get("main_path")
            return Forkserver(tuple(preload), main_path if isinstance(main_path, str) else None)
    return None
