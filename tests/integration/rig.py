"""Many hosts on this one machine, for the MPI launchers' multi-host tests:
each host a set of Linux namespaces of its own (its host name, boot id,
/tmp, /dev/shm, IPC and pid space, and a network namespace whose eth0 is
wired to the rig's switch, a bridge in a namespace of its own), and the
launcher's host one too (its host name and network, so that no test
touches this machine's; its files and pids are this machine's), with a
stand-in for ssh that starts a command on a host of the rig as sshd would:
in an environment as empty as a remote login's (only what the launcher
forwards reaches it), and outside the launcher's process tree. Host names
resolve through an /etc/hosts of the rig's own (bound over the real one in
each namespace).

Each namespace set is held by a process that reads a pipe of the rig's (its
"holder", which ends with the rig, or with the test process if that is killed); the rig
enters them with nsenter, reads a host's files through /proc/HOLDER/root,
and ends a host by killing every process in it but its holder, whose files
(the host's part of a run) then stay, as a crashed node's disk does."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

SUBNET = "10.251.0"  # inside the rig's own network namespaces only; the launcher's is .1
_SWITCH = "switch"  # a network namespace with a bridge that every host's eth0 is wired to
# The holders' set-up, then a read of the rig's pipe that holds the namespaces until the rig (or
# the test process, killed) closes it. $1: host name, $2: the rig's hosts
# file, $3: a file with the host's boot id (UCX and the like tell hosts apart by it). sysfs
# mounted anew shows the namespace's own network devices (UCX and hwloc read them there). A host
# other than the launcher's has its own /tmp (its node-local run directory and scratch) and
# /dev/shm; what must be in sight on every host (the rest of the arguments: the rig's directory
# with the stand-in for ssh, whose path the launchers' daemons check; the test's interpreter and
# this checkout, which a CI may have in /tmp) is kept at its place, through a tmpfs on /mnt.
_SWITCH_SETUP = "ip link add br0 type bridge && ip link set br0 up && echo ready && read _"
_COMMON_SETUP = ('hostname "$1" && mount --bind "$2" /etc/hosts && mount --bind "$3" /proc/sys/kernel/random/boot_id '
                 '&& mount -t sysfs sysfs /sys && ip link set lo up')
_LAUNCHER_SETUP = f"{_COMMON_SETUP} && echo ready && read _"
_HOST_SETUP = (f'{_COMMON_SETUP} && shift 3 && mount -t tmpfs tmpfs /mnt && '
               f'i=0 && for kept; do mkdir /mnt/$i && mount --bind "$kept" /mnt/$i && i=$((i + 1)); done && '
               f'mount -t tmpfs -o size=1g tmpfs /tmp && '
               f'i=0 && for kept; do mkdir -p "$kept" && mount --move /mnt/$i "$kept" && i=$((i + 1)); done && '
               f'mount -t tmpfs -o size=1g tmpfs /dev/shm && echo ready && read _')
# In sight on every host, whatever /tmp holds: this checkout and the interpreter running the tests.
_KEPT = [Path(__file__).resolve().parents[2], Path(sys.prefix).resolve()]

FAKE_SSH = """#!/bin/sh
# ssh [OPTIONS] HOST COMMAND...: COMMAND run by `sh -c` on HOST in an environment
# as empty as a remote login's, so that only what the launcher forwards reaches it.
# A host of the rig is entered with nsenter (its holder's pid below), in a session
# of its own out of the launcher's process tree, as sshd's is; a signal that ends
# this ssh hangs that session up. Any other host runs the command here.
while [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done
host=$1
shift
case "$host" in
{hosts}
*) exec env -i PATH="$PATH" HOME="$HOME" sh -c "$*";;
esac
told=$(mktemp -d)
mkfifo "$told/status"
setsid -f sh -c 'echo $$ > "$2/session"; nsenter -t "$1" -n -u -m -p --wd=/ -- env -i PATH="$PATH" HOME="$HOME" \\
    sh -c "$3"; echo $? > "$2/status"' session "$holder" "$told" "$*"
trap 'kill -HUP -- "-$(cat "$told/session")" 2>/dev/null; rm -rf "$told"; exit 255' HUP INT TERM
cat "$told/status" > "$told/code" &
wait $!
status=$(cat "$told/code")
rm -rf "$told"
exit "${{status:-255}}"
"""


def fake_ssh(path: Path, hosts: dict[str, int] | None = None) -> Path:
    """The stand-in for ssh at path: Open MPI's plm_rsh_agent (4.x) or
    plm_ssh_agent (5.x), Hydra's -launcher-exec. hosts: the rig's hosts (name
    -> holder pid); any other host name runs the command here."""
    cases = "".join(f"{name}) holder={pid};;\n" for name, pid in (hosts or {}).items())
    path.write_text(FAKE_SSH.format(hosts=cases))
    path.chmod(0o755)
    return path


def _needs_tools() -> None:
    missing = [tool for tool in ("unshare", "nsenter", "ip") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"the multi-host rig needs {', '.join(missing)} (util-linux, iproute2)")


class Rig:
    """The launcher's host and `hosts`, each in namespaces of its own; a
    context manager (the namespaces end with it)."""

    def __init__(self, work: Path, hosts: list[str], launcher: str = "node0"):
        self.work, self.launcher, self.names = Path(work), launcher, list(hosts)
        self.addresses = {name: f"{SUBNET}.{i + 1}" for i, name in enumerate([launcher, *hosts])}
        self.holders: dict[str, int] = {}  # host (the launcher's too) -> the pid holding its namespaces
        self._started: dict[str, subprocess.Popen] = {}  # host -> the unshare that made its namespaces
        self.ssh = self.work / "fake-ssh"

    def __enter__(self) -> Rig:
        _needs_tools()
        self.work.mkdir(parents=True, exist_ok=True)
        hosts_file = self.work / "hosts"
        hosts_file.write_text("127.0.0.1 localhost\n" + "".join(f"{a} {n}\n" for n, a in self.addresses.items()))
        try:
            self._hold(_SWITCH, ["unshare", "-n", "sh", "-c", _SWITCH_SETUP])
            for name in self.addresses:
                boot_id = self.work / f"boot_id-{name}"
                boot_id.write_text(f"{uuid.uuid4()}\n")
                own = ["-i", "-p", "-f", "--mount-proc", "sh", "-c", _HOST_SETUP] if name != self.launcher else [
                    "sh", "-c", _LAUNCHER_SETUP]
                self._hold(name, ["unshare", "-n", "-u", "-m", "--propagation", "private", *own, "rig", name,
                                  str(hosts_file), str(boot_id), str(self.work), *map(str, _KEPT)])
                self._wire(name)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        fake_ssh(self.ssh, {name: self.holders[name] for name in self.names})
        return self

    def _hold(self, name: str, command: list[str]) -> None:
        started = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        self._started[name] = started
        if started.stdout.readline().strip() != "ready":  # (an unshare that failed exits: EOF)
            started.wait()
            pytest.skip(f"cannot make the rig's namespaces for {name} here: {started.stderr.read().strip()}")
        # With a pid namespace, unshare forks: the holder is its child.
        children = Path(f"/proc/{started.pid}/task/{started.pid}/children").read_text().split()
        self.holders[name] = int(children[0]) if children else started.pid

    def _wire(self, name: str) -> None:
        """The host's eth0, with its address, a veth to the switch's bridge."""
        switch, holder = str(self.holders[_SWITCH]), str(self.holders[name])
        for command in (["nsenter", "-t", switch, "-n", "ip", "link", "add", name, "type", "veth", "peer", "name",
                         "eth0", "netns", holder],
                        ["nsenter", "-t", switch, "-n", "ip", "link", "set", name, "master", "br0", "up"],
                        ["nsenter", "-t", holder, "-n", "sh", "-c", f"ip addr add {self.addresses[name]}/24 dev "
                         f"eth0 && ip link set eth0 up"]):
            subprocess.run(command, check=True, capture_output=True, text=True)

    def run(self, command: list[str], env: dict | None = None, timeout: float = 300,
            cwd: Path | str = "/") -> subprocess.CompletedProcess:
        """command run on the launcher's host, to its end."""
        return subprocess.run(self.on_launcher(command), capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=cwd)

    def start(self, command: list[str], env: dict | None = None, cwd: Path | str = "/") -> subprocess.Popen:
        """command started on the launcher's host, its output piped."""
        return subprocess.Popen(self.on_launcher(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, cwd=cwd)

    def on_launcher(self, command: list[str]) -> list[str]:
        return ["nsenter", "-t", str(self.holders[self.launcher]), "-n", "-u", "-m", "--", *map(str, command)]

    def path(self, host: str, path: Path | str) -> Path:
        """A host's own file at path, as seen from here."""
        return Path(f"/proc/{self.holders[host]}/root") / Path(path).relative_to("/")

    def processes(self, host: str) -> list[int]:
        """The pids (as seen from here) of every running process of the host but
        its holder (the host's orphans stay zombies once dead: its holder reaps none)."""
        holder = self.holders[host]
        space = os.readlink(f"/proc/{holder}/ns/pid")
        found = []
        for entry in os.listdir("/proc"):
            try:
                if (entry.isdigit() and int(entry) != holder and os.readlink(f"/proc/{entry}/ns/pid") == space
                        and Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"):
                    found.append(int(entry))
            except (OSError, IndexError):  # gone meanwhile
                pass
        return found

    def kill(self, host: str) -> None:
        """The host crashes: every process of it killed at once (its holder
        kept: its files stay, as a crashed node's disk)."""
        while alive := self.processes(host):  # (one that forked as it was killed)
            for pid in alive:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)

    def __exit__(self, *exc) -> None:
        for name, started in reversed(self._started.items()):
            for pid in {started.pid, self.holders.get(name)} - {None}:
                try:
                    os.kill(pid, signal.SIGKILL)  # a pid namespace's holder: every process in it
                except ProcessLookupError:
                    pass
            started.wait()
            for pipe in (started.stdin, started.stdout, started.stderr):
                pipe.close()
