"""One rule for every command's output: the file or directory asked for is
made, never the directories above it; failures are one line."""

import pytest

from writerprof.commands import common
from writerprof.errors import WriterprofError


def test_a_file_whose_directory_is_missing_is_refused_and_nothing_is_created(tmp_path):
    with pytest.raises(WriterprofError, match=r"cannot write flamegraph .*missing does not exist"):
        common.write_text(tmp_path / "missing" / "f.svg", "<svg/>", "flamegraph")
    assert not (tmp_path / "missing").exists()


def test_a_directory_is_made_but_not_its_parents(tmp_path):
    assert common.output_directory(tmp_path / "plots").is_dir()
    assert common.output_directory(tmp_path / "plots") == tmp_path / "plots"  # existing: fine
    with pytest.raises(WriterprofError, match="does not exist"):
        common.output_directory(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()


def test_a_new_directory_must_be_empty_and_a_file_is_not_a_directory(tmp_path):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(WriterprofError, match="not empty; choose another contrast directory"):
        common.new_directory(tmp_path / "full", "contrast directory")
    with pytest.raises(WriterprofError, match="is not a directory"):
        common.write_text(tmp_path / "full" / "x" / "y", "text")


def test_text_from_non_utf8_arguments_is_written_back_as_its_bytes(tmp_path):
    text = b"argv: caf\xe9\n".decode("utf-8", "surrogateescape")
    common.write_text(tmp_path / "out.txt", text)
    assert (tmp_path / "out.txt").read_bytes() == b"argv: caf\xe9\n"


def test_json_is_compact(tmp_path):
    common.write_json(tmp_path / "d.json", {"a": [1, 2]})
    assert (tmp_path / "d.json").read_text() == '{"a":[1,2]}'
