"""writerprof's in-process probe. Standard library only, Python 3.9-3.13;
it never imports writerprof. `activate()` is called by the sitecustomize
next to this package when WRITERPROF_RUN names a run directory."""

import os
import sys
import time

from . import agent, calls, format, identity, lifecycle, mp, osio, shm, specs
from .format import FORCE_ENV, MITIGATE_ENV, PROBES_ENV, RUN_ENV
from .journal import Journal


def activate(started_ns=None):
    started_ns = started_ns or time.monotonic_ns()
    run = os.environ[RUN_ENV]
    host = format.host_name()
    journal = Journal(run, host)
    created_ns = identity.start_time_ns()
    journal.open(os.getpid(), created_ns)
    argv = identity.cmdline()
    process = dict(
        t_ns=started_ns,
        schema=1,
        pid=os.getpid(),
        ppid=os.getppid(),
        host=host,
        argv=identity.redact_argv(argv),
        executable=sys.executable,
        python=".".join(map(str, sys.version_info[:3])),
        implementation=sys.implementation.name,
        created_ns=created_ns,
        created_via="exec",
        forked_from=None,
        role=identity.exec_role(argv),
        wall_ns=time.time_ns(),
        mono_ns=time.monotonic_ns(),
        env=identity.allowed_env(os.environ),
        affinity=sorted(os.sched_getaffinity(0)),
        **identity.rank(os.environ)
    )
    journal.event("process", **process)
    calls.journal = journal
    phases = specs.Phases(journal)

    def hook_status(spec, status, reason):
        journal.event("hook", spec=spec, status=status, reason=reason)

    forced = os.environ.get(FORCE_ENV, "").strip() or None
    osio.install(hook_status)
    mp.install(journal, hook_status, forced, os.environ.get(MITIGATE_ENV, ""))
    shm.install(journal, hook_status)
    added = [line.strip() for line in os.environ.get(PROBES_ENV, "").splitlines() if line.strip()]
    for spec in specs.BUILT_IN + tuple(added):
        try:
            specs.register(spec, phases, hook_status)
        except specs.SpecError as exc:
            hook_status(spec, "failed", str(exc))
    lifecycle.install(journal, process, phases)
    agent.maybe_start(journal, run, host)
    journal.event("activated", start_ns=started_ns, end_ns=time.monotonic_ns())
