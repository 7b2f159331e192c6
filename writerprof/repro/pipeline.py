"""The reproducer's run: `--saves` streaming checkpoint saves, one writer each."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
import traceback

from writerprof import interrupts
from writerprof.errors import Interrupted, WriterprofError
from writerprof.repro.affinity import set_process_affinity
from writerprof.repro.config import ReproConfig
from writerprof.repro.destinations import destination as make_destination
from writerprof.repro.generators import make_generator
from writerprof.repro.ranks import Ranks
from writerprof.repro.results import (
    aggregate_block,
    aggregate_record,
    rank_save_record,
    ranks_summary_record,
    results_block,
    save_record,
    summary_record,
)
from writerprof.repro.save import SaveResult, SaveStopped, run_save
from writerprof.units import format_cpu_list


def run(config: ReproConfig, ranks: Ranks | None = None) -> int:
    """ranks: this rank's part of an MPI job (`mpiexec -n N writerprof repro`), or
    None for a run on its own."""
    # The run's steps in order, its cleanup on every way out: one function, read top to bottom.
    interrupts.install()
    ctx = multiprocessing.get_context(config.start_method)
    if config.pin_parent and config.pin_when == "start":
        set_process_affinity(config.pin_parent)
    destination = make_destination(config)
    generator = make_generator(
        config.generator, config.seed, config.gen_threads, config.size, config.chunk_size
    )
    pinned = config.pin_when == "start"

    def on_writer_started():
        # --pin-when after-first-writer: under forkserver the daemon now exists
        # with the old mask, and every later writer inherits the daemon's.
        nonlocal pinned
        if config.pin_parent and not pinned:
            set_process_affinity(config.pin_parent)
            pinned = True

    def save_one(save: int) -> SaveResult:
        rank = f"-rank{ranks.rank:04d}" if ranks is not None else ""
        target = destination.target(f"writerprof-repro-{os.getpid()}{rank}-save{save:03d}.dat")
        try:
            if ranks is None:
                result = run_save(config, ctx, generator, save, target, on_writer_started)
            else:
                result = run_save(config, ctx, generator, save, target, on_writer_started,
                                  should_stop=ranks.stop_requested, die_with_parent=True)
            destination.check(target, save)
            if config.verify:
                destination.verify(target, save)
        finally:
            if not config.keep:
                destination.remove(target, save)
        return result

    results = []
    try:
        if ranks is not None:
            return _run_ranks(config, ranks, save_one)
        for save in range(1, config.saves + 1):
            result = save_one(save)
            results.append(result)
            print(results_block(result, config), file=sys.stderr, flush=True)
            if config.json:
                _emit(save_record(result, config))
    finally:
        generator.close()
        destination.close(f"rank {ranks.rank}: " if ranks is not None else "")
    summary = summary_record(results, config, ctx.get_start_method())
    print(
        f"writerprof repro: {summary['saves']} saves of {config.size} bytes with"
        f" {summary['start_method']}: mean {summary['mean_throughput_gib_s']:.2f} GiB/s",
        file=sys.stderr,
    )
    if config.json:
        _emit(summary)
    return 0


def _emit(record: dict) -> None:
    """One JSON line on stdout in one write: ranks that share it (--mpi off)
    never split each other's lines, where print() would write the newline
    apart (stdout unbuffered: PYTHONUNBUFFERED)."""
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def _run_ranks(config: ReproConfig, ranks: Ranks, save_one) -> int:
    """This rank's saves in an MPI job. Before each save every rank waits for
    all the others, as the benchmark's barrier does; each save's figures go to
    rank 0, which prints every rank's records and the aggregate. A save that
    fails, or a signal, on any rank stops every rank at the next exchange:
    status 1 for a failure, 128+N for signal N."""
    records, aggregates = [], []
    status = ("ok", None)  # save 0: the barrier before the first save
    for save in range(config.saves + 1):
        if ranks.signalled:  # received while this rank waited, or reported: stop now
            status = ("interrupted", ranks.signalled)
        elif save:
            status = _save_status(save, config, ranks, save_one)
        statuses, verdict = ranks.exchange(status, _decide)
        if verdict is not None:
            ranks.release()  # every rank stops here and leaves normally
            return verdict
        if ranks.root and save:
            saved = [status[1] for status in statuses]
            aggregate = aggregate_record(saved)
            records.extend(saved)
            aggregates.append(aggregate)
            try:
                print(aggregate_block(aggregate, saved, config), file=sys.stderr, flush=True)
                if config.json:
                    for record in saved + [aggregate]:
                        _emit(record)
            except Interrupted as exc:  # tell the others at the next exchange
                ranks.signalled = exc.signum
    ranks.release()
    if ranks.root:
        summary = ranks_summary_record(aggregates, records, config, ranks.describe())
        print(
            f"writerprof repro: {summary['saves']} saves of {config.size} bytes on each of"
            f" {summary['ranks']} ranks with {summary['start_method']}: mean"
            f" {summary['mean_throughput_gib_s']:.2f} GiB/s (summed over ranks, over rank 0's"
            " save time)",
            file=sys.stderr,
        )
        if config.json:
            _emit(summary)
    return 0


def _save_status(save: int, config: ReproConfig, ranks: Ranks, save_one) -> tuple:
    """Run one save on this rank; what to tell rank 0 about it. Whatever went
    wrong, the save has cleaned up (its writer is gone, its buffers unlinked)."""
    try:
        result = save_one(save)
    except SaveStopped:  # another rank failed, and says why
        return ("stopped", None)
    except Interrupted as exc:
        status = ("interrupted", exc.signum)
    except WriterprofError as exc:
        status = ("failed", str(exc))
    except Exception as exc:  # not one of ours: the traceback stays on this rank
        print(f"writerprof repro: rank {ranks.rank}:", traceback.format_exc(), file=sys.stderr)
        status = ("failed", f"save {save} failed: {type(exc).__name__}: {exc}")
    else:
        if ranks.root:
            print(results_block(result, config, rank=ranks.rank), file=sys.stderr, flush=True)
        return ("ok", rank_save_record(result, config, ranks.rank, ranks.host))
    ranks.request_stop()  # the other ranks end their saves now, not at their end
    return status


def _decide(statuses: list[tuple]) -> int | None:
    """On rank 0, from every rank's status: None to go on, or the exit status
    with which every rank stops. Says why, once, on rank 0's stderr."""
    failed = [(rank, status[1]) for rank, status in enumerate(statuses) if status[0] == "failed"]
    signalled = [(rank, status[1]) for rank, status in enumerate(statuses)
                 if status[0] == "interrupted"]
    for rank, message in failed:
        print(f"writerprof repro: rank {rank}: {message}", file=sys.stderr, flush=True)
    if signalled:
        which = "" if len(signalled) == len(statuses) else \
            f" (a signal on rank {format_cpu_list(rank for rank, _ in signalled)})"
        print(f"writerprof repro: interrupted{which}", file=sys.stderr, flush=True)
        return 128 + signalled[0][1]
    if failed:
        return 1
    # "stopped" only follows another rank's failure; never alone, but be sure.
    return 1 if any(status[0] == "stopped" for status in statuses) else None
