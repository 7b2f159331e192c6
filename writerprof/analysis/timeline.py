"""The chunk timeline of a run: per producer/writer pair, on the recording
host's time line (each host's clock offset applied, seconds since the
recording started), the spans of the producer's setup, gen and put-wait
and of its writers' start-up phases, get-wait, write, fadvise, fsync and
close. A call's spans are its own time: an fsync inside a hooked close is an
fsync bar between two pieces of close, not hidden under it. Only for a few representative producers (MAX_PAIRS, else the
slowest, median and fastest by mean save time): the result stays small."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from writerprof.analysis import firstwork, nesting, starts
from writerprof.analysis.saves import STARTUP_PHASES

MAX_PAIRS = 4  # producer/writer pairs drawn before picking representatives
PRODUCER_PHASES = ("gen", "put")
WRITER_PHASES = ("get", "write", "fadvise", "fsync", "close")


def representatives(saves: list[dict], max_pairs: int = MAX_PAIRS) -> tuple[list[int], list[dict] | None]:
    """The producers to show, in the order they first saved, and when there
    are more than max_pairs, which each is: [{"what", "producer", "mean_save_s"}]."""
    durations: dict = defaultdict(list)
    first: dict = {}
    for s in saves:
        durations[s["producer"]].append(s["duration_s"])
        first[s["producer"]] = min(first.get(s["producer"], s["start_ns"]), s["start_ns"])
    producers = sorted(durations, key=first.get)
    if len(producers) <= max_pairs:
        return producers, None
    mean = {p: float(np.mean(durations[p])) for p in producers}
    ranked = sorted(producers, key=mean.get)
    chosen, picks = [], []
    for what, p in (("slowest", ranked[-1]), ("median", ranked[len(ranked) // 2]), ("fastest", ranked[0])):
        if p not in chosen:
            chosen.append(p)
            picks.append({"what": what, "producer": p, "mean_save_s": mean[p]})
    return chosen, picks


def chunk_timeline(run, idx, procs: list[dict], saves: list[dict], offsets: dict[str, int],
                   max_pairs: int = MAX_PAIRS) -> dict:
    """{"producers": how many saved, "picked": representatives() or None,
    "pairs": [{"producer", "producer_spans", "writer_spans", "saves"}]}:
    spans as {phase: [[from_s, seconds], ...]}, saves as [[start_s, save]]."""
    chosen, picked = representatives(saves, max_pairs)
    codes = {name: code for code, name in run.phase_names.items()}
    writers_of: dict = defaultdict(list)
    for s in saves:
        writers_of[s["producer"]].append(s)
    writer_rows = [s["writer"] for p in chosen for s in writers_of[p] if s["writer"] is not None]
    # The few pairs' records only, in the order they started (as run.chunks has them).
    bounds = idx.chunk_bounds
    rows = np.sort(np.concatenate([np.arange(bounds[p], bounds[p + 1]) for p in chosen + writer_rows]
                                  or [np.zeros(0, dtype=np.int64)]))
    rows = rows[np.argsort(run.chunk_columns["start_ns"][rows], kind="stable")]
    c = run.chunk_columns[rows]
    parent = nesting.parents(c)
    started = starts.start_times(run, chosen)
    origin = run.meta.get("started_ns") or 0
    pairs = []
    for producer in chosen:
        mine = writers_of[producer]
        # On this host's clock: its records minus this are seconds on the recording host's time line.
        zero = origin - offsets.get(procs[producer]["host"], 0)
        p_spans = {name: _spans(c, (c["proc"] == producer) & (c["phase"] == codes.get(name, -1)), parent, zero)
                   for name in PRODUCER_PHASES}
        in_writers = np.isin(c["proc"], [s["writer"] for s in mine if s["writer"] is not None])
        w_spans = {name: _spans(c, in_writers & (c["phase"] == codes.get(name, -1)), parent, zero)
                   for name in WRITER_PHASES}
        p_spans["setup"] = []
        for phase in STARTUP_PHASES:
            w_spans[phase] = []
        for s in mine:
            t_start = started.get((producer, s["writer_pid"]))
            if t_start is None:
                t_start = starts.estimated_start_ns(_first_work(run, s["writer"]), s)
            if t_start is not None:
                _startup_spans(s, t_start, zero, p_spans["setup"], w_spans)
        pairs.append({"producer": producer, "producer_spans": _known(p_spans), "writer_spans": _known(w_spans),
                      "saves": [[(s["start_ns"] - zero) / 1e9, s["save"]] for s in mine]})
    return {"producers": len({s["producer"] for s in saves}), "picked": picked, "pairs": pairs}


def _startup_spans(save: dict, t_start, zero: int, setup: list, w_spans: dict) -> None:
    """The producer's setup until Process.start(), then the writer's start-up
    phases one after another from it."""
    if t_start > save["start_ns"]:
        setup.append([(save["start_ns"] - zero) / 1e9, (t_start - save["start_ns"]) / 1e9])
    at = (t_start - zero) / 1e9
    for phase in STARTUP_PHASES:
        seconds = (save["startup"] or {}).get(phase, 0.0)
        if seconds > 0:
            w_spans[phase].append([at, seconds])
            at += seconds


def _first_work(run, writer: int | None) -> int | None:
    work = firstwork.firsts(run)["work"][writer] if writer is not None else firstwork.NONE
    return None if work == firstwork.NONE else int(work)


def _spans(c: np.ndarray, chosen: np.ndarray, parent: np.ndarray, zero: int) -> list[list[float]]:
    """The chosen calls' own time (nesting.own_spans) as [from_s, seconds]."""
    start, end = nesting.own_spans(c, np.flatnonzero(chosen), parent)
    # To the nanosecond they were read in: the same times, a third shorter in JSON.
    return [list(x) for x in zip(np.round((start - zero) / 1e9, 9).tolist(), np.round((end - start) / 1e9, 9).tolist())]


def _known(spans: dict) -> dict:
    return {name: values for name, values in spans.items() if values}
