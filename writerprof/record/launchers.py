"""MPI launchers and record's variables: whether mpirun is told to forward
them to ranks on other hosts, the lists of variables on CMD's command line
they join, and, once CMD has ended, the check that every rank of the job was
probed.

Open MPI's mpirun gives the ranks on its own host its whole environment, so
those are probed whatever it is told; ranks on other hosts get only what it
forwards: the variables `-x` names and those OMPI_MCA_mca_base_env_list names
(the environment's value; `--mca mca_base_env_list` on mpirun's command line
replaces it, and it replaces an MCA parameter file's). Open MPI 5 (PRRTE)
forwards both `-x` and the list; Open MPI 4 and older (ORTE's orterun)
refuses to start when the list is set and `-x` is given ("mixing these two
methods", orte/mca/schizo/ompi/schizo_ompi.c: parse_env). So record adds
its variables to a list the user set in the environment (which rules `-x`
out under 4.x already), sets one beside any mpirun but ORTE's (keeping an
MCA parameter file's list, which it would hide), and tells ORTE's mpirun
nothing: a rank that goes unprobed for it is found afterwards and said.

A list on CMD's command line outranks the environment's, so record adds its
variables to it there (on_command_line): Open MPI's `--mca
mca_base_env_list` (any Open MPI: a user's list there already rules `-x`
out under ORTE), and MPICH Hydra's `-genvlist`/`-envlist` (only the listed
variables reach the ranks on other hosts; Hydra's proxy on mpiexec's own host
inherits everything); Hydra's `-genvnone`/`-envnone` (none) become a list of
record's variables alone, since Hydra refuses both at once.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
from typing import NamedTuple

OMPI_ENV_LIST = "OMPI_MCA_mca_base_env_list"  # ';'-separated names (or NAME=value)
PARAM_FILES = "OMPI_MCA_mca_base_param_files"  # ','-separated; "none" for none
_LAUNCHERS = {"mpirun", "mpiexec", "mpiexec.hydra", "orterun", "oshrun", "prterun"}
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}  # a script CMD may run an MPI launcher itself


def forward(env: dict, names: list[str], command: list[str]) -> None:
    """Name `names` in env's (CMD's) OMPI_MCA_mca_base_env_list where no
    Open MPI that CMD may run refuses it, keeping what the user listed."""
    listed = env.get(OMPI_ENV_LIST)
    if listed is None:
        found = launchers(command, env)
        if any(orte(path) for path in found):
            return  # ORTE's mpirun would refuse it beside a -x; its host's ranks inherit record's variables
        listed = _param_file_list(env, found)
    env[OMPI_ENV_LIST] = _merged(listed or "", names, ";")


def _merged(listed: str, names: list[str], separator: str) -> str:
    """A launcher's list of variables with `names` after those it has."""
    kept = [v for v in listed.split(separator) if v]
    return separator.join(kept + [n for n in names if n not in kept])


# The options of a launcher's command line that list the variables its ranks
# get, spelt as the launcher takes them: Open MPI `-mca`/`--mca` (`-gmca`,
# `--omca` alike) KEY VALUE; Hydra `-NAME`, `--NAME`, `-NAME=VALUE`.
_OMPI_MCA = {"-mca", "--mca", "-gmca", "--gmca", "-omca", "--omca"}
_OMPI_LIST = "mca_base_env_list"
_HYDRA_LISTS = {"genvlist", "envlist"}
_HYDRA_NONE = {"genvnone": "genvlist", "envnone": "envlist"}  # none -> a list, of record's variables
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash"}
# A shell script's words (quotes and escapes kept in them) and the operators
# that end a command (a launcher's options go no further).
_SHELL_TOKEN = re.compile(r"""(?P<word>(?:[^\s'"\\;&|<>()]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+)|(?P<end>[;&|\n()])""")


class _Token(NamedTuple):
    word: int  # which word of CMD
    span: tuple[int, int] | None  # where in that word, a shell string; None: the whole word
    value: str | None  # what the program gets; None where the shell makes it ($, `)
    end: bool = False  # a shell operator that ends a command (`;`, `&&`, `|`, ...)


def on_command_line(command: list[str], names: list[str]) -> tuple[list[str], list[str]]:
    """CMD with `names` added to every list of variables that a launcher's
    options give on its command line (in a shell's script too), after what the
    user listed; and each option so changed, as written."""
    tokens = list(_tokens(command))
    edits: dict[int, list[str] | str] = {}  # token -> its new words, or a shell string's new text
    changed, launched = [], False
    for i, token in enumerate(tokens):
        launched = launched and not token.end
        if token.value is None:
            continue
        if os.path.basename(token.value) in _LAUNCHERS:
            launched = True
            continue
        if not launched:
            continue
        after = list(itertools.takewhile(lambda t: not t.end, tokens[i + 1:i + 3]))  # its values
        option, equals, listed = token.value.partition("=")
        dashes = len(option) - len(option.lstrip("-"))
        name = option[dashes:]
        if token.value in _OMPI_MCA and len(after) == 2 and after[0].value == _OMPI_LIST:
            edits[i + 2] = _joined(command, after[1], names, ";")
        elif dashes not in (1, 2) or name not in _HYDRA_LISTS | _HYDRA_NONE.keys():
            continue
        elif name in _HYDRA_NONE:
            edits[i] = [option[:dashes] + _HYDRA_NONE[name], ",".join(names)]
        elif equals:
            edits[i] = [f"{option}={_merged(listed, names, ',')}"]
        elif after:
            edits[i + 1] = _joined(command, after[0], names, ",")
        else:
            continue
        changed.append(f"{token.value} {_OMPI_LIST}" if token.value in _OMPI_MCA else
                       f"{option}, as {option[:dashes]}{_HYDRA_NONE[name]}" if name in _HYDRA_NONE else option)
    return _rebuilt(command, tokens, edits), changed


def _tokens(command: list[str]):
    """CMD's words, and the words of those that are a shell's script (`sh -c SCRIPT`)."""
    for index, word in enumerate(command):
        if not _script(command, index):
            yield _Token(index, None, word)
            continue
        for match in _SHELL_TOKEN.finditer(word):
            text = match.group("word")
            yield _Token(index, match.span(), _shell_value(text) if text else None, end=not text)


def _script(command: list[str], index: int) -> bool:
    """Whether CMD's word is the script of a shell's -c (`bash -lc SCRIPT`): not
    any word with a space (`python -c CODE`'s code)."""
    options = 0
    while index - options - 1 >= 0 and command[index - options - 1].startswith("-"):
        options += 1
    return (options > 0 and re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", command[index - 1]) is not None
            and index - options - 1 >= 0 and os.path.basename(command[index - options - 1]) in _SHELLS)


def _shell_value(text: str) -> str | None:
    """A shell word's value, or None where the shell makes it when it runs."""
    if "$" in text or "`" in text:
        return None
    try:
        words = shlex.split(text)
    except ValueError:
        return None
    return words[0] if len(words) == 1 else None


def _joined(command: list[str], token: _Token, names: list[str], separator: str) -> list[str] | str:
    """A list's token with `names` joined: its new words, or where the shell
    makes its value, its text with them appended (the shell joins the two)."""
    if token.value is not None:
        return [_merged(token.value, names, separator)]
    return command[token.word][slice(*token.span)] + shlex.quote(separator + separator.join(names))


def _rebuilt(command: list[str], tokens: list[_Token], edits: dict) -> list[str]:
    out = []
    for index, word in enumerate(command):
        mine = sorted(((tokens[i], edit) for i, edit in edits.items() if tokens[i].word == index),
                      key=lambda pair: pair[0].span or (0, 0), reverse=True)
        for token, edit in mine:
            if token.span is None:
                word = edit
            else:
                text = edit if isinstance(edit, str) else " ".join(map(shlex.quote, edit))
                word = word[:token.span[0]] + text + word[token.span[1]:]
        out += word if isinstance(word, list) else [word]
    return out


def launchers(command: list[str], env: dict) -> list[str]:
    """The MPI launchers CMD may run: those its words name (in a shell
    string too) found on its PATH, else every mpirun and mpiexec there (a
    script that runs `mpirun` runs the first)."""
    path = env.get("PATH", os.defpath)
    named = {token for word in command for token in word.split() if os.path.basename(token) in _LAUNCHERS}
    found = [p for p in (shutil.which(token, path=path) for token in sorted(named)) if p]
    return found or [p for p in (os.path.join(d, name) for d in path.split(os.pathsep) if d
                                 for name in ("mpirun", "mpiexec")) if os.access(p, os.X_OK)]


def may_reach_other_hosts(command: list[str], env: dict) -> bool:
    """Whether CMD may start ranks on other hosts (record then listens for
    their parts: writerprof.record.homecoming): its words name an MPI
    launcher or srun (in a shell string too), or it is a shell script with
    an MPI launcher on its PATH (launchers). Not a Python program alone."""
    if any(os.path.basename(token) in _LAUNCHERS | {"srun"} for word in command for token in word.split()):
        return True
    return _shell_script(command, env) and bool(launchers(command, env))


def _shell_script(command: list[str], env: dict) -> bool:
    """Whether CMD runs a shell: its program, or its script's #! line's."""
    if os.path.basename(command[0]) in _SHELLS:
        return True
    try:
        with open(shutil.which(command[0], path=env.get("PATH", os.defpath)) or command[0], "rb") as script:
            first = script.read(256).split(b"\n", 1)[0]
    except OSError:
        return False
    words = first[2:].decode(errors="replace").split() if first.startswith(b"#!") else []
    return any(os.path.basename(w) in _SHELLS for w in words[:2])


def orte(launcher: str) -> bool:
    """Whether the launcher is Open MPI's before 5.0: mpirun is a link to
    ORTE's orterun, with ORTE's daemon orted beside it."""
    real = os.path.realpath(launcher)
    return os.path.basename(real) == "orterun" or os.path.exists(os.path.join(os.path.dirname(real), "orted"))


def _param_file_list(env: dict, found: list[str]) -> str | None:
    """mca_base_env_list's value in the first MCA parameter file Open MPI
    reads that sets it (the environment's value would hide it): the files
    PARAM_FILES names, else the user's and each launcher's installation's."""
    if PARAM_FILES in env:
        files = env[PARAM_FILES].split(",")
    else:
        files = [os.path.join(env["HOME"], ".openmpi", "mca-params.conf")] if env.get("HOME") else []
        files += [os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(p))), "etc",
                               "openmpi-mca-params.conf") for p in found]
    for name in files:
        try:
            with open(name, encoding="utf-8", errors="replace") as file:
                lines = file.read().splitlines()
        except OSError:  # "none", a file that is not there: Open MPI skips it too
            continue
        for line in lines:
            key, equals, value = line.partition("=")
            if equals and key.strip() == "mca_base_env_list" and not line.lstrip().startswith("#"):
                return value.strip().strip("\"'")
    return None


def unprobed_ranks(run) -> list[str]:
    """A recording problem line when the run holds fewer ranks than the
    world size they journaled (analysis.world: its own rank left out where
    record ran inside one), with what to do."""
    from writerprof.analysis.world import world  # here: record's start-up, before CMD, does without it
    from writerprof.render.world import rank_list

    job = world(run)
    missing = job["missing_ranks"]
    if not missing:
        return []
    return [f"{len(missing)} of {job['ranks_expected']} ranks not probed here ({rank_list(missing)}): a rank on "
            f"another host needs record's variables forwarded (Open MPI 4: list yours in {OMPI_ENV_LIST} "
            f"instead of -x, and record adds its own) or its host's part merged (writerprof merge)"]
