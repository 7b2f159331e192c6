"""The shapes of what the analysis returns, written down once: the summary
(`writerprof.summary/1`, what `report --json` prints), the comparison
(`writerprof.compare/1`) and the contrast result (`writerprof.contrast/1`).

They are TypedDicts, so the objects stay plain dicts (and plain JSON); a field
is one line here. Units are in the names: `_s` seconds (on the recording
host's time line where a time of day), `_ns` nanoseconds on the process's
host's monotonic clock, `gib_s` GiB per second, `share` a fraction of 1.
Node numbers are strings where they are keys ({node: share}: JSON keys are
strings), integers elsewhere. `mismatches` checks a real object against its
shape, recursively (the unit tests run it on real summaries, so this
description cannot drift from the code).
"""

from __future__ import annotations

import types
import typing
from typing import Union

from writerprof.analysis.shapes.compare import CodedFix, Comparison, ContrastResult, Noise, Spread, WhatIf
from writerprof.analysis.shapes.summary import Diagnosis, Ending, Fix, NumaActivity, NumaSave, Summary, Throughput
from writerprof.analysis.shapes.views import AffinityBins, AffinityProcesses

__all__ = ["AffinityBins", "AffinityProcesses", "CodedFix", "Comparison", "ContrastResult", "Diagnosis", "Ending",
           "Fix", "Noise", "NumaActivity", "NumaSave", "Spread", "Summary", "Throughput", "WhatIf", "mismatches"]


def mismatches(value, shape, where: str = "") -> list[str]:
    """Where value differs from shape: a key missing or extra in a TypedDict,
    recursively through lists, dict values and `| None`; one line each, named
    by its path (e.g. "saves[0].critical_path"). Types of plain values are
    not checked: the keys are what drifts."""
    origin, args = typing.get_origin(shape), typing.get_args(shape)
    if origin in (Union, types.UnionType):
        if value is None:
            return []
        # One of several shapes: the value is measured against the one it fits best.
        return min((mismatches(value, a, where) for a in args if a is not type(None)), key=len)
    if typing.is_typeddict(shape):
        if not isinstance(value, dict):
            return [f"{where or shape.__name__}: a {type(value).__name__}, not a {shape.__name__}"]
        fields = typing.get_type_hints(shape)
        name = where or shape.__name__
        found = [f"{name}: missing key {key!r} ({shape.__name__})"
                 for key in sorted(shape.__required_keys__ - set(value))]
        found += [f"{name}: extra key {key!r} (not in {shape.__name__})" for key in sorted(set(value) - set(fields))]
        for key in (key for key in fields if key in value):
            found += mismatches(value[key], fields[key], f"{where}.{key}" if where else key)
        return found
    if origin is list and args and isinstance(value, list):
        return [m for i, item in enumerate(value) for m in mismatches(item, args[0], f"{where}[{i}]")]
    if origin is dict and len(args) == 2 and isinstance(value, dict):
        return [m for key, item in value.items() for m in mismatches(item, args[1], f"{where}[{key!r}]")]
    return []
