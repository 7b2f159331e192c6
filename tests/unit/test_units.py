import pytest

from writerprof.units import format_cpu_list, format_size, parse_cpu_list, parse_duration, parse_size


@pytest.mark.parametrize(
    "text, expected",
    [
        ("4096", 4096), ("512MiB", 512 << 20), ("2GiB", 2 << 30), ("2gib", 2 << 30),
        ("32M", 32 << 20), ("1.5GiB", 3 << 29), ("1GB", 10**9), ("3 kB", 3000), ("1T", 1 << 40),
        ("10b", 10),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "GiB", "12XB", "-1MiB", "0", "0.5", "1.5.2G", "1e9"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_format_size():
    assert format_size(512 << 20) == "512.0 MiB"
    assert format_size(3 << 29) == "1.5 GiB"
    assert format_size(100) == "100 B"


@pytest.mark.parametrize(
    "text, expected",
    [("0", {0}), ("0-3", {0, 1, 2, 3}), ("0-3,8,10-11", {0, 1, 2, 3, 8, 10, 11}), (" 1,1\n", {1})],
)
def test_cpu_list_round_trip(text, expected):
    assert parse_cpu_list(text) == expected
    assert parse_cpu_list(format_cpu_list(expected)) == expected


def test_format_cpu_list_compacts_runs():
    assert format_cpu_list({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
    assert format_cpu_list([5]) == "5"


@pytest.mark.parametrize("text", ["", "a", "1-", "-1", "3-1", "0,,1", "1.5"])
def test_parse_cpu_list_rejects(text):
    with pytest.raises(ValueError):
        parse_cpu_list(text)


@pytest.mark.parametrize("text, ns", [("50ms", 50_000_000), ("0.5s", 500_000_000), ("200us", 200_000),
                                      ("2", 2_000_000_000), (" 10 ms ", 10_000_000), ("7ns", 7)])
def test_parse_duration(text, ns):
    assert parse_duration(text) == ns


@pytest.mark.parametrize("text", ["", "ms", "fast", "-5ms", "0", "nan", "inf", "5 minutes"])
def test_parse_duration_refuses(text):
    with pytest.raises(ValueError):
        parse_duration(text)
