"""A host's sampler agent: on a host other than the launcher's, the first
probed process starts this (python -m writerprof.record.agent RUN HOST
INTERVAL_NS ROOT_PID [STALL_NS]). It writes the host's topology and samples ROOT_PID, its
descendants and every process that journals into RUN/hosts/HOST/procs/,
as `writerprof record`'s sampler does on the launcher's host (its stall
snapshots too: writerprof.record.stall), until none of
them is left (or the recording has ended, when the run directory is shared).
It never prints: what ends it early is left in RUN/hosts/HOST/agent.error,
which the loader reports.

Where record listens for the parts (writerprof.record.homecoming: the
address and secret its starter handed on in its environment), the agent
first registers with record and samples until record says CMD has ended
(its processes here then have a moment to end); then it sends its host's
part home, unless the run directory is shared (this recording's run.json is
in RUN here), and removes it once record has merged it. A part that did not
come home stays where it is, and RUN/hosts/HOST/homecoming.json says why."""

from __future__ import annotations

import hmac
import json
import os
import secrets
import selectors
import shutil
import socket
import sys
import time
from pathlib import Path

# Ticks with no process to follow before the agent ends: ranks of one host
# start within moments of each other, and the next may not have journaled yet.
IDLE_TICKS = 20
# After CMD's end, how long this host's processes have to end before the
# part goes home: as record waits for its own host's (session._STRAGGLERS_S).
STRAGGLERS_S = 0.5


def run(run_dir: Path, host: str, interval_s: float, root_pid: int, stall_ns: int = 0,
        home: _Home | None = None) -> None:
    from writerprof.record import topology
    from writerprof.record.sampler import Sampler
    from writerprof.run import directory, layout

    directory.write_topology(run_dir, host, topology.snapshot())
    sampler = Sampler(root_pid, layout.host_dir(run_dir, host), interval_s, stall_ns=stall_ns)
    sampler.start()
    try:
        if home is not None and not home.wait_for_end(sampler):
            home = None  # record has gone: sample on as without it, and the part stays here
        if home is None:
            _until_idle(sampler, run_dir, interval_s)
    finally:
        sampler.stop()
    if home is not None:
        home.send(run_dir, host)


def _until_idle(sampler, run_dir: Path, interval_s: float) -> None:
    idle = 0
    # A sampler that could not write (a full run directory) has stopped: so does the agent.
    while idle < IDLE_TICKS and sampler.write_error is None and not _recording_ended(run_dir):
        time.sleep(interval_s)
        # Itself aside: the probed process that started it is its parent.
        idle = 0 if sampler.status().alive - {os.getpid()} else idle + 1


def _recording_ended(run_dir: Path) -> bool:
    from writerprof.run import layout

    try:
        return json.loads((run_dir / layout.RUN_FILE).read_bytes()).get("ended_ns") is not None
    except (OSError, ValueError):
        return False  # not shared with the launcher, or being rewritten: carry on


class _Home:
    """The agent's end of the homecoming: its connection to record, registered."""

    def __init__(self, channel, key: str, nonces: tuple[str, str], run_id: str):
        self.channel, self.key, self.nonces, self.run_id = channel, key, nonces, run_id

    @classmethod
    def register(cls, run_dir: Path, host: str, dialed: list[socket.socket] | None = None) -> _Home | None:
        """Registered with record where it listens (None where it does not),
        on one of the connections its starter began (dialed) or a new one;
        the outcome left in the part's homecoming.json either way."""
        from writerprof.probes.writerprof_probe.format import HOMECOMING_ENV, HOMECOMING_KEY_ENV, RUN_ID_ENV

        addresses, key = os.environ.get(HOMECOMING_ENV), os.environ.get(HOMECOMING_KEY_ENV)
        run_id = os.environ.get(RUN_ID_ENV, "")
        if not addresses or not key or _shared(run_dir, run_id):
            for sock in dialed or ():
                sock.close()
            return None  # (shared: the part is where record reads it, and the agent ends with its processes)
        try:
            home = cls._handshake(_connect_any(addresses.split(","), dialed), key, host, run_id, str(run_dir))
        except Exception as exc:  # record unreachable, gone, or refusing: the agent samples on without it
            _note(run_dir, host, to=addresses, registered=False, error=_reason(exc))
            return None
        _note(run_dir, host, to="%s:%d" % home.channel.sock.getpeername()[:2], registered=True)
        return home

    @classmethod
    def _handshake(cls, sock: socket.socket, key: str, host: str, run_id: str, run: str) -> _Home:
        from writerprof.probes.writerprof_probe.format import safe_host
        from writerprof.record import homecoming

        channel = homecoming.Channel(sock)
        sock.settimeout(homecoming.HANDSHAKE_S)
        greeting = channel.line()
        theirs = greeting.get("nonce")
        if greeting.get("writerprof") != "homecoming" or greeting.get("version") != homecoming.VERSION or not \
                isinstance(theirs, str):
            raise homecoming.ProtocolError(f"not writerprof record's homecoming {homecoming.VERSION}: {greeting}")
        ours = secrets.token_hex(32)
        host = safe_host(host)
        channel.send({"nonce": ours, "host": host, "run_id": run_id, "run": run,
                      "proof": homecoming.proof(key, "agent", theirs, ours, host, run_id, run)})
        answer = channel.line()
        if "refused" in answer:
            raise homecoming.ProtocolError(f"record refused it: {answer['refused']}")
        if not hmac.compare_digest(str(answer.get("proof")), homecoming.proof(key, "record", theirs, ours)):
            raise homecoming.ProtocolError("the listener did not prove it knows this recording's secret")
        sock.settimeout(None)  # until CMD's end: record says when
        channel.start_mac(key, (theirs, ours), sender=True)
        return cls(channel, key, (theirs, ours), run_id)

    def wait_for_end(self, sampler) -> bool:
        """Until record says CMD has ended, then until this host's processes
        have ended too (STRAGGLERS_S at most); False where record has gone."""
        try:
            said = self.channel.line()
        except Exception:
            return False
        if said.get("end") is not True:
            return False
        deadline = time.monotonic() + STRAGGLERS_S
        while sampler.status().alive - {os.getpid()} and time.monotonic() < deadline:
            time.sleep(0.02)
        return True

    def send(self, run_dir: Path, host: str) -> None:
        """The host's part sent home (or word that it is there already), and
        removed here once record has merged it."""
        from writerprof.record import homecoming
        from writerprof.run import layout

        host_dir = layout.host_dir(run_dir, host)
        try:
            self.channel.sock.settimeout(homecoming.DEADLINE_S)  # record waits no longer
            if _shared(run_dir, self.run_id):  # (a shared run directory seen late: the part is there)
                self.channel.send({"shared": True})
                return
            entries = _entries(host_dir)
            self.channel.send({"part": {"files": sum(not d for _, d, _ in entries),
                                        "bytes": sum(size for _, _, size in entries)}})
            if (answer := self.channel.line()).get("take") is not True:
                raise homecoming.ProtocolError(f"record refused it: {answer.get('refused')}")
            for rel, is_dir, _ in entries:
                if is_dir:
                    self.channel.send({"dir": rel})
                else:
                    self._send_file(host_dir, rel)
            mac = self.channel.digest()
            self.channel.send({"done": mac})
            verdict = self.channel.line()
        except Exception as exc:
            _note(run_dir, host, registered=True, error=_reason(exc))
            return
        if verdict.get("merged") is True and hmac.compare_digest(str(verdict.get("proof")), homecoming.proof(
                self.key, "merged", *self.nonces, mac)):
            _remove(run_dir, host_dir)
        else:
            _note(run_dir, host, registered=True, error=f"record refused it: {verdict.get('refused')}")

    def _send_file(self, host_dir: Path, rel: str) -> None:
        from writerprof.run import ownfile

        with ownfile.open_file(host_dir / rel) as file:
            size = os.fstat(file.fileno()).st_size
            self.channel.send({"file": rel, "size": size})
            left = size
            while left:
                piece = file.read(min(left, 1 << 20))
                if not piece:
                    raise OSError(f"{rel} became shorter while it was sent")
                self.channel.send_bytes(piece)
                left -= len(piece)


def _shared(run_dir: Path, run_id: str) -> bool:
    """Whether the run directory here is record's own (its run.json, of this recording)."""
    from writerprof.run import meta

    return bool(run_id) and meta.run_id(run_dir) == run_id


def _connect_any(addresses: list[str], dialed: list[socket.socket] | None = None) -> socket.socket:
    """A connection to the first of record's addresses to answer, all tried at
    once (an address of another network of the launcher's may never answer):
    the connections the starter began (dialed), or new ones."""
    from writerprof.probes.writerprof_probe.agent import dial
    from writerprof.record.homecoming import CONNECT_S

    error = None
    if dialed is None:
        dialed, error = dial(addresses)
    pending = list(dialed)
    with selectors.DefaultSelector() as selector:
        for sock in pending:
            selector.register(sock, selectors.EVENT_WRITE)
        deadline = time.monotonic() + CONNECT_S
        try:
            while pending and (left := deadline - time.monotonic()) > 0:
                for key, _ in selector.select(left):
                    sock = key.fileobj
                    selector.unregister(sock)
                    pending.remove(sock)
                    failed = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                    if not failed:
                        sock.setblocking(True)
                        # A launcher host that vanishes (no FIN) is noticed in about two minutes:
                        # the agent then samples on as without record, and ends.
                        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                        for option, value in ((socket.TCP_KEEPIDLE, 60), (socket.TCP_KEEPINTVL, 10),
                                              (socket.TCP_KEEPCNT, 6)):
                            sock.setsockopt(socket.IPPROTO_TCP, option, value)
                        return sock
                    error = OSError(failed, os.strerror(failed))
                    sock.close()
        finally:
            for sock in pending:
                sock.close()
    raise error or TimeoutError(f"no answer from {', '.join(addresses)} within {CONNECT_S:.0f} s")


def _handed() -> list[socket.socket] | None:
    """The connections to record that the starter began (HOMECOMING_FDS_ENV),
    or None where it began none: the agent then dials record itself."""
    from writerprof.probes.writerprof_probe.format import HOMECOMING_FDS_ENV

    fds = os.environ.pop(HOMECOMING_FDS_ENV, None)
    if fds is None:
        return None
    handed = []
    for fd in filter(None, fds.split(",")):
        try:
            handed.append(socket.socket(fileno=int(fd)))
        except (OSError, ValueError):
            continue  # not a socket after all: the others are tried
    return handed or None


def _entries(top: Path) -> list[tuple[str, bool, int]]:
    """The part's entries, parents first: (path under top, is a directory, size)."""
    import stat

    found = []
    for at, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            info = os.lstat(os.path.join(at, name))
            if stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode):  # (a part holds nothing else)
                found.append((os.path.relpath(os.path.join(at, name), top), stat.S_ISDIR(info.st_mode),
                              info.st_size if stat.S_ISREG(info.st_mode) else 0))
    return found


def _remove(run_dir: Path, host_dir: Path) -> None:
    """The part, gone home: removed here, and the directories above it that it leaves empty."""
    shutil.rmtree(host_dir, ignore_errors=True)
    for directory in (host_dir.parent, run_dir):
        try:
            directory.rmdir()
        except OSError:  # another host's part, or what else the run directory holds here
            return


def _note(run_dir: Path, host: str, **outcome) -> None:
    """What became of the homecoming, in the part (where it stays, it says why)."""
    from writerprof.run import layout, ownfile

    try:
        ownfile.replace(layout.host_dir(run_dir, host) / layout.HOMECOMING_FILE, json.dumps(outcome).encode())
    except OSError:
        pass  # the part without it


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def main(argv: list[str]) -> int:
    try:
        run_dir, host, interval_ns, root_pid, *stall_ns = argv  # (no STALL_NS: a probe from before --stall)
        # Registered first, on the connections its starter began: a short job's
        # record may otherwise end before it hears of this host.
        home = _Home.register(Path(run_dir), host, _handed())
        run(Path(run_dir), host, int(interval_ns) / 1e9, int(root_pid), int(stall_ns[0]) if stall_ns else 0,
            home=home)
    except Exception:
        _leave_word(argv)
        return 1
    return 0


def _leave_word(argv: list[str]) -> None:
    """What went wrong, where the loader will find it (ERROR_FILE)."""
    import traceback

    try:
        from writerprof.run import layout, ownfile

        path = layout.host_dir(Path(argv[0]), argv[1]) / layout.AGENT_ERROR_FILE
        ownfile.replace(path, traceback.format_exc().encode())
    except Exception:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
