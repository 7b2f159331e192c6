"""The reproducer's output: the benchmark-style RESULTS block per save on
stderr, and with --json one JSON object per save and a summary on stdout.

These figures are the ground truth that the profiler is checked against.
"""

from __future__ import annotations

import platform
import statistics

from writerprof.repro.config import ReproConfig
from writerprof.repro.save import SaveResult
from writerprof.units import GIB, format_cpu_list, format_size


def bottleneck(result: SaveResult) -> str:
    """The benchmark's own heuristic: whichever side took longer."""
    return "generation" if result.gen_s > result.io_s else "I/O"


def results_block(result: SaveResult, config: ReproConfig) -> str:
    gib = result.bytes / GIB
    ratio = result.gen_s / result.io_s if result.io_s else float("inf")
    rule = "=" * 64
    lines = [
        rule,
        f"RESULTS  save {result.save}/{config.saves}  start method {result.start_method}"
        f"  writer pid {result.writer_pid}",
        rule,
        f"  size            {format_size(result.bytes)} in {result.chunks} chunks"
        f" ({config.buffers} x {format_size(config.chunk_size)} buffers)",
        f"  generation      {result.gen_s:8.3f} s  {_rate(gib, result.gen_s)}"
        f"  ({config.generator}, producer blocked on put {result.put_wait_s:.3f} s)",
        f"  I/O             {result.io_s:8.3f} s  {_rate(gib, result.io_s)}",
        f"    write         {result.write_s:8.3f} s  (writer waited for chunks"
        f" {result.get_wait_s:.3f} s)",
        f"    close         {result.fsync_s + result.close_s:8.3f} s  (fsync"
        f" {result.fsync_s:.3f} s, fadvise {result.fadvise_s:.3f} s)",
        f"  writer start-up {result.writer_startup_s:8.3f} s  (Process.start() to target)",
        f"  total           {result.total_s:8.3f} s  {_rate(gib, result.total_s)}",
        f"  gen/I/O ratio   {ratio:8.2f}",
        f"  bottleneck      {bottleneck(result)}",
        f"  CPUs            producer {format_cpu_list(result.producer_cpus)},"
        f" writer {format_cpu_list(result.writer_cpus)}"
        f" (inherited {format_cpu_list(result.writer_inherited_cpus)})",
        rule,
    ]
    return "\n".join(lines)


def _rate(gib: float, seconds: float) -> str:
    return f"{gib / seconds:7.2f} GiB/s" if seconds > 0 else "      - GiB/s"


def save_record(result: SaveResult, config: ReproConfig) -> dict:
    return {
        "record": "save",
        "save": result.save,
        "start_method": result.start_method,
        "generator": config.generator,
        "bytes": result.bytes,
        "chunks": result.chunks,
        "chunk_size": config.chunk_size,
        "buffers": config.buffers,
        "total_s": result.total_s,
        "gen_s": result.gen_s,
        "put_wait_s": result.put_wait_s,
        "get_wait_s": result.get_wait_s,
        "write_s": result.write_s,
        "fadvise_s": result.fadvise_s,
        "fsync_s": result.fsync_s,
        "close_s": result.close_s,
        "io_s": result.io_s,
        "writer_startup_s": result.writer_startup_s,
        "writer_attach_s": result.writer_attach_s,
        "writer_pid": result.writer_pid,
        "throughput_gib_s": result.throughput_gib_s,
        "bottleneck": bottleneck(result),
        "producer_cpus": result.producer_cpus,
        "writer_inherited_cpus": result.writer_inherited_cpus,
        "writer_cpus": result.writer_cpus,
        "touch_cpus": result.touch_cpus,
        "verified": config.verify,
        "path": result.path if config.keep else None,
    }


def summary_record(results: list[SaveResult], config: ReproConfig, start_method: str) -> dict:
    """start_method: the one the writers were started with (a profiler's
    what-if switch may have overridden --start-method)."""
    rates = [result.throughput_gib_s for result in results]
    return {
        "record": "summary",
        "saves": len(results),
        "start_method": start_method,
        "generator": config.generator,
        "bytes": sum(result.bytes for result in results),
        "size": config.size,
        "chunk_size": config.chunk_size,
        "buffers": config.buffers,
        "fsync": config.fsync,
        "main_imports": list(config.main_imports),
        "python": platform.python_version(),
        # As the benchmark reports it: the mean of per-save rates.
        "mean_throughput_gib_s": statistics.fmean(rates),
        "mean_writer_startup_s": statistics.fmean(r.writer_startup_s for r in results),
        "mean_total_s": statistics.fmean(r.total_s for r in results),
    }
