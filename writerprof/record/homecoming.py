"""The parts come home: where the run directory is not shared (each host's
own /tmp), each other host's part (RUN/hosts/HOST/) is sent back to
`record` by that host's sampler agent (writerprof.record.agent) once CMD
has ended, and merged into the launcher's run directory by `writerprof
merge`'s own code (writerprof.run.merge), so that record ends with the
whole job. A host that cannot send (killed, unreachable, a firewall) keeps
its part, and record says which host and how to merge it.

record listens for this recording only, and only where CMD may start ranks
on other hosts (it names an MPI launcher or srun, or is a shell script with an
MPI launcher on its PATH: launchers.may_reach_other_hosts; not imported
before, this module costs record no start-up otherwise): on each IPv4 address of
this host's interfaces that are up, loopback's aside (the addresses an MPI
launcher offers its own daemons, which reach it back on one of them); no
other host, no listener. The agents learn the addresses and a secret of the
recording's (format.HOMECOMING_ENV, HOMECOMING_KEY_ENV) from CMD's
environment, which the launcher forwards as it does record's other
variables; the secret is never in argv or a file of the run. The process
that starts a host's agent dials record first and hands the connections on
(the probe's agent.py): record knows of every host before CMD can end, and
waits for the ones whose connection it has, however late their agents speak.

One TCP connection per host, for the whole recording; JSON lines, each
file's bytes after its line:

    record: {"writerprof": "homecoming", "version": 1, "nonce": N1}
    agent:  {"nonce": N2, "host": H, "run_id": ID, "run": RUN, "proof": P}
            P = HMAC-SHA256(secret, "agent", N1, N2, the other fields): the agent knows the secret
    record: {"proof": HMAC(secret, "record", N1, N2)}, or {"refused": WHY} and it closes
    ... CMD runs; the agent samples its host ...
    record: {"end": true}                    CMD has ended
    agent:  {"shared": true}                 its part is in RUN already (a shared run directory)
        or  {"part": {"files": F, "bytes": B}}
    record: {"take": true}, or {"refused": WHY} (more than LIMIT)
    agent:  {"dir": REL} or {"file": REL, "size": S} + S bytes per entry, then {"done": MAC}, the
            HMAC of every byte it sent after the handshake
    record: {"merged": true, "proof": HMAC(secret, "merged", N1, N2, MAC)}, or {"refused": WHY}

The agent removes its part once it is merged (it has come home). record
takes at most LIMIT bytes from a host, writes only directories and regular
files under that host's own directory (no absolute path, no '..', nothing
but what it makes itself), and waits for the parts at most DEADLINE_S
after CMD's end."""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import secrets
import selectors
import shutil
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path, PurePosixPath

from writerprof.errors import WriterprofError
from writerprof.probes.writerprof_probe import quiet
from writerprof.probes.writerprof_probe.format import HOMECOMING_ENV, HOMECOMING_KEY_ENV, HOSTS_DIR, safe_host

VERSION = 1
LIMIT = 1 << 30  # the bytes a host's part may bring: more is left where it is, for merge
DEADLINE_S = 60.0  # after CMD's end, the parts that are not home are missing
HANDSHAKE_S = 10.0  # an answer in the handshake takes no longer on any network
# The agent's greeting may come as late as this after its connection: the
# starter dials record, then the agent's interpreter starts (a loaded host).
GREETING_S = 60.0
CONNECT_S = 5.0  # the agent's connection attempt, to every address at once
LINE_LIMIT = 64 << 10  # a JSON line: a header, or an entry's path
_CHUNK = 1 << 20
# Linux's ioctls for an interface's flags and IPv4 address (netdevice(7)).
_SIOCGIFFLAGS, _SIOCGIFADDR, _IFF_UP, _IFF_LOOPBACK = 0x8913, 0x8915, 0x1, 0x8


class ProtocolError(Exception):
    """The other side said something it may not, or too much: its words are the reason."""


def addresses() -> list[str]:
    """This host's IPv4 addresses, of its interfaces that are up, loopback's aside."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            request = struct.pack("256s", name.encode()[:15])
            try:
                flags = struct.unpack_from("H", fcntl.ioctl(probe, _SIOCGIFFLAGS, request), 16)[0]
                if flags & _IFF_UP and not flags & _IFF_LOOPBACK:
                    found.append(socket.inet_ntoa(fcntl.ioctl(probe, _SIOCGIFADDR, request)[20:24]))
            except OSError:  # no IPv4 address on it
                continue
    return found


def proof(key: str, label: str, *parts: bytes | str) -> str:
    """What only a holder of the recording's secret can say of these parts."""
    data = b"\0".join(p.encode() if isinstance(p, str) else p for p in (label, *parts))
    return hmac.new(key.encode(), data, hashlib.sha256).hexdigest()


class Channel:
    """A connection's JSON lines and bytes, each way; what is read past
    `limit` bytes is refused. After the handshake, what the agent sends goes
    into a running HMAC on both sides (start_mac): its last line says the
    agent's, which must be record's."""

    def __init__(self, sock: socket.socket, limit: int | None = None):
        self.sock, self.limit = sock, LIMIT if limit is None else limit
        self.buffer = bytearray()
        self.read_bytes = 0
        self.sent_mac: hmac.HMAC | None = None  # the agent's
        self.read_mac: hmac.HMAC | None = None  # record's
        self.sending = threading.Lock()  # record's "end" comes from another thread than the rest

    def start_mac(self, key: str, nonces: tuple[str, str], sender: bool) -> None:
        mac = hmac.new(key.encode(), b"\0".join(n.encode() for n in ("part", *nonces)), hashlib.sha256)
        if sender:
            self.sent_mac = mac
        else:
            self.read_mac = mac

    def digest(self) -> str:
        return (self.sent_mac or self.read_mac).copy().hexdigest()

    def send(self, message: dict) -> None:
        self.send_bytes(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def send_bytes(self, data: bytes) -> None:
        with self.sending:
            self.sock.sendall(data)
        if self.sent_mac is not None:
            self.sent_mac.update(data)

    def line(self) -> dict:
        """The next JSON line, as a dict; EOFError where the other side closed."""
        while (end := self.buffer.find(b"\n")) < 0:
            if len(self.buffer) > LINE_LIMIT:
                raise ProtocolError(f"a line longer than {LINE_LIMIT} bytes")
            self._fill()
        data = bytes(self.buffer[:end + 1])
        del self.buffer[:end + 1]
        self._count(data)
        try:
            message = json.loads(data)
        except ValueError:
            raise ProtocolError("a line that is not JSON") from None
        if not isinstance(message, dict):
            raise ProtocolError("a line that is not a JSON object")
        return message

    def read_into(self, size: int, write) -> None:
        """size bytes, each piece handed to write as it comes."""
        while size:
            if not self.buffer:
                self._fill()
            piece = bytes(self.buffer[:size])
            del self.buffer[:len(piece)]
            self._count(piece)
            write(piece)
            size -= len(piece)

    def _fill(self) -> None:
        data = self.sock.recv(_CHUNK)
        if not data:
            raise EOFError("the connection closed")
        self.buffer += data

    def _count(self, data: bytes) -> None:
        self.read_bytes += len(data)
        if self.read_bytes > self.limit:
            raise ProtocolError(f"more than {self.limit >> 20} MiB")
        if self.read_mac is not None:
            self.read_mac.update(data)


def entry_path(rel) -> PurePosixPath:
    """An entry's path in a part, checked: relative, plain components only."""
    if not isinstance(rel, str) or not rel or "\0" in rel or len(rel) > 4096:
        raise ProtocolError(f"an entry named {rel!r}")
    path = PurePosixPath(rel)
    if path.is_absolute() or str(path) != rel or any(part in ("", ".", "..") for part in path.parts):
        raise ProtocolError(f"an entry outside its host's directory: {rel!r}")
    return path


# --- record's side ------------------------------------------------------------------------------

class _Host:
    """One agent's connection, in a thread of its own: the handshake, then its
    part once record has said CMD ended, merged into the run directory."""

    def __init__(self, listener: Listener, sock: socket.socket):
        self.listener, self.sock = listener, sock
        self.channel = Channel(sock)
        self.name: str | None = None  # once it said who it is
        self.run: str | None = None  # where the part is on its host
        self.state = "connecting"  # -> registered -> home | shared | missing
        self.reason = ""
        self.files = self.bytes = 0
        self.done = threading.Event()

    def serve(self) -> None:
        staging = None
        try:
            nonces = self._handshake()
            message = self.channel.line()  # (blocks until CMD has ended and the agent sent)
            if message.get("shared") is True:
                self.state = "shared"
                return
            if not isinstance(message.get("part"), dict):
                raise ProtocolError("no part")
            staging = Path(tempfile.mkdtemp(prefix=f".incoming-{self.name}-", dir=self.listener.run_dir))
            mac = self._receive(message["part"], staging / HOSTS_DIR / self.name)
            self.listener.merge(staging)
            self.state = "home"
            self.channel.send({"merged": True, "proof": proof(self.listener.key, "merged", *nonces, mac)})
        except (OSError, EOFError, ProtocolError, WriterprofError) as exc:
            if self.state != "home":
                # (past the deadline, collect() said why first)
                self.state, self.reason = "missing", self.reason or _why(exc, self.state)
                self._tell({"refused": self.reason})
        finally:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
            self.sock.close()
            self.done.set()

    def _handshake(self) -> tuple[str, str]:
        listener, channel = self.listener, self.channel
        self.sock.settimeout(HANDSHAKE_S)
        ours = secrets.token_hex(32)
        channel.send({"writerprof": "homecoming", "version": VERSION, "nonce": ours})
        self.sock.settimeout(GREETING_S)
        hello = channel.line()
        theirs, host, run_id, run = (hello.get(k) for k in ("nonce", "host", "run_id", "run"))
        if not all(isinstance(v, str) for v in (theirs, host, run_id, run)):
            raise ProtocolError("a greeting without nonce, host, run_id and run")
        if not hmac.compare_digest(str(hello.get("proof")), proof(listener.key, "agent", ours, theirs, host,
                                                                       run_id, run)):
            raise ProtocolError("no proof of this recording's secret")
        if host != safe_host(host) or host in (".", "..") or run_id != listener.run_id:
            raise ProtocolError(f"host {host!r} of recording {run_id!r}: not this recording's")
        listener.reserve(self, host)
        self.name, self.run = host, run
        channel.send({"proof": proof(listener.key, "record", ours, theirs)})
        self.sock.settimeout(None)  # until CMD's end, and then to the deadline: record wakes it (close)
        channel.start_mac(listener.key, (ours, theirs), sender=False)
        listener.registered(self)
        return ours, theirs

    def _receive(self, part: dict, top: Path) -> str:
        """The entries of the part, into top: directories and regular files of
        our own making only, each where its checked path says under top. The
        HMAC of what came, which the agent's last line must say."""
        declared = part.get("bytes")
        if not isinstance(declared, int) or declared > LIMIT:
            raise ProtocolError(f"a part of {declared} bytes: more than the {LIMIT >> 20} MiB a part may bring")
        self.channel.send({"take": True})
        top.parent.mkdir(0o700)
        top.mkdir(0o700)
        while True:
            mac = self.channel.digest()
            entry = self.channel.line()
            if "done" in entry:
                if not hmac.compare_digest(str(entry["done"]), mac):
                    raise ProtocolError("its part is not what its agent sent: altered on the way")
                return mac
            if "dir" in entry:
                (top / entry_path(entry["dir"])).mkdir(0o700)
            elif "file" in entry:
                size = entry.get("size")
                if not isinstance(size, int) or size < 0:
                    raise ProtocolError(f"a file of size {size!r}")
                fd = os.open(top / entry_path(entry["file"]), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600)
                try:
                    self.channel.read_into(size, lambda piece: _write(fd, piece))
                finally:
                    os.close(fd)
                self.files += 1
                self.bytes += size
            else:
                raise ProtocolError(f"an entry that is neither a directory nor a file: {sorted(entry)}")

    def _tell(self, message: dict) -> None:
        try:
            self.sock.settimeout(1.0)
            self.channel.send(message)
        except OSError:
            pass  # it has gone: its part stays where it is all the same


def _write(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _why(exc: BaseException, state: str) -> str:
    if isinstance(exc, (EOFError, ConnectionError)):  # (closed, or reset: a killed agent's unread bytes)
        return ("its connection closed before its part came (the host, or its agent, ended early)"
                if state == "registered" else "its connection closed in the handshake")
    if isinstance(exc, socket.timeout):
        return "no answer in time"
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    return str(exc)


class Listener:
    """record's end of the homecoming, for one recording: open() before CMD
    starts (its environment() goes into CMD's), end() once CMD has ended,
    then collect()."""

    def __init__(self, run_dir: Path, run_id: str, own_host: str, bound: list[socket.socket]):
        self.run_dir, self.run_id, self.own_host = Path(run_dir), run_id, safe_host(own_host)
        self.key = secrets.token_hex(32)
        self.sockets = bound
        self.addresses = ["%s:%d" % s.getsockname()[:2] for s in bound]
        self.hosts: list[_Host] = []
        self.names: dict[str, _Host] = {}
        self.lock = threading.Lock()
        self.merging = threading.Lock()
        self.ended_at: float | None = None
        self._stop_r, self._stop_w = os.pipe()
        self._accepting = threading.Thread(target=self._accept, name="writerprof-homecoming", daemon=True)
        quiet.blocking_all(self._accepting.start)

    @classmethod
    def open(cls, run_dir: Path, run_id: str, own_host: str) -> Listener | None:
        """A listener on this host's addresses (where CMD may reach other hosts:
        launchers.may_reach_other_hosts); None where it has none."""
        try:
            found = addresses()
        except OSError:  # no interfaces to read (a sandbox): no other host reaches this one
            return None
        bound = []
        for address in found:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.bind((address, 0))
                sock.listen(128)
            except OSError:  # an address that went away meanwhile
                sock.close()
                continue
            sock.setblocking(False)
            bound.append(sock)
        return cls(run_dir, run_id, own_host, bound) if bound else None

    def environment(self) -> dict:
        """CMD's variables that tell the agents where and how to send their parts."""
        return {HOMECOMING_ENV: ",".join(self.addresses), HOMECOMING_KEY_ENV: self.key}

    def _accept(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._stop_r, selectors.EVENT_READ)
            for sock in self.sockets:
                selector.register(sock, selectors.EVENT_READ)
            while True:
                for key, _ in selector.select():
                    if key.fileobj == self._stop_r:
                        return
                    self._take(key.fileobj)

    def _take(self, sock: socket.socket) -> bool:
        """The next connection waiting on sock, served in a thread of its own;
        False where none waits. Under the lock: once collect() has taken the
        lock, a connection accepted is among the hosts it waits for."""
        with self.lock:
            try:
                conn, _ = sock.accept()
            except OSError:  # (none waits: another thread took it, or it went before it was taken)
                return False
            conn.setblocking(True)
            host = _Host(self, conn)
            self.hosts.append(host)
        quiet.blocking_all(threading.Thread(target=host.serve, name="writerprof-homecoming-host", daemon=True).start)
        return True

    def reserve(self, host: _Host, name: str) -> None:
        with self.lock:
            if name == self.own_host or name in self.names:
                raise ProtocolError(f"host {name} has its part here already")
            self.names[name] = host

    def registered(self, host: _Host) -> None:
        """host is now waiting for CMD's end: told at once if CMD has ended."""
        with self.lock:
            host.state = "registered"
            if self.ended_at is not None:
                host.channel.send({"end": True})

    def end(self) -> None:
        """CMD has ended: every agent is told to send its part."""
        with self.lock:
            self.ended_at = time.monotonic()
            for host in self.hosts:
                if host.state == "registered":
                    try:
                        host.channel.send({"end": True})
                    except OSError:
                        pass  # its thread finds the connection gone

    def merge(self, staging: Path) -> None:
        """A received part (staging/hosts/HOST/) into the run directory, as `writerprof merge` would."""
        from writerprof.errors import UsageError
        from writerprof.run import merge

        with self.merging:
            try:
                merge.add_parts(merge.find_parts([self.run_dir, staging]))
            except UsageError as exc:
                raise ProtocolError(str(exc).replace(str(staging), "its part")) from None

    def collect(self) -> dict:
        """Every part that comes by DEADLINE_S after CMD's end, merged; what
        came and what did not, as run.json's "homecoming"."""
        if self.ended_at is None:
            self.end()
        called = time.monotonic()
        # An agent's starter dials record before it goes on (the probe's
        # agent.py): a connection made before CMD's end and not yet accepted
        # is a host to wait for, however late its agent speaks.
        for sock in self.sockets:
            while self._take(sock):
                pass
        deadline = self.ended_at + DEADLINE_S
        while True:
            with self.lock:
                waiting = [h for h in self.hosts if not h.done.is_set()]
            if not waiting or time.monotonic() >= deadline:
                break
            waiting[0].done.wait(max(0.0, deadline - time.monotonic()))
        os.write(self._stop_w, b"x")
        self._accepting.join()
        for sock in self.sockets:
            sock.close()
        with self.lock:
            late = [h for h in self.hosts if not h.done.is_set()]
        for host in late:  # past the deadline: its thread ends on the connection's end
            host.reason = f"its part did not come within {DEADLINE_S:.0f} s of CMD's end"
            try:
                host.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for host in late:
            host.done.wait()
        os.close(self._stop_r)
        os.close(self._stop_w)
        now = time.monotonic()
        return self._outcome(now - self.ended_at, now - called)

    def _outcome(self, waited_s: float, blocked_s: float) -> dict:
        named = [h for h in self.hosts if h.name is not None]
        return {
            "addresses": self.addresses,
            "home": {h.name: {"files": h.files, "bytes": h.bytes} for h in named if h.state == "home"},
            "shared": sorted(h.name for h in named if h.state == "shared"),
            "missing": {h.name: {"reason": h.reason, "part": h.run} for h in named if h.state == "missing"},
            "waited_s": round(waited_s, 3),  # from CMD's end to the last part merged
            "blocked_s": round(blocked_s, 3),  # of which record did nothing else
        }


def said(outcome: dict, run_dir: str) -> tuple[list[str], list[str]]:
    """What record says of the homecoming (run.json's "homecoming"): its notes,
    and its problems, a missing host's with where its part stays and the
    `writerprof merge` that brings it in."""
    import shlex

    from writerprof.units import format_size

    notes, problems = [], []
    home = outcome["home"]
    if home:
        notes.append(f"the part{'s' * (len(home) > 1)} of {', '.join(sorted(home))} came home "
                     f"({format_size(sum(h['bytes'] for h in home.values()))}, merged "
                     f"{outcome['waited_s']:.2f} s after CMD's end)")
    missing = outcome["missing"]
    for host, why in sorted(missing.items()):
        problems.append(f"host {host}'s part did not come home: {why['reason']}; it stays on {host} in "
                        f"{why['part']}")
    if missing:
        copies = [(f"{host}:{why['part']}", f"{host}-part") for host, why in sorted(missing.items())]
        problems.append("to merge it: " + " && ".join(f"scp -r {shlex.quote(a)} {shlex.quote(b)}" for a, b in copies)
                        + f" && writerprof merge {shlex.quote(run_dir)} "
                        + " ".join(shlex.quote(b) for _, b in copies) + f" -o {shlex.quote(run_dir + '-merged')}")
    return notes, problems
