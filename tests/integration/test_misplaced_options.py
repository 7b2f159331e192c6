"""An option of record's (or contrast's) written after CMD is CMD's: the real
command gets it unchanged, and writerprof says so in one line before CMD runs."""

from __future__ import annotations

from helpers import run_writerprof

SHOW_ARGV = 'import sys; print("ARGV", sys.argv[1:], flush=True)'


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "after the command, so" in line]


def test_record_warns_and_the_command_gets_the_option(tmp_path):
    done = run_writerprof("record", "--", "python", "-c", SHOW_ARGV, "-o", "X", cwd=tmp_path)
    assert "ARGV ['-o', 'X']" in done.stdout.splitlines()
    (warning,) = _warnings(done.stderr)
    assert warning == ("writerprof record: '-o X' comes after the command, so it goes to the command, not to "
                       "record: put record's options before the command (writerprof record -o X -- "
                       f"python -c '{SHOW_ARGV}')")
    # before CMD ran: ahead of record's own first line, which comes before CMD starts
    assert done.stderr.index(warning) < done.stderr.index("writerprof record: recording into")
    (run,) = tmp_path.glob("writerprof-*")  # record's default run directory, not X
    assert (run / "run.json").is_file() and not (tmp_path / "X").exists()


def test_contrast_warns_and_the_command_gets_the_option(tmp_path):
    out = tmp_path / "contrast"
    done = run_writerprof("contrast", "--repeat", "1", "-o", out, "--", "python", "-c", SHOW_ARGV, "--repeat", "9",
                          cwd=tmp_path)
    (warning,) = _warnings(done.stderr)
    assert warning.startswith("writerprof contrast: '--repeat 9' comes after the command")
    assert done.stderr.index(warning) < done.stderr.index("writerprof contrast: fork vs forkserver")
    for log in sorted((out / "runs").glob("*/output.log")):
        assert "ARGV ['--repeat', '9']" in log.read_text()
    assert len(list((out / "runs").glob("*/output.log"))) == 2
