"""writerprof's in-process probe. Standard library only, Python 3.9-3.13;
it never imports writerprof. `activate()` is called by the sitecustomize
next to this package when WRITERPROF_RUN names a run directory.

Every Python process of a recorded command pays for what runs here, so
start-up does only what every process needs: the identity line, the os
hooks, the exit and fork handlers, the stack sampler's thread if record
asked for one, and import hooks that wait. The
multiprocessing hooks (mp) are imported and installed when the target first
imports multiprocessing, the shared-memory ones (shm, numa) when it imports
multiprocessing.shared_memory, the what-ifs (mitigate) only where one is
asked for; the sampler agent's module only on a host that needs one."""

import os
import sys
import time


def activate(started_ns=None):
    # Long because the identity line is wide and every hook is installed in its order here.
    # Its modules imported here, not by the package: writerprof imports the
    # probe's format and identity (through this package) and needs none of them.
    from . import calls, format, identity, imports, iofile, lifecycle, osio, specs
    from .format import FORCE_ENV, LAUNCH_HOST_ENV, MITIGATE_ENV, PROBES_ENV, RUN_ENV, STACKS_ENV
    from .journal import Journal

    started_ns = started_ns or time.monotonic_ns()
    run = os.environ[RUN_ENV]
    host = format.host_name()
    journal = Journal(run, host)
    created_ns = journal.open(os.getpid(), identity.start_time_ns())
    argv = identity.cmdline()
    process = dict(
        t_ns=started_ns,
        schema=format.SCHEMA,
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
        memory=identity.memory_binding(),
        **identity.rank(os.environ)
    )
    journal.event("process", **process)
    journal.hold()  # the rest of activation's events in one write, the identity line first
    try:
        calls.journal = journal
        phases = specs.Phases(journal)

        def hook_status(spec, status, reason):
            journal.event("hook", spec=spec, status=status, reason=reason)

        lifecycle.install(journal, process, phases)
        lifecycle.on_fork_in_child(calls.reset_after_fork)
        if os.environ.get(STACKS_ENV):  # record takes the stacks here, not with py-spy
            from . import stacks

            stacks.install(journal, process, lifecycle.on_fork_in_child, lifecycle.on_exit)
        # Where the interposer is loaded it times every file call of this
        # process from below, and os's functions stay the target's own.
        if iofile.LIBRARY not in os.environ.get("LD_PRELOAD", ""):
            osio.install(hook_status)
        forced = os.environ.get(FORCE_ENV, "").strip() or None
        mitigations = os.environ.get(MITIGATE_ENV, "")

        def multiprocessing_hooks(package):
            # Right after the package's own module ran: its submodules that it
            # imported are hooked at once, the others when they are imported.
            try:
                from . import mp

                mp.install(journal, hook_status, forced, mitigations)
            except Exception as exc:  # inside the target's import: never its problem
                hook_status("multiprocessing", "failed", "%s: %s" % (type(exc).__name__, exc))

        def shared_memory_hooks(module):
            try:
                from . import shm

                shm.install(journal, hook_status)  # (applied at once: the module is there)
            except Exception as exc:
                hook_status("multiprocessing.shared_memory", "failed", "%s: %s" % (type(exc).__name__, exc))

        imports.when_imported("multiprocessing", multiprocessing_hooks)
        imports.when_imported("multiprocessing.shared_memory", shared_memory_hooks)
        added = [line.strip() for line in os.environ.get(PROBES_ENV, "").splitlines() if line.strip()]
        for spec in specs.BUILT_IN + tuple(added):
            try:
                specs.register(spec, phases, hook_status)
            except specs.SpecError as exc:
                hook_status(spec, "failed", str(exc))
        if os.environ.get(LAUNCH_HOST_ENV):  # launched from another host, perhaps
            from . import agent

            agent.maybe_start(journal, run, host)
        journal.event("activated", start_ns=started_ns, end_ns=time.monotonic_ns())
    finally:
        journal.release()
