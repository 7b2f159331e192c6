"""Text the renderers share: a command line that reads back as the argv it
was, on one line; the recording's own notes."""

import shlex

from writerprof.render.format import command, recording_notes


def test_a_command_is_quoted_so_that_a_shell_gives_the_same_argv():
    argv = ["python", "bench.py", "--name", "two words", "it's", ""]
    assert shlex.split(command(argv)) == argv


def test_a_newline_control_character_or_stray_byte_stays_on_one_line():
    raw = b"caf\xe9".decode("utf-8", "surrogateescape")
    text = command(["echo", "line 1\nline 2", "tab\there", raw, "back\\slash 'q'"])
    assert "\n" not in text and "\t" not in text
    assert text == "echo $'line 1\\nline 2' $'tab\\there' $'caf\\xe9' 'back\\slash '\"'\"'q'\"'\"''"
    text.encode("utf-8")  # no surrogate left to fail an output


def test_no_command_is_a_dash():
    assert command(None) == "-" and command([]) == "-"


def test_the_recording_notes_name_what_it_missed():
    run = {"incomplete": ["samples end early: No space left on device"],
           "outlived_cmd": [{"pid": 42, "cmdline": ["python", "-c", "sleep"]}],
           "probes_unmatched": {"nosuch:f=gen": "no process imported nosuch"}}
    assert recording_notes(run) == [
        "recording incomplete: samples end early: No space left on device",
        "pid 42 (python -c sleep) was still running when CMD ended: not recorded to its end",
        "--probe nosuch:f=gen matched nothing: no process imported nosuch"]
    assert recording_notes({}) == []
