"""A command's own options written after CMD, where they are CMD's.

argparse stops at CMD's first word, so `writerprof record python x.py -o DIR`
hands `-o DIR` to x.py. CMD may really want it, so CMD gets its words
unchanged; but where a word is one of the command's own options, it says so
in one line, before CMD runs, with the command line that gives them to
writerprof instead."""

from __future__ import annotations

import argparse
import shlex
import sys

SEPARATOR = "--"
# Every program has these: after CMD they are CMD's, and no one means writerprof's.
HELP = ("-h", "--help")


def split(parser: argparse.ArgumentParser, command: list[str],
          cmd_own: tuple[str, ...] = ()) -> tuple[list[list[str]], list[str]]:
    """command's arguments that are parser's options, each with the words
    of its value, and command without them. cmd_own: parser's options that
    apply only where there is no CMD, so that after one they are CMD's."""
    options = parser._option_string_actions  # every option string, long and short, of every action
    moved, kept = [], command[:1]
    i = 1
    while i < len(command):
        word = command[i]
        name, joined, _ = word.partition("=") if word.startswith("--") else (word, "", "")
        action = options.get(name) if name not in HELP + cmd_own else None
        if action is None:
            kept.append(word)
            i += 1
            continue
        values = 0 if joined else (action.nargs if isinstance(action.nargs, int) else 1)
        moved.append(command[i:i + 1 + values])
        i += 1 + values
    return moved, kept


def warn(parser: argparse.ArgumentParser, argv: list[str], cmd: list[str], cmd_own: tuple[str, ...] = ()) -> None:
    """One line on stderr if CMD's arguments (cmd: the tail of writerprof's
    argv, from its `--` if it has one) hold options of parser's (but cmd_own: split)."""
    command = cmd[1:] if cmd[:1] == [SEPARATOR] else cmd
    moved, kept = split(parser, command, cmd_own)
    if not moved:
        return
    before = argv[:len(argv) - len(cmd)]  # argparse keeps a `--` in cmd, its REMAINDER
    name = parser.prog.split()[-1]
    shown = [f"'{' '.join(words)}'" for words in moved]
    shown = " and ".join([", ".join(shown[:-1]), shown[-1]] if len(shown) > 1 else shown)
    verb, pronoun = ("comes", "it goes") if len(moved) == 1 else ("come", "they go")
    fixed = shlex.join(["writerprof", *before, *(word for words in moved for word in words), SEPARATOR, *kept])
    print(f"{parser.prog}: {shown} {verb} after the command, so {pronoun} to the command, not to {name}: "
          f"put {name}'s options before the command ({fixed})", file=sys.stderr)
