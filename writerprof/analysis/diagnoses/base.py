"""What every check shares: the Code a check declares (@emits), the
severities, the diagnosis record, and small helpers over the process table
and the saves."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (annotations only: the shapes' TypedDicts take ~20 ms to import)
    from writerprof.analysis.shapes import Diagnosis


WARNING, INFO = "warning", "info"
SEVERITIES = (WARNING, INFO)  # the order reports list them in


@dataclass(frozen=True)
class Code:
    """A diagnosis code, as its check declares it."""

    code: str
    severities: tuple[str, ...]  # the ones it is reported with, the usual one first
    meaning: str  # one line: when it fires and what it says


# Every code a check has declared, as the checks were imported: code -> Code.
DECLARED: dict[str, Code] = {}


def emits(*codes: Code):
    """Declare, on a check, the codes it reports."""
    def declare(check):
        check.codes = codes
        DECLARED.update((c.code, c) for c in codes)
        return check
    return declare


def diagnosis(code, proc, message, evidence, cost_s=None, severity=None) -> Diagnosis:
    """severity: where its check decides between the code's severities (default: the usual one)."""
    declared = DECLARED[code].severities  # an undeclared code fails here, in every test
    if severity is None:
        severity = declared[0]
    elif severity not in declared:
        raise ValueError(f"{code} is not declared with severity {severity!r} (only {', '.join(declared)})")
    out = {"code": code, "severity": severity, "host": proc["host"] if proc else None,
           "pid": proc["pid"] if proc else None, "rank": proc["rank"] if proc else None,
           "message": message, "evidence": evidence}
    if cost_s is not None:
        out["cost_s"] = cost_s
    return out


def nodes_text(share: dict) -> str:
    return ", ".join(f"node {n} {v:.0%}" for n, v in share.items())


def by_role(procs, role):
    return [p for p in procs if p["role"] == role]


def per_producer(saves) -> list[list[dict]]:
    groups = defaultdict(list)
    for save in saves:
        groups[save["producer"]].append(save)
    return list(groups.values())


def producer_of(procs, group):
    return procs[group[0]["producer"]]  # the table's rows are the run's processes, in order
