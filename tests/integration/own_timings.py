"""Recording a target that times its own waits, for the tests that compare
writerprof's figures with the target's."""

from __future__ import annotations

import json

from helpers import run_writerprof

TOLERANCE = 0.05  # writerprof's figure within 5% of the target's own


def agree(recorded_s, own_s, floor: float = 0.0) -> bool:
    return recorded_s is not None and abs(recorded_s - own_s) <= TOLERANCE * own_s + floor


def record_with_own_timings(tmp_path_factory, name, record_args, script_args, keys, floor=0.0, attempts=2):
    """(summary, the target's own per-save timings, the run directory) of
    `writerprof record RECORD_ARGS -- python SCRIPT_ARGS... DIR DIR/own.json`.
    Recorded again (once) if a save's `keys` disagree: the target's timer also
    holds what the probe does after a call it timed, and on a loaded machine
    a journal flush there can stall in write() for tens of ms (seen once in
    16 saves). A systematic error disagrees every time."""
    for _ in range(attempts):
        tmp = tmp_path_factory.mktemp(name)
        run_writerprof("record", "-o", tmp / "run", *record_args, "--", "python", *script_args, tmp,
                       tmp / "own.json")
        summary = json.loads(run_writerprof("report", "--json", tmp / "run").stdout)
        own = json.loads((tmp / "own.json").read_text())
        if all(agree(s[k], o[k], floor) for s, o in zip(summary["saves"], own) for k in keys):
            break
    return summary, own, tmp / "run"
