"""One synthetic host: its clock, its ranks and their processes' pids, and
its run of the saves, which the timeline times and the producer and writer
modules journal."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from writerprof.probes.writerprof_probe import format as journal
from writerprof.run import layout
from writerprof.synthetic import chunks, producer, timeline, writer
from writerprof.synthetic.events import PYTHON, SITE, Buffers
from writerprof.synthetic.machine import Machine
from writerprof.synthetic.sampler import Sampler
from writerprof.synthetic.scenario import Scenario
from writerprof.synthetic.timeline import (ACTIVATE_NS, BETWEEN_SAVES_NS, EXIT_AFTER_NS, IMPORTS_NS,
                                           INTERPRETER_NS, LAUNCH_NS, MS, S, US)

WALL_BASE = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z


def clock_base(host: int) -> int:
    """The host's CLOCK_MONOTONIC when the recording started: each host booted at its own time."""
    return 90_000 * S + host * 3_600_123_456_789


def host_name(host: int) -> str:
    return f"host{host}"


class Rank:
    """A rank's processes and what carries from one save to the next."""

    def __init__(self, host: Host, local: int):
        sc = host.sc
        self.local = local
        self.rank = host.index * sc.ranks_per_host + local
        self.overrides = sc.overrides
        self.sc = replace(sc.for_rank(self.rank), overrides={}) if sc.overrides else sc
        m = host.machine
        self.producer_mask = m.mask(self.sc.producer_cpus, f"rank {self.rank} producer_cpus")
        inherited = self.sc.writer_cpus_inherited
        if inherited is not None and sc.start_method != "forkserver" and tuple(inherited) != self.producer_mask:
            raise ValueError(f"rank {self.rank}: under {sc.start_method} a writer inherits the "
                             f"producer's mask; writer_cpus_inherited differs only under forkserver")
        self.daemon_mask = m.mask(inherited, f"rank {self.rank} writer_cpus_inherited") \
            if inherited is not None else self.producer_mask
        world = sc.hosts * sc.ranks_per_host
        self.env = {"OMPI_COMM_WORLD_LOCAL_RANK": str(local),
                    "OMPI_COMM_WORLD_LOCAL_SIZE": str(sc.ranks_per_host), "OMPI_COMM_WORLD_RANK": str(self.rank),
                    "OMPI_COMM_WORLD_SIZE": str(world),
                    "PYTHONPATH": f"{SITE}/writerprof/probes", "PYTHONUNBUFFERED": "1"}
        self.who = {"rank": self.rank, "local_rank": local, "world_size": world, "source": "openmpi"}
        self.argv = [PYTHON, "/opt/venv/bin/writerprof", "repro", "--saves", str(sc.saves), "--size",
                     str(sc.chunks_per_save * sc.chunk_size), "--chunk-size", str(sc.chunk_size),
                     "--buffers", str(sc.buffers), "--start-method", sc.start_method]
        self.exec_t = host.base + LAUNCH_NS + local * 3 * MS
        self.created = host.sampler.tick_round(self.exec_t)
        self.ident_t = self.exec_t + INTERPRETER_NS
        self.first_save = self.ident_t + ACTIVATE_NS + IMPORTS_NS
        self.pid = 0
        self.tracker_pid = self.daemon_pid = 0
        self.tracker = self.daemon = None  # (exec_t, created, ident_t) once started
        self.daemon_forks: list[int] = []
        self.reaped: list[tuple[int, int]] = []  # the daemon's reaped writers: (time, bytes written)
        # The producer's counters at the end of its last sampled segment.
        self.carry = dict(utime=0, stime=0, vol=0, minflt=0, wbytes=0)
        self.sample_from = self.exec_t
        self.numa_read = None  # when the sampler next reads its numa_maps
        self.mappings: list[tuple] = []  # its shared-memory mappings, for numa_maps
        self.numa_seen: dict[int, tuple] = {}
        self.exit_t = 0

    def save_scenario(self, save: int) -> Scenario:
        changes = self.overrides.get((self.rank, save))
        return replace(self.sc, **changes) if changes else self.sc


class Host:
    """One host of the run: its subtree of the run directory, its clock
    (CLOCK_MONOTONIC from its own boot), its pids, its sampler."""

    def __init__(self, sc: Scenario, machine: Machine, run: Path, index: int):
        self.sc, self.machine, self.index = sc, machine, index
        self.name = host_name(index)
        self.base = clock_base(index)
        self.dir = layout.host_dir(run, self.name)
        self.procs = layout.procs_dir(run, self.name)
        self.procs.mkdir(parents=True)
        self.sampler = Sampler(self.dir, self.base, index, timeline.ns(sc.interval_s), sc.run_queue_share)
        self.next_pid = 1200 + 40 * index
        self.buffers = Buffers(self.name, sc.chunk_size, sc.buffers)
        self.ranks = [Rank(self, local) for local in range(sc.ranks_per_host)]
        for rank in self.ranks:
            rank.pid = self.new_pid()

    def wall(self, t: int) -> int:
        return WALL_BASE + (t - self.base)

    def new_pid(self) -> int:
        self.next_pid += 1
        return self.next_pid

    def files(self, pid: int, created: int) -> tuple[Path, Path]:
        """A process's journal pair."""
        base = self.procs / f"{pid}-{created}"
        return (base.parent / (base.name + journal.EVENTS_SUFFIX),
                base.parent / (base.name + journal.CHUNKS_SUFFIX))

    def write(self) -> int:
        """Write this host's subtree; returns when its recording ends, from its start."""
        for rank in self.ranks:
            producer.start(self, rank)
        t_b = np.array([rank.first_save for rank in self.ranks], dtype=np.int64)
        for save in range(self.sc.saves):
            t_b = self._save(save, t_b)
        for rank, end in zip(self.ranks, t_b):
            producer.end(self, rank, int(end) - BETWEEN_SAVES_NS + EXIT_AFTER_NS)
        # The recording ends after the last process and the sampler's last look at it.
        end = max(max(rank.exit_t for rank in self.ranks), self.sampler.records.last())
        self.sampler.finish(self.dir)
        snapshot = dict(self.machine.topology, numa_balancing=int(self.sc.pages_migrated_per_save > 0))
        (self.dir / layout.TOPOLOGY_FILE).write_text(json.dumps(snapshot, indent=2) + "\n")
        return end - self.base

    def _save(self, save: int, t_b: np.ndarray) -> np.ndarray:
        """One save, every rank of the host at once; returns when each rank begins the next."""
        v = timeline.save_timeline(self, save, t_b)
        self._new_pids(v)
        chunks.producer_records(self, v)
        chunks.writer_records(self, v)
        for i, rank in enumerate(self.ranks):
            producer.save(self, rank, v, i)
            writer.write(self, rank, v, i)
            producer.segment(self, rank, int(v["save_end"][i]) + BETWEEN_SAVES_NS, v, i)
        if self.sc.pages_migrated_per_save:
            self._migrations(save, v)
        self.sampler.samples.flush()
        return v["save_end"] + BETWEEN_SAVES_NS

    def _migrations(self, save: int, v: dict):
        """The sampler's vmstat readings around the save, and each writer's
        numa_sched reading before its end, as balancing migrated its pages."""
        moved = self.sc.pages_migrated_per_save
        before = {"numa_hint_faults": 2 * moved * len(self.ranks) * save,
                  "numa_pages_migrated": moved * len(self.ranks) * save}
        after = {name: value + (2 if name == "numa_hint_faults" else 1) * moved * len(self.ranks)
                 for name, value in before.items()}
        for t, counters in ((int(v["t_b"].min()) - MS, before), (int(v["save_end"].max()) + MS, after)):
            self.sampler.records.append((t, 0, 4, {"kind": "vmstat", "t_ns": t, "pid": 0, "counters": counters}))
        for i in range(len(self.ranks)):
            t = int(v["save_end"][i]) - MS
            self.sampler.records.append((t, 0, 4, {"kind": "numa_sched", "t_ns": t, "pid": int(v["writer_pid"][i]),
                                                   "counters": {"numa_pages_migrated": moved}}))

    def _new_pids(self, v: dict):
        """Pids in order of creation: resource trackers and forkserver daemons
        (first save), then writers."""
        born = []
        for i, rank in enumerate(self.ranks):
            if v["save"] == 0:
                tracker_exec = int(v["t_b"][i]) + 300 * US
                born.append((tracker_exec, i, "tracker"))
                if self.sc.start_method == "forkserver":
                    born.append((int(v["t_ps"][i]) + 500 * US, i, "daemon"))
            born.append((int(v["exec"][i]) if "exec" in v else int(v["created"][i]), i, "writer"))
        v["writer_pid"] = np.empty(len(self.ranks), np.int64)
        for t, i, what in sorted(born):
            rank, pid = self.ranks[i], self.new_pid()
            if what == "writer":
                v["writer_pid"][i] = pid
            else:
                created = self.sampler.tick_round(t)
                start = (t, created, t + INTERPRETER_NS - 5 * MS)
                if what == "tracker":
                    rank.tracker_pid, rank.tracker = pid, start
                else:
                    rank.daemon_pid, rank.daemon = pid, start
