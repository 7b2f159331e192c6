"""On a host other than the launcher's, the first probed process starts that
host's sampler agent (`python -m writerprof.record.agent`, with the launcher's
interpreter), which samples the probed processes there and their
descendants, and exits with them. One at a time per host: the process that
creates RUN/hosts/HOST/agent.lock starts it. The lock names its holders, a
line "BOOT_ID PID START_TICKS" each for that process and, once started, the
agent (the last line is the holder): a lock whose holder is gone (no such
process, its pid another's since, or another boot) is taken over by the
next probed process of the host, which starts a new agent (a job step that
starts after the host's agent ended with the one before). Of processes that
find it so at once, the one that links it aside (agent.lock.stale-HOLDER)
takes it over. (Another recording's lock is never found: its part was moved
aside whole, part.py.)

Where record listens for the parts (HOMECOMING_ENV), the starter dials it
before it starts the agent and hands the connections on (HOMECOMING_FDS_ENV):
the kernel completes them while this process goes on, so record knows of
the host before its ranks, and so CMD, can end, however long the agent
takes to start (a one-second rank ends before an agent has imported)."""

import os
import sys

from . import format


def maybe_start(journal, run, host):
    launch_host = os.environ.get(format.LAUNCH_HOST_ENV)
    python = os.environ.get(format.AGENT_PYTHON_ENV)
    if not launch_host or not python or format.safe_host(host) == format.safe_host(launch_host):
        return  # the launcher's own sampler follows this host's processes
    fd = take_lock(os.path.join(run, format.HOSTS_DIR, format.safe_host(host), format.AGENT_LOCK))
    if fd is None:
        return  # started by another process of this host, and still running
    dialed = []
    try:
        import subprocess  # only here, once a host: it costs start-up

        env = {k: v for k, v in os.environ.items() if not k.startswith("WRITERPROF_") and k != "PYTHONPATH"}
        # Where and how it sends the host's part home, and whose it is: in its
        # environment, never its argv (the secret is not for `ps` to show).
        env.update((k, os.environ[k]) for k in (format.HOMECOMING_ENV, format.HOMECOMING_KEY_ENV, format.RUN_ID_ENV)
                   if k in os.environ)
        interval = os.environ.get(format.INTERVAL_ENV, "100000000")
        stall = os.environ.get(format.STALL_ENV, "0")
        argv = [python, "-m", "writerprof.record.agent", os.path.abspath(run), host, interval, str(os.getpid()),
                stall]
        if not os.path.exists(python):
            raise OSError("no interpreter %s on this host" % python)
        if os.environ.get(format.HOMECOMING_ENV) and os.environ.get(format.HOMECOMING_KEY_ENV):
            dialed = dial(os.environ[format.HOMECOMING_ENV].split(","))[0]
            if dialed:  # (else the agent dials record itself)
                env[format.HOMECOMING_FDS_ENV] = ",".join(str(sock.fileno()) for sock in dialed)
        # From /: `-m` puts the working directory first on sys.path, where a
        # checkout of writerprof would shadow the installed one.
        agent = subprocess.Popen(argv, env=env, cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
                                 pass_fds=[sock.fileno() for sock in dialed])
        os.write(fd, _holder(agent.pid))
        journal.event("agent", started=True, pid=agent.pid, python=python)
    except Exception as exc:  # the host goes unsampled; the target runs on
        journal.event("agent", started=False, reason="%s: %s" % (type(exc).__name__, exc),
                      python=python, executable=sys.executable)
    finally:
        for sock in dialed:  # (the agent's now, or nobody's)
            sock.close()
        os.close(fd)


def dial(addresses):
    """Connections to each of record's addresses ("IP:PORT"), begun and not
    waited for (non-blocking sockets: which one answers is the agent's to
    see), and the error of the last address that could not be dialed."""
    import socket

    dialed, error = [], None
    for address in addresses:
        ip, _, port = address.rpartition(":")
        sock = None
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setblocking(False)
            sock.connect((ip, int(port)))
        except BlockingIOError:
            pass  # under way
        except (OSError, ValueError) as exc:
            if sock is not None:
                sock.close()
            error = exc
            continue
        dialed.append(sock)
    return dialed, error


def take_lock(path):
    """agent.lock made by this process, naming it (its fd, to name the agent
    next), or None where a holder that is still running has it (or one
    being written: no complete line yet)."""
    for _ in range(2):  # a stale lock taken over, then made anew
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            holder = _holder_of(path)
            if holder is None or _running(*holder):
                return None
            try:
                os.link(path, "%s.stale-%s-%s-%s" % ((path,) + holder))  # one process only: the link is taken then
                os.unlink(path)
            except OSError:
                return None
            continue
        os.write(fd, _holder(os.getpid()))
        return fd
    return None


def _holder(pid):
    return ("%s %d %s\n" % (_boot_id(), pid, _start_ticks(pid))).encode("ascii", "replace")


def _holder_of(path):
    """(boot id, pid, start ticks) of the lock's last line, or None."""
    try:
        with open(path, "rb") as f:
            lines = f.read(4096).decode("ascii", "replace").split("\n")[:-1]  # whole lines: one may be being written
    except OSError:
        return None
    fields = lines[-1].split() if lines else []
    return (fields[0], int(fields[1]), fields[2]) if len(fields) == 3 and fields[1].isdigit() else None


def _running(boot_id, pid, start_ticks):
    """Whether the process a lock names still runs: this boot's, and the pid
    not another process's since (its start time is the same)."""
    if boot_id != _boot_id():
        return False
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in (b"Z", b"X") and fields[19].decode() == start_ticks


def _start_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return "?"  # gone already: a holder that is not running


def _boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            return f.read().decode("ascii", "replace").strip() or "?"
    except OSError:
        return "?"
