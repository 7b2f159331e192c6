import pytest

from writerprof import __version__
from writerprof.cli import main
from writerprof.commands import repro


def test_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"writerprof {__version__}"


def test_help_lists_the_subcommands(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "repro" in out and "record" in out


@pytest.mark.parametrize(
    "argv, first",
    [
        ([], "writerprof: error: the following arguments are required: COMMAND"),
        (["nosuch"], "writerprof: error: unknown command 'nosuch'; the commands: record, report"),
        (["repro", "--bogus"], "writerprof repro: error: unrecognized arguments: --bogus"),
        (["repro", "--saves", "-2"], "writerprof repro: error: argument --saves"),
        (["record", "--interval", "fast", "--", "true"],
         "writerprof record: error: argument --interval: 'fast' is not a duration"),
        (["record", "--interval", "0ms", "--", "true"], "writerprof record: error: argument --interval"),
        (["record", "--probe", "os:write", "--", "true"], "writerprof record: error: --probe 'os:write'"),
        (["record"], "writerprof record: error: no command to record"),
        (["record", "--"], "writerprof record: error: no command to record"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(argv, first, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(first)


def test_missing_start_method_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setattr(repro.multiprocessing, "get_all_start_methods", lambda: ["spawn"])
    assert main(["repro", "--start-method", "forkserver"]) == 2
    assert "start method 'forkserver' is not available on this platform (available: spawn)" in (
        capsys.readouterr().err
    )


def _broken(args):
    raise RuntimeError("boom\nsecond line")


def test_an_unexpected_exception_is_one_line_naming_it_and_where(monkeypatch, capsys):
    from writerprof.commands import report

    monkeypatch.setattr(report, "run", _broken)
    monkeypatch.delenv("WRITERPROF_DEBUG", raising=False)
    assert main(["report", "somewhere"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("writerprof report: internal error: RuntimeError: boom (at ")
    assert "test_cli.py:" in err and "please report it, with WRITERPROF_DEBUG=1 for the traceback" in err
    monkeypatch.setenv("WRITERPROF_DEBUG", "1")  # then the traceback, for the bug report
    with pytest.raises(RuntimeError, match="boom"):
        main(["report", "somewhere"])


def test_stdout_that_is_strict_utf8_prints_non_utf8_bytes_as_they_were(tmp_path):
    import io

    from writerprof.cli import _bytes_out

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    _bytes_out(stream)
    stream.write(b"caf\xe9".decode("utf-8", "surrogateescape"))
    stream.flush()
    assert raw.getvalue() == b"caf\xe9"
    ascii_stream = io.TextIOWrapper(io.BytesIO(), encoding="ascii", errors="strict")
    _bytes_out(ascii_stream)
    assert ascii_stream.errors == "backslashreplace"
