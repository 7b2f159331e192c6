"""What a new user meets at the command line: a mistyped subcommand or option
answered with the one meant, record's and contrast's options written after
CMD (where they are CMD's) warned about, and every subcommand's --help ending
with an example and naming none of writerprof's insides."""

from __future__ import annotations

import re
import shlex

import pytest

from writerprof import cli
from writerprof.cli import main
from writerprof.commands import misplaced


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.strip()


# --- did you mean ------------------------------------------------------------


@pytest.mark.parametrize("typed, meant", [("reprot", "report"), ("recrod", "record"), ("comapre", "compare"),
                                          ("exprot", "export"), ("falme", "flame")])
def test_a_mistyped_command_is_answered_with_the_one_meant(typed, meant, capsys):
    assert main([typed, "RUN"]) == 2
    assert _one_line(capsys) == f"writerprof: error: unknown command '{typed}'; did you mean '{meant}'?"


def test_an_unknown_command_like_none_lists_them(capsys):
    assert main(["xyzzy"]) == 2
    assert _one_line(capsys) == f"writerprof: error: unknown command 'xyzzy'; the commands: {', '.join(cli.COMMANDS)}"


@pytest.mark.parametrize("argv, expected", [
    (["report", "RUN", "--jsn"], "writerprof report: error: unrecognized arguments: --jsn; did you mean '--json'?"),
    (["record", "--interal", "1s", "--", "true"],
     "writerprof record: error: unrecognized arguments: --interal; did you mean '--interval'?"),
    (["report", "RUN", "--jsn", "--htm=x"], "writerprof report: error: unrecognized arguments: --jsn --htm=x; "
                                           "did you mean '--json' (for '--jsn'), '--html' (for '--htm=x')?"),
    # compare parses the options among its runs itself
    (["compare", "A", "B", "--jsn"],
     "writerprof compare: error: unrecognized arguments: --jsn; did you mean '--json'?"),
    (["report", "RUN", "--xyzzy"], "writerprof report: error: unrecognized arguments: --xyzzy (see"),
])
def test_a_mistyped_option_is_answered_with_the_one_meant(argv, expected, capsys):
    assert main(argv) == 2
    assert _one_line(capsys).startswith(expected)


# --- options after CMD --------------------------------------------------------


def _parser(name: str):
    """record's or contrast's parser."""
    return cli.build_parser(name).parse_args([name, "--", "true"]).parser


def _warned(capsys, parser, argv) -> str:
    args = parser.parse_args(argv[1:])
    misplaced.warn(parser, argv, args.cmd)
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, shown, fixed", [
    (["record", "python", "x.py", "-o", "DIR"], "'-o DIR' comes after the command, so it goes",
     "writerprof record -o DIR -- python x.py"),
    (["record", "--", "python", "x.py", "--output=DIR", "--epochs", "3"], "'--output=DIR' comes",
     "writerprof record --output=DIR -- python x.py --epochs 3"),
    (["record", "--no-sampler", "--", "python", "-c", "print(1)", "--interval", "1s", "--native", "--probe", "m:f=gen"],
     "'--interval 1s', '--native' and '--probe m:f=gen' come after the command, so they go",
     "writerprof record --no-sampler --interval 1s --native --probe m:f=gen -- python -c 'print(1)'"),
])
def test_record_options_after_the_command_are_warned_about_in_one_line(argv, shown, fixed, capsys):
    err = _warned(capsys, _parser("record"), argv)
    assert err.count("\n") == 1
    assert err.startswith(f"writerprof record: {shown}")
    assert err.rstrip().endswith(f"not to record: put record's options before the command ({fixed})")


@pytest.mark.parametrize("argv", [
    ["record", "--", "python", "x.py", "--epochs", "3", "-O"],
    ["record", "-o", "DIR", "--", "python", "x.py", "--help"],  # every program's: CMD's, after CMD
    ["record", "--", "python", "x.py", "--outputs", "DIR", "--native-only"],  # near, but not record's
])
def test_the_command_own_options_are_not_warned_about(argv, capsys):
    assert _warned(capsys, _parser("record"), argv) == ""


def test_every_option_of_record_is_caught_after_the_command():
    parser = _parser("record")
    options = [o for o in parser._option_string_actions if o not in misplaced.HELP]
    assert "--stacks-by" in options and "-o" in options
    for option in options:
        moved, kept = misplaced.split(parser, ["python", "x.py", option, "VALUE", "--epochs"])
        takes_value = parser._option_string_actions[option].nargs != 0
        assert moved == [[option, "VALUE"] if takes_value else [option]], option
        assert kept == ["python", "x.py"] + ([] if takes_value else ["VALUE"]) + ["--epochs"]


def test_contrast_options_after_the_command_are_warned_about(capsys):
    argv = ["contrast", "--", "python", "x.py", "--repeat", "5", "--methods", "fork,spawn"]
    err = _warned(capsys, _parser("contrast"), argv)
    assert err.startswith("writerprof contrast: '--repeat 5' and '--methods fork,spawn' come after the command")
    assert "(writerprof contrast --repeat 5 --methods fork,spawn -- python x.py)" in err


# --- --help --------------------------------------------------------------------

# writerprof's insides: a module path (not a schema name such as
# writerprof.summary/1), the probe's package or directory, a function's
# qualified name, a private name, the probe's environment variables.
INTERNAL = re.compile(r"\bwriterprof\.\w+\b(?!/)|writerprof_probe|probes/|<locals>|\b\w+\._\w+|WRITERPROF_")


def _help(name: str, capsys) -> str:
    with pytest.raises(SystemExit):
        main([name, "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_every_help_ends_with_an_example_that_parses(name, capsys):
    text = _help(name, capsys)
    head, example = text.rsplit("\nexample:\n", 1)
    lines = example.splitlines()
    assert 1 <= len(lines) <= 2 and all(line.startswith(f"  writerprof {name} ") for line in lines), example
    for line in lines:  # each a command line of today's options
        cli.build_parser(name).parse_args(shlex.split(line)[1:])


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_no_help_names_writerprof_insides(name, capsys):
    found = INTERNAL.findall(_help(name, capsys))
    assert not found, f"writerprof {name} --help names {found}"
