"""Run the built-in reproducer of the benchmark's streaming checkpoint save.

Per save: a pool of --buffers POSIX shared-memory buffers of --chunk-size; one
writer subprocess started with --start-method attaches them by name, does one
os.write per queued chunk (optionally posix_fadvise DONTNEED), one fsync and
close. The producer fills buffers round-robin and queues (index, nbytes) on a
queue of maxsize=buffers.

Buffer reuse: by default a buffer is refilled as soon as its turn comes round,
as the benchmark does, with no signal that the writer is done with it. That is
the faster ring, and it can race: the producer may overwrite a chunk the writer
is still copying. --verify recycles a buffer only after the writer has written
it, and checks every file byte for byte against the generator.

With --backend s3 --bucket B (--endpoint URL for an S3-compatible store) the
writer uploads each save to one object instead, with boto3: a multipart
upload of one part per chunk (--upload multipart), or boto3's transfer
manager reading the chunks as a stream (--upload transfer); the writers
start with forkserver unless --start-method says otherwise.

Output: a RESULTS block per save on stderr; with --json one JSON object per
save and a summary on stdout.

Under an MPI launcher (`mpiexec -n N writerprof repro ...`, with mpi4py): every
rank saves its own files, all ranks wait for each other before each save, and
rank 0 prints every rank's figures and the aggregate (the size summed over
ranks, over rank 0's save time); the other ranks print nothing but errors.
"""

from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import os
import runpy
import sys
import tempfile
import traceback

from writerprof import interrupts
from writerprof.errors import Interrupted, UsageError, WriterprofError
from writerprof.probes.writerprof_probe.format import START_METHODS
from writerprof.repro.config import MAIN_IMPORTS_ENV, ObjectStore, ReproConfig
from writerprof.repro.generators import GENERATORS, check_available
from writerprof.repro.objectstore import TRANSFER_THREADS, UPLOADS, check_parts, check_store
from writerprof.repro.ranks import MPI_MODES, Ranks, connect, mpi4py_importable, resolve
from writerprof.units import format_cpu_list, format_size, parse_cpu_list, parse_size

EXAMPLE = """
writerprof repro --saves 4 --size 512MiB --start-method forkserver --main-imports numpy
writerprof repro --verify --keep --dir /scratch/ckpt
"""


def _typed(parse, what):
    def convert(text):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = what  # argparse names the type in its messages
    return convert


def _positive_int(text):
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise ValueError(f"{text!r} is not a whole number of at least 1")
    return value


def add_arguments(parser) -> None:
    size, cpus = _typed(parse_size, "size"), _typed(parse_cpu_list, "CPU list")
    count = _typed(_positive_int, "count")
    run = parser.add_argument_group("the save")
    run.add_argument("--saves", type=count, default=2, metavar="N", help="number of saves (default: 2)")
    run.add_argument("--size", type=size, default=parse_size("1GiB"), metavar="SIZE",
                     help="bytes per save: 4096, 512MiB, 2GiB, 1.5GB ... (default: 1GiB); refused if"
                     " the directory's filesystem has less free (with --keep: all saves)")
    run.add_argument("--chunk-size", type=size, default=parse_size("32MiB"), metavar="SIZE",
                     help="size of each shared-memory buffer and chunk (default: 32MiB)")
    run.add_argument("--buffers", type=count, default=4, metavar="N",
                     help="buffers in the pool, and the queue's maxsize (default: 4)")
    run.add_argument("--start-method", choices=START_METHODS,
                     help="how the writer subprocess is started (default: fork; with --backend s3,"
                     " forkserver: an S3 client's threads and sockets do not survive a fork)")
    run.add_argument("--dir", dest="directory", metavar="DIR",
                     help="where files are written, created if missing (default: a temporary"
                     " directory, removed afterwards)")
    run.add_argument("--keep", action="store_true",
                     help="keep each save's file (and the temporary directory)")
    run.add_argument("--no-fsync", dest="fsync", action="store_false",
                     help="skip the writer's final fsync (on by default)")
    run.add_argument("--fadvise", choices=("none", "dontneed"), default="none",
                     help="posix_fadvise each written range (default: none)")
    run.add_argument("--verify", action="store_true",
                     help="recycle a buffer only after it is written, and check every file"
                     " byte for byte (the default ring can race, as the benchmark's does)")
    run.add_argument("--json", action="store_true",
                     help="one JSON object per save and a summary on stdout")
    run.add_argument("--mpi", choices=MPI_MODES, default="auto",
                     help="auto: join MPI when started by an MPI launcher (mpiexec) and mpi4py"
                     " is installed; on: join or fail; off: each process runs alone"
                     " (default: auto)")
    add_store_arguments(parser.add_argument_group("the object store (--backend s3)"))
    data = parser.add_argument_group("the data")
    data.add_argument("--generator", choices=GENERATORS, default="fast",
                      help="fast: copies of a random block, memory-bound (default); random:"
                      " numpy PCG64, CPU-bound; dgen: the dgen-py package")
    data.add_argument("--gen-threads", type=count, default=1, metavar="N",
                      help="generator threads for random and dgen (default: 1)")
    data.add_argument("--seed", type=int, default=0, metavar="S",
                      help="same seed, same bytes (default: 0)")
    startup = parser.add_argument_group("start-up and placement")
    startup.add_argument("--main-imports", default="", metavar="MODULES",
                         help="comma-separated modules the main module imports at module"
                         " level, re-run by every spawn/forkserver child"
                         " (e.g. numpy,matplotlib.pyplot)")
    startup.add_argument("--pin-parent", type=cpus, metavar="CPUS",
                         help="set the producer's CPU affinity, e.g. 0-3")
    startup.add_argument("--pin-when", choices=("start", "after-first-writer"), default="start",
                         help="pin the producer before the first writer starts, or right after"
                         " it (a forkserver then keeps the old mask for every later writer)")
    startup.add_argument("--writer-cpus", type=cpus, metavar="CPUS",
                         help="pin the writer, from inside the child")
    startup.add_argument("--touch-cpus", type=cpus, metavar="CPUS",
                         help="first-touch the buffers from a thread pinned to these CPUs,"
                         " which decides their NUMA node")


def add_store_arguments(group) -> None:
    """repro's, and contrast's for the reproducer it runs (store_argv)."""
    group.add_argument("--backend", choices=("file", "s3"), default="file",
                       help="file: a file per save (default); s3: the writer uploads each save as one object"
                       " (boto3: pip install 'writerprof[s3]'; credentials from the AWS_* environment"
                       " or ~/.aws, never the command line)")
    group.add_argument("--endpoint", metavar="URL",
                       help="the S3-compatible store's URL (default: boto3's, AWS_ENDPOINT_URL or AWS)")
    group.add_argument("--bucket", metavar="B", help="the bucket the objects go to (--backend s3: required)")
    group.add_argument("--prefix", metavar="PREFIX",
                       help="the objects' keys: PREFIX/writerprof-repro-PID-saveNNN.dat (default: writerprof-repro)")
    group.add_argument("--upload", choices=UPLOADS,
                       help="multipart: create, one upload_part per chunk, complete (default); transfer:"
                       f" boto3's transfer manager, upload_fileobj with {TRANSFER_THREADS} threads")


STORE_OPTIONS = ("backend", "endpoint", "bucket", "prefix", "upload")


def store_argv(args) -> list[str]:
    """The object-store options given, as repro's command line takes them."""
    given = [(name, getattr(args, name)) for name in STORE_OPTIONS]
    return [word for name, value in given if value not in (None, "file") for word in (f"--{name}", value)]


def _store_from_args(args) -> ObjectStore | None:
    """--backend s3's options checked (the store answers, the bucket is there);
    with files, none of them given."""
    if args.backend == "file":
        given = [f"--{name}" for name in STORE_OPTIONS[1:] if getattr(args, name) is not None]
        if given:
            raise UsageError(f"{', '.join(given)}: only with --backend s3")
        return None
    for flag, value in (("--dir", args.directory), ("--no-fsync", not args.fsync or None),
                        ("--fadvise dontneed", args.fadvise != "none" or None)):
        if value is not None:
            raise UsageError(f"{flag}: only with --backend file (an object has no directory, fsync or page cache)")
    if not args.bucket:
        raise UsageError("--backend s3 needs --bucket")
    check_parts(args.size, args.chunk_size)
    check_store(args.endpoint, args.bucket)
    prefix = "writerprof-repro" if args.prefix is None else args.prefix
    return ObjectStore(endpoint=args.endpoint, bucket=args.bucket, prefix=prefix, upload=args.upload or "multipart")


def config_from_args(args) -> ReproConfig:
    """Check what argparse cannot: the platform, the CPUs, the directory, packages."""
    # fork for files; forkserver for an object store, whose clients hold
    # threads and sockets that do not survive a fork (issue 37's runs).
    start_method = args.start_method or ("fork" if args.backend == "file" else "forkserver")
    if start_method not in multiprocessing.get_all_start_methods():
        raise UsageError(f"start method {start_method!r} is not available on this platform"
                         f" (available: {', '.join(multiprocessing.get_all_start_methods())})")
    allowed = os.sched_getaffinity(0)
    for flag, cpus in (("--pin-parent", args.pin_parent), ("--writer-cpus", args.writer_cpus),
                       ("--touch-cpus", args.touch_cpus)):
        if cpus is not None and not cpus <= allowed:
            raise UsageError(f"{flag} {format_cpu_list(cpus)}: CPU"
                             f" {format_cpu_list(cpus - allowed)} is outside the allowed CPUs"
                             f" {format_cpu_list(allowed)}")
    if args.pin_when != "start" and args.pin_parent is None:
        raise UsageError("--pin-when needs --pin-parent")
    main_imports = tuple(name.strip() for name in args.main_imports.split(",") if name.strip())
    for name in main_imports:
        _check_importable(name)
    check_available(args.generator)
    _check_shared_memory(args.buffers * args.chunk_size)
    store = _store_from_args(args)
    if args.directory is not None:
        _check_writable(args.directory)
    if store is None:
        _check_free_space(args.directory or tempfile.gettempdir(),
                          args.size * (args.saves if args.keep else 1), args.keep)
    return ReproConfig(
        saves=args.saves, size=args.size, chunk_size=args.chunk_size, buffers=args.buffers,
        start_method=start_method, generator=args.generator, gen_threads=args.gen_threads,
        seed=args.seed, fsync=args.fsync and store is None, fadvise=args.fadvise, verify=args.verify,
        directory=args.directory, keep=args.keep, json=args.json, main_imports=main_imports,
        pin_parent=args.pin_parent, pin_when=args.pin_when, writer_cpus=args.writer_cpus,
        touch_cpus=args.touch_cpus, store=store,
    )


def _check_importable(name: str) -> None:
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise UsageError(f"--main-imports: no module named {name!r}")


def _check_shared_memory(needed: int) -> None:
    """A full tmpfs would kill the producer with SIGBUS mid-fill: refuse first."""
    where = "/dev/shm"  # where POSIX shared memory lives on Linux
    try:
        stat = os.statvfs(where)
    except OSError:  # no /dev/shm to measure: let shm_open say what is wrong
        return
    free = stat.f_bavail * stat.f_frsize
    if needed > free:
        raise UsageError(f"--buffers x --chunk-size needs {format_size(needed)} of shared memory;"
                         f" {where} has {format_size(free)} free")


def _check_free_space(directory: str, needed: int, keep: bool) -> None:
    """A save that cannot fit would fill the filesystem and fail at its end:
    refuse first. Without --keep each file goes before the next save starts,
    so one save must fit; with it, all of them."""
    try:
        stat = os.statvfs(directory)
    except OSError:  # nothing to measure: let the writer say what is wrong
        return
    free = stat.f_bavail * stat.f_frsize
    if needed > free:
        what = "--saves x --size (with --keep)" if keep else "--size"
        raise UsageError(f"{what} needs {format_size(needed)}; {directory} has"
                         f" {format_size(free)} free")


def _check_writable(directory: str) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        raise UsageError(f"--dir {directory}: not writable ({exc.strerror or exc})") from None


def run(args) -> int:
    launch, warning = resolve(args.mpi, os.environ, mpi4py_importable)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    if launch is None:
        return _run_main(config_from_args(args), None)
    interrupts.install()
    ranks = connect(launch)  # MPI_Init: this process is a rank from here on
    try:
        config = _config_on_every_rank(args, ranks)
        return 2 if config is None else _run_main(config, ranks)
    except Interrupted as exc:
        # mpiexec forwards SIGINT and SIGTERM to every rank: if they all stop,
        # each leaves normally (rank 0 says so); if not, end the job.
        if not ranks.released and not ranks.stop_interrupted():
            ranks.abort(exc.exit_code, "interrupted, and the other ranks did not stop")
        if ranks.root:
            raise
        return exc.exit_code
    except BaseException as exc:
        if ranks.released:
            raise
        # The others would wait for this rank forever: end the whole job.
        if not isinstance(exc, WriterprofError):
            traceback.print_exc()
        ranks.abort(getattr(exc, "exit_code", 1), str(exc) or type(exc).__name__)
        raise  # not reached


def _config_on_every_rank(args, ranks: Ranks) -> ReproConfig | None:
    """Every rank checks its own arguments and machine; one bad rank stops them
    all (rank 0 says why, once per distinct message). None if any was bad."""
    try:
        config, error = config_from_args(args), None
    except UsageError as exc:
        config, error = None, str(exc)

    def decide(errors):
        bad: dict[str, list[int]] = {}
        for rank, message in enumerate(errors):
            if message is not None:
                bad.setdefault(message, []).append(rank)
        for message, where in bad.items():
            which = "" if len(where) == ranks.size else f" (on rank {format_cpu_list(where)})"
            print(f"writerprof repro: error: {message}{which}", file=sys.stderr, flush=True)
        return 2 if bad else None

    _, verdict = ranks.exchange(error, decide)
    if verdict is not None:
        ranks.release()
        return None
    return config


def _run_main(config: ReproConfig, ranks: Ranks | None) -> int:
    os.environ[MAIN_IMPORTS_ENV] = ",".join(config.main_imports)
    # Run the pipeline inside the main module, so that it is `__main__` for
    # multiprocessing, and children re-run it as they would a benchmark script.
    main_path = importlib.util.find_spec("writerprof.repro.main").origin
    namespace = runpy.run_path(
        main_path, init_globals={"REPRO_CONFIG": config, "REPRO_RANKS": ranks}, run_name="__main__"
    )
    return namespace["REPRO_EXIT"]
