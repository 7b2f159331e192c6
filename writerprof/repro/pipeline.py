"""The reproducer's run: `--saves` streaming checkpoint saves, one writer each."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sys
import tempfile

from writerprof import interrupts
from writerprof.repro.affinity import set_process_affinity
from writerprof.repro.config import ReproConfig
from writerprof.repro.generators import make_generator
from writerprof.repro.results import results_block, save_record, summary_record
from writerprof.repro.save import run_save
from writerprof.repro.verify import verify_file


def run(config: ReproConfig) -> int:
    interrupts.install()
    ctx = multiprocessing.get_context(config.start_method)
    if config.pin_parent and config.pin_when == "start":
        set_process_affinity(config.pin_parent)
    directory = config.directory or tempfile.mkdtemp(prefix="writerprof-repro-")
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

    results = []
    try:
        for save in range(1, config.saves + 1):
            path = os.path.join(directory, f"writerprof-repro-{os.getpid()}-save{save:03d}.dat")
            try:
                result = run_save(config, ctx, generator, save, path, on_writer_started)
                if config.verify:
                    verify_file(path, config, save)
            finally:
                if not config.keep and os.path.exists(path):
                    os.unlink(path)
            results.append(result)
            print(results_block(result, config), file=sys.stderr, flush=True)
            if config.json:
                print(json.dumps(save_record(result, config)), flush=True)
    finally:
        generator.close()
        if config.directory is None and not config.keep:
            shutil.rmtree(directory, ignore_errors=True)
        elif config.keep:
            print(f"writerprof repro: files kept in {directory}", file=sys.stderr)
    summary = summary_record(results, config, ctx.get_start_method())
    print(
        f"writerprof repro: {summary['saves']} saves of {config.size} bytes with"
        f" {summary['start_method']}: mean {summary['mean_throughput_gib_s']:.2f} GiB/s",
        file=sys.stderr,
    )
    if config.json:
        print(json.dumps(summary), flush=True)
    return 0
