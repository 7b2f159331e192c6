"""Numbers and names as text, the same in every renderer (terminal, HTML,
plots)."""

from __future__ import annotations

from writerprof.units import format_cpu_list


def has_rank(rank) -> bool:
    return rank is not None and rank >= 0


def rank(value, none: str = "-") -> str:
    """A rank's number, or `none` for a process without one."""
    return str(value) if has_rank(value) else none


def rank_label(value) -> str:
    """'rank 3', or '' for a process without a rank."""
    return f"rank {value}" if has_rank(value) else ""


def ranks(values) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (the kernel's list format reads as well for ranks as for CPUs)."""
    values = sorted({r for r in values if has_rank(r)})
    return format_cpu_list(values) if values else "-"


def seconds(value, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def rate(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def shares(share: dict, limit: int) -> str:
    """{node: share} as 'n:share' for the largest `limit`."""
    if not share:
        return "-"
    return " ".join(f"{n}:{v:.0%}" for n, v in list(share.items())[:limit])


def placement_value(value) -> str:
    """A comparison's placement entry: node shares, CPU lists, or a name."""
    if isinstance(value, dict):
        return shares(value, 4)
    if isinstance(value, list):
        return "; ".join(format_cpu_list(v) if isinstance(v, list) else str(v) for v in value) or "-"
    return "-" if value is None else str(value)
