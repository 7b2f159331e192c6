"""Synthetic run directories, for tests and benchmarks of the analysis: the
files `writerprof record` and the probe write (run.json, per host
topology.json, samples.bin, sampled.jsonl and each process's journal),
made from a model of the reproducer's pipeline instead of a measurement.
run.json says so: "synthetic": true, and the scenario it was made from.

The model is a small deterministic discrete simulation, vectorised over the
ranks of a host, one save at a time. Per rank a producer (an exec'd "main"
process with its MPI rank) runs `saves` saves; each save creates `buffers`
shared-memory buffers, starts one writer (fork, forkserver or spawn, with the
start-up each method has), fills a buffer per chunk (`gen`) and queues it
(`put`, blocked while `buffers` chunks are queued); the writer attaches the
buffers, takes each chunk (`get`, blocked while none is queued), writes it,
fsyncs, closes and leaves with os._exit. The sampler's view (a record per
live process per interval, first sight, affinity, numa_maps, gone) is derived
from the same timeline. Each host has its own CLOCK_MONOTONIC, as real hosts
do; the identity's wall_ns/mono_ns anchor relates it to wall time.

    from writerprof.synthetic import Scenario, write_run
    write_run("RUN", Scenario(start_method="forkserver", main_rerun_s=0.8))

The parts: scenario (the settings and their validation), machine (the
topology), timeline (when each thing happens), host, producer and writer (the
processes' journals), chunks (their chunk records), sampler (its view and
files), events (journal lines), directory (the run directory and run.json).
"""

from writerprof.synthetic.directory import write_run
from writerprof.synthetic.events import PAGE_SIZE
from writerprof.synthetic.machine import make_topology
from writerprof.synthetic.scenario import MIB, START_METHODS, Scenario

__all__ = ["MIB", "PAGE_SIZE", "START_METHODS", "Scenario", "make_topology", "write_run"]
