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


def results_block(result: SaveResult, config: ReproConfig, rank: int | None = None) -> str:
    """rank: this process's MPI rank, named in the heading; None outside MPI."""
    gib = result.bytes / GIB
    ratio = result.gen_s / result.io_s if result.io_s else float("inf")
    rule = "=" * 64
    of_rank = f"  rank {rank}" if rank is not None else ""
    lines = [
        rule,
        f"RESULTS  save {result.save}/{config.saves}{of_rank}  start method {result.start_method}"
        f"  writer pid {result.writer_pid}",
        rule,
        f"  size            {format_size(result.bytes)} in {result.chunks} chunks"
        f" ({config.buffers} x {format_size(config.chunk_size)} buffers)",
        f"  generation      {result.gen_s:8.3f} s  {_rate(gib, result.gen_s)}"
        f"  ({config.generator}, producer blocked on put {result.put_wait_s:.3f} s)",
        f"  I/O             {result.io_s:8.3f} s  {_rate(gib, result.io_s)}",
        *_io_lines(result, config),
        f"  writer start-up {result.writer_startup_s:8.3f} s  (Process.start() to target)",
        *_open_lines(result, config),
        f"  total           {result.total_s:8.3f} s  {_rate(gib, result.total_s)}",
        f"  gen/I/O ratio   {ratio:8.2f}",
        f"  bottleneck      {bottleneck(result)}",
        f"  CPUs            producer {format_cpu_list(result.producer_cpus)},"
        f" writer {format_cpu_list(result.writer_cpus)}"
        f" (inherited {format_cpu_list(result.writer_inherited_cpus)})",
        rule,
    ]
    return "\n".join(lines)


def _io_lines(result: SaveResult, config: ReproConfig) -> list[str]:
    """The I/O's parts: a file's write and close, an object's upload and completion."""
    waited = f"writer waited for chunks {result.get_wait_s:.3f} s"
    if config.store is None:
        return [f"    write         {result.write_s:8.3f} s  ({waited})",
                f"    close         {result.fsync_s + result.close_s:8.3f} s  (fsync"
                f" {result.fsync_s:.3f} s, fadvise {result.fadvise_s:.3f} s)"]
    return [f"    upload        {result.write_s:8.3f} s  ({config.store.upload}, {result.parts} parts; {waited})",
            f"    complete      {result.close_s:8.3f} s  (complete_multipart_upload)"]


def _open_lines(result: SaveResult, config: ReproConfig) -> list[str]:
    """An upload's set-up in the writer, outside its I/O as in the benchmark's
    figures (a file's open is too short to show)."""
    if config.store is None:
        return []
    created = " and create_multipart_upload" if config.store.upload == "multipart" else ""
    return [f"  writer S3 client{result.open_s:8.3f} s  (boto3's client{created}, before the first chunk)"]


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
        "open_s": result.open_s,
        "parts": result.parts,
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


def _settings(config: ReproConfig) -> dict:
    """What a summary says of how the run was set up."""
    store = config.store
    return {
        "backend": config.backend, "upload": store.upload if store else None,
        "bucket": store.bucket if store else None,
        "generator": config.generator, "size": config.size, "chunk_size": config.chunk_size,
        "buffers": config.buffers, "fsync": config.fsync, "main_imports": list(config.main_imports),
        "python": platform.python_version(),
    }


def summary_record(results: list[SaveResult], config: ReproConfig, start_method: str) -> dict:
    """start_method: the one the writers were started with (a profiler's
    what-if switch may have overridden --start-method)."""
    rates = [result.throughput_gib_s for result in results]
    return {
        "record": "summary",
        "saves": len(results),
        "start_method": start_method,
        "bytes": sum(result.bytes for result in results),
        **_settings(config),
        # As the benchmark reports it: the mean of per-save rates.
        "mean_throughput_gib_s": statistics.fmean(rates),
        "mean_writer_startup_s": statistics.fmean(r.writer_startup_s for r in results),
        "mean_total_s": statistics.fmean(r.total_s for r in results),
    }


# Under MPI (`mpiexec -n N writerprof repro`): every rank's save records are
# gathered to rank 0, which adds the benchmark's aggregate per save and a summary.


def rank_save_record(result: SaveResult, config: ReproConfig, rank: int, host: str) -> dict:
    """A rank's save record: save_record's fields, and which rank and host."""
    record = save_record(result, config)
    return {"record": "save", "rank": rank, "host": host,
            **{key: value for key, value in record.items() if key != "record"}}


def aggregate_record(records: list[dict]) -> dict:
    """One save across ranks, as the benchmark reports it: the checkpoint's size
    (summed over ranks) over rank 0's save duration. `records`: every rank's
    record of that save, rank 0 first."""
    first = records[0]
    assert first["rank"] == 0 and len({r["save"] for r in records}) == 1, "one save, from rank 0"
    nbytes = sum(record["bytes"] for record in records)
    slowest = max(records, key=lambda record: record["total_s"])
    fastest = min(records, key=lambda record: record["total_s"])
    return {
        "record": "aggregate",
        "save": first["save"],
        "ranks": len(records),
        "start_method": first["start_method"],
        "bytes": nbytes,
        "rank0_total_s": first["total_s"],
        "throughput_gib_s": nbytes / first["total_s"] / GIB,
        "min_total_s": fastest["total_s"],
        "max_total_s": slowest["total_s"],
        "slowest_rank": slowest["rank"],
    }


def aggregate_block(aggregate: dict, records: list[dict], config: ReproConfig) -> str:
    """Rank 0's stderr block for one save across ranks: the aggregate, then a line per rank."""
    rule = "=" * 64
    lines = [
        rule,
        f"AGGREGATE  save {aggregate['save']}/{config.saves}  {aggregate['ranks']} ranks"
        f"  start method {aggregate['start_method']}",
        rule,
        f"  size            {format_size(aggregate['bytes'])} ({_per_rank(records)})",
        f"  rank 0's save   {aggregate['rank0_total_s']:8.3f} s",
        f"  throughput      {aggregate['throughput_gib_s']:8.2f} GiB/s"
        "  (size over rank 0's save)",
        f"  slowest rank    {aggregate['slowest_rank']:8d}    ({aggregate['max_total_s']:.3f} s;"
        f" fastest {aggregate['min_total_s']:.3f} s)",
        "  rank   total s    GiB/s  start-up s  bottleneck  host",
    ]
    for record in records:
        lines.append(
            f"  {record['rank']:4d}  {record['total_s']:8.3f} {record['throughput_gib_s']:8.2f}"
            f"  {record['writer_startup_s']:10.3f}  {record['bottleneck']:<10s}  {record['host']}"
        )
    lines.append(rule)
    return "\n".join(lines)


def _per_rank(records: list[dict]) -> str:
    sizes = {record["bytes"] for record in records}
    if len(sizes) == 1:
        return f"{format_size(sizes.pop())} on each of {len(records)} ranks"
    return f"summed over {len(records)} ranks"


def ranks_summary_record(aggregates: list[dict], records: list[dict], config: ReproConfig,
                         mpi: dict) -> dict:
    """The run across ranks: the mean of the per-save aggregate rates (the
    benchmark's headline), the same settings as summary_record, and each rank's
    own means. `records`: every rank's save records; `mpi`: launcher and library."""
    ranks = sorted({record["rank"] for record in records})
    per_rank = []
    for rank in ranks:
        own = [record for record in records if record["rank"] == rank]
        per_rank.append({
            "rank": rank,
            "host": own[0]["host"],
            "saves": len(own),
            "mean_throughput_gib_s": statistics.fmean(r["throughput_gib_s"] for r in own),
            "mean_total_s": statistics.fmean(r["total_s"] for r in own),
            "mean_writer_startup_s": statistics.fmean(r["writer_startup_s"] for r in own),
        })
    return {
        "record": "summary",
        "saves": len(aggregates),
        "ranks": len(ranks),
        "start_method": aggregates[0]["start_method"],
        "bytes": sum(aggregate["bytes"] for aggregate in aggregates),
        **_settings(config),
        "mean_throughput_gib_s": statistics.fmean(a["throughput_gib_s"] for a in aggregates),
        "mean_writer_startup_s": statistics.fmean(r["writer_startup_s"] for r in records),
        "mean_total_s": statistics.fmean(a["rank0_total_s"] for a in aggregates),
        "mpi": mpi,
        "per_rank": per_rank,
    }
