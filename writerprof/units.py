"""Byte sizes, CPU lists and signal names, as people and the kernel write them."""

from __future__ import annotations

import re
import signal

GIB = 1 << 30

# Bare K/M/G/T are binary, as in dd and fio; KB/MB/GB are decimal.
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1 << 10, "kib": 1 << 10, "kb": 10**3,
    "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
    "g": 1 << 30, "gib": 1 << 30, "gb": 10**9,
    "t": 1 << 40, "tib": 1 << 40, "tb": 10**12,
}
_SIZE_RE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")


def parse_size(text: str) -> int:
    """'512MiB' -> 536870912. Raises ValueError for anything but a positive whole byte count."""
    match = _SIZE_RE.fullmatch(text)
    unit = _SIZE_UNITS.get(match.group(2).lower()) if match else None
    if unit is None:
        raise ValueError(f"{text!r} is not a size (examples: 4096, 512MiB, 2GiB, 1.5GB)")
    value = float(match.group(1)) * unit
    if value != int(value) or value <= 0:
        raise ValueError(f"{text!r} is not a positive whole number of bytes")
    return int(value)


def format_size(nbytes: int) -> str:
    """536870912 -> '512.0 MiB'."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def parse_cpu_list(text: str) -> frozenset[int]:
    """The kernel's list format, '0-3,8,10-11' -> {0, 1, 2, 3, 8, 10, 11}."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        first, dash, last = part.strip().partition("-")
        if not (first.isdigit() and (not dash or last.isdigit())):
            raise ValueError(f"{text!r} is not a CPU list (examples: 0, 0-3, 0-3,8)")
        low, high = int(first), int(last) if dash else int(first)
        if high < low:
            raise ValueError(f"{text!r}: range {part.strip()} runs backwards")
        cpus.update(range(low, high + 1))
    return frozenset(cpus)


def format_cpu_list(cpus) -> str:
    """{0, 1, 2, 3, 8} -> '0-3,8'."""
    ordered = sorted(cpus)
    runs: list[str] = []
    start = prev = None
    for cpu in ordered + [None]:
        if start is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None:
            runs.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    return ",".join(runs)


_DURATION_UNITS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def parse_duration(text: str) -> int:
    """'50ms', '0.5s', '200us' -> nanoseconds; a bare number is seconds."""
    text = text.strip().lower()
    number, unit = text, "s"
    for suffix in ("ns", "us", "ms", "s"):
        if text.endswith(suffix):
            number, unit = text[: -len(suffix)], suffix
            break
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"{text!r} is not a duration (e.g. 50ms, 0.5s)") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ValueError(f"{text!r}: a duration must be positive")
    return int(value * _DURATION_UNITS[unit])


def signal_name(number: int) -> str:
    """SIGTERM for 15; "signal 40" for one Python has no name for (a real-time one)."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
