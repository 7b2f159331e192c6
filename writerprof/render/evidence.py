"""A diagnosis's evidence as a person reads it: times in seconds with the
digits that matter (microseconds under a millisecond), shares as
percentages, sizes in MiB or GiB, CPU lists in the kernel's list format,
and "-" for what was not measured. The key names the unit: a name ending in
`_s` (or holding `_s_`, as `wait_s_per_save`) is seconds, `share` or
`coverage` a share, `bytes` a size, a dict of `nodes` the share on each
node; a dict's values take its key's unit (`phases_s`: seconds each)."""

from __future__ import annotations

from writerprof.units import format_cpu_list, format_size

SECONDS, SHARE, BYTES = "s", "share", "bytes"


def unit_of(key: str) -> str | None:
    """The unit an evidence key's values are in, from its name (None: a plain number or text)."""
    key = key.lower()
    if key.endswith("_s") or "_s_" in key:
        return SECONDS
    if "share" in key or "coverage" in key:
        return SHARE
    if key.endswith("bytes"):
        return BYTES
    return None


def seconds(value: float) -> str:
    """0.538 s, 1.49 s, 69 µs: three decimals down to a millisecond, then microseconds."""
    size = abs(value)
    if size == 0:
        return "0 s"
    if size >= 100:
        return f"{value:,.0f} s"
    if size >= 1:
        return f"{value:.2f} s"
    if size >= 0.001:
        return f"{value:.3f} s"
    return f"{value * 1e6:.0f} µs"


def share(value: float) -> str:
    """72%, 0.4%."""
    return f"{value:.0%}" if value == 0 or abs(value) >= 0.1 else f"{value:.1%}"


def number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def value(key: str, found, unit: str | None = None) -> str:
    """One evidence value as text; `unit` carries a dict's unit to its values."""
    unit = unit or unit_of(key)
    if found is None:
        return "-"
    if isinstance(found, bool):
        return "yes" if found else "no"
    if isinstance(found, dict):  # {node: share} where the key names nodes
        unit = unit or (SHARE if key.lower().endswith("nodes") else None)
        return ", ".join(f"{k}: {value(str(k), v, unit)}" for k, v in found.items()) or "-"
    if isinstance(found, list):
        if found and all(isinstance(v, int) and not isinstance(v, bool) for v in found) and "cpu" in key:
            return format_cpu_list(found)
        if found and all(isinstance(v, dict) for v in found):  # records: the threads of numa-mismatch
            return "; ".join(f"({value(key, v)})" for v in found)
        return ", ".join(value(key, v, unit) for v in found) or "-"
    if isinstance(found, (int, float)):
        if unit == SECONDS:
            return seconds(found)
        if unit == SHARE:
            return share(found)
        if unit == BYTES:
            return format_size(int(found))
        return str(found) if isinstance(found, int) else number(found)
    return str(found)
