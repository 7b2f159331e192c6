"""On a host other than the launcher's, the first probed process starts that
host's sampler agent (`python -m writerprof.record.agent`, with the launcher's
interpreter), which samples the probed processes there and their
descendants, and exits with them. One per host: the first to create
RUN/hosts/HOST/agent.lock starts it, and writes the recording's id beside
it (RUN/hosts/HOST/run_id), which `writerprof merge` checks."""

import os
import sys

from . import format


def maybe_start(journal, run, host):
    launch_host = os.environ.get(format.LAUNCH_HOST_ENV)
    python = os.environ.get(format.AGENT_PYTHON_ENV)
    if not launch_host or not python or format.safe_host(host) == format.safe_host(launch_host):
        return  # the launcher's own sampler follows this host's processes
    host_dir = os.path.join(run, format.HOSTS_DIR, format.safe_host(host))
    try:
        fd = os.open(os.path.join(host_dir, format.AGENT_LOCK), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return  # started by another process of this host
    try:
        _write_run_id(host_dir)
        import subprocess  # only here, once a host: it costs start-up

        env = {k: v for k, v in os.environ.items() if not k.startswith("WRITERPROF_") and k != "PYTHONPATH"}
        interval = os.environ.get(format.INTERVAL_ENV, "100000000")
        stall = os.environ.get(format.STALL_ENV, "0")
        argv = [python, "-m", "writerprof.record.agent", os.path.abspath(run), host, interval, str(os.getpid()),
                stall]
        if not os.path.exists(python):
            raise OSError("no interpreter %s on this host" % python)
        # From /: `-m` puts the working directory first on sys.path, where a
        # checkout of writerprof would shadow the installed one.
        agent = subprocess.Popen(argv, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True)
        os.write(fd, b"%d\n" % agent.pid)
        journal.event("agent", started=True, pid=agent.pid, python=python)
    except Exception as exc:  # the host goes unsampled; the target runs on
        journal.event("agent", started=False, reason="%s: %s" % (type(exc).__name__, exc),
                      python=python, executable=sys.executable)
    finally:
        os.close(fd)


def _write_run_id(host_dir):
    run_id = os.environ.get(format.RUN_ID_ENV)
    if not run_id:
        return  # not recorded by `writerprof record`: a part no merge can check
    try:
        out = os.open(os.path.join(host_dir, format.RUN_ID_FILE),
                      os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            os.write(out, run_id.encode("ascii", "replace") + b"\n")
        finally:
            os.close(out)
    except OSError:
        pass  # the part then carries no id, and merge says so: the agent starts all the same
