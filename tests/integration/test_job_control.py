"""`writerprof record` in an interactive shell's job control, through a real
pseudo-terminal: Ctrl-Z gives the prompt back and `fg` resumes CMD with the
terminal, a recording started with `&` can be brought to the foreground and
read from, and closing the terminal ends a stopped recording and its CMD,
as each does for CMD run plainly."""

from __future__ import annotations

import os
import pty
import select
import shlex
import signal
import sys
import time

import pytest

from writerprof.run import load

from helpers import writerprof_command

PROMPT = "PROMPT> "


class Shell:
    """An interactive bash on a new pseudo-terminal."""

    def __init__(self, cwd):
        self.pid, self.master = pty.fork()
        if self.pid == 0:
            try:
                os.chdir(cwd)
                os.execve("/bin/bash", ["bash", "--norc", "--noprofile", "-i"],
                          {**os.environ, "PS1": PROMPT, "TERM": "dumb"})
            finally:
                os._exit(127)
        self.out = ""
        self.transcript = ""  # all the terminal showed, for a failure's message

    def expect(self, text: str, timeout_s: float = 60) -> None:
        """Read until text shows (after what earlier expects consumed)."""
        deadline = time.monotonic() + timeout_s
        while text not in self.out:
            if time.monotonic() > deadline:
                raise AssertionError(f"no {text!r} after {timeout_s} s; the terminal showed:\n{self.transcript}")
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(self.master, 4096)
                except OSError:
                    data = b""
                if not data:
                    raise AssertionError(f"the terminal closed before {text!r}:\n{self.transcript}")
                text_read = data.decode(errors="replace").replace("\r\n", "\n")
                self.out += text_read
                self.transcript += text_read
        self.out = self.out.split(text, 1)[1]

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        try:
            os.close(self.master)
        except OSError:
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


@pytest.fixture
def shell(tmp_path):
    if not os.path.exists("/bin/bash"):
        pytest.skip("no /bin/bash for an interactive shell")
    sh = Shell(tmp_path)
    sh.expect(PROMPT)
    yield sh
    sh.close()


def _record(tmp_path, code: str) -> str:
    return shlex.join(writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--", sys.executable, "-c",
                                              code])


# Reads one line, then waits for Ctrl-C (short sleeps: a signal is handled between calls). The
# read is inside the try: a Ctrl-C sent as soon as "got" shows can come before the loop.
READS_THEN_WAITS = ("import os, time\nopen('cmd.pid', 'w').write(str(os.getpid()))\nprint('ready', flush=True)\n"
                    "try:\n    print('got', input(), flush=True)\n    while True:\n        time.sleep(0.05)\n"
                    "except KeyboardInterrupt:\n    print('interrupted', flush=True)\n    raise\n")


def _running_with_the_terminal(shell: Shell, cmd: int) -> None:
    """Wait until CMD (its group's leader) runs and its group has the terminal:
    what it is sent now is its to read, not the shell's."""
    deadline = time.monotonic() + 60
    while _state(cmd) == "T" or os.tcgetpgrp(shell.master) != cmd:
        assert time.monotonic() < deadline, (f"CMD {_state(cmd)}, the terminal's group {os.tcgetpgrp(shell.master)} "
                                             f"after 60 s; the terminal showed:\n{shell.transcript}")
        time.sleep(0.02)


def _state(pid: int) -> str:
    """Its state letter, "gone" once it is."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return "gone"


def test_ctrl_z_gives_the_prompt_back_and_fg_resumes_the_command(shell, tmp_path):
    shell.send(_record(tmp_path, READS_THEN_WAITS) + "\n")
    shell.expect("ready\n")
    shell.send("\x1a")  # Ctrl-Z
    shell.expect(PROMPT)  # the shell has its terminal back
    cmd = int((tmp_path / "cmd.pid").read_text())
    assert _state(cmd) == "T"
    shell.send("jobs\n")
    shell.expect("Stopped")
    shell.expect(PROMPT)
    shell.send("fg\n")
    _running_with_the_terminal(shell, cmd)
    shell.send("hello\n")  # read by CMD: it has the terminal again
    shell.expect("got hello\n")
    shell.send("\x03")  # Ctrl-C reaches CMD
    shell.expect("interrupted\n")
    shell.expect(PROMPT)
    shell.send("echo status=$?\n")
    shell.expect("status=130\n")
    assert shell.transcript.count("recording into") == 1, shell.transcript
    run = load(tmp_path / "run")
    assert run.complete and run.meta["signal"] == "SIGINT"


def test_a_recording_started_in_the_background_reads_the_terminal_after_fg(shell, tmp_path):
    code = "import os\nopen('cmd.pid', 'w').write(str(os.getpid()))\nprint('got', input(), flush=True)\n"
    shell.send(_record(tmp_path, code) + " &\n")
    shell.expect(PROMPT)
    deadline = time.monotonic() + 60
    while not (tmp_path / "cmd.pid").exists() or _state(int((tmp_path / "cmd.pid").read_text() or 0)) != "T":
        assert time.monotonic() < deadline, "CMD never stopped for reading the terminal in the background"
        time.sleep(0.05)
    # record stops in turn, and only once the shell has seen its job stopped
    # does `fg` continue it: `fg` of a job the shell still believes running
    # gives it the terminal and sends no SIGCONT (as for a person, who types
    # fg after the shell said "Stopped").
    while True:
        shell.send("jobs\n")
        try:
            shell.expect("Stopped", timeout_s=1)
            break
        except AssertionError:
            assert time.monotonic() < deadline, f"the shell never saw the recording stop:\n{shell.transcript}"
    shell.expect(PROMPT)
    shell.send("fg\n")
    _running_with_the_terminal(shell, int((tmp_path / "cmd.pid").read_text()))
    shell.send("hello\n")
    shell.expect("got hello\n")
    shell.expect(PROMPT)
    shell.send("echo status=$?\n")
    shell.expect("status=0\n")


def test_closing_the_terminal_ends_a_stopped_recording_and_its_command(shell, tmp_path):
    shell.send(_record(tmp_path, READS_THEN_WAITS) + "\n")
    shell.expect("ready\n")
    cmd = int((tmp_path / "cmd.pid").read_text())
    with open(f"/proc/{cmd}/stat") as f:
        record = int(f.read().rsplit(")", 1)[1].split()[2])
    shell.send("\x1a")
    shell.expect(PROMPT)
    os.close(shell.master)  # the terminal goes away: the shell hangs up its jobs
    deadline = time.monotonic() + 60
    while any(_state(pid) not in ("Z", "gone") for pid in (cmd, record)):
        assert time.monotonic() < deadline, f"still there after 60 s: CMD {_state(cmd)}, record {_state(record)}"
        time.sleep(0.05)
    run = load(tmp_path / "run")
    assert run.complete and run.meta["signal"] == "SIGHUP"


# CMD handles each signal by printing its name and ending well.
HANDLES = ("import signal, sys, time\n"
           "def handler(signum, frame):\n"
           "    print('got', signal.Signals(signum).name, flush=True)\n"
           "    sys.exit(0)\n"
           "for name in sys.argv[1:]:\n"
           "    signal.signal(getattr(signal, name), handler)\n"
           "print('ready', flush=True)\n"
           "while True:\n"
           "    time.sleep(0.05)\n")
PASSED_ON = ["SIGUSR1", "SIGUSR2", "SIGHUP", "SIGQUIT", "SIGALRM", "SIGWINCH", "SIGTERM", "SIGINT"]
PASSED_ON_SIGNALS = [getattr(signal, name) for name in PASSED_ON] + [signal.SIGCONT, signal.SIGTSTP]


def test_record_passes_every_signal_a_parent_would_on_to_the_command(tmp_path):
    """record as a transparent parent: a signal sent to it (scancel
    --signal=USR1 --batch, kill) reaches CMD, which decides what it means."""
    import subprocess

    for name in PASSED_ON:
        recorder = subprocess.Popen(writerprof_command() + ["record", "-o", str(tmp_path / name), "--",
                                                            sys.executable, "-c", HANDLES, *PASSED_ON],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert recorder.stdout.readline() == "ready\n"
        recorder.send_signal(getattr(signal, name))
        out, err = recorder.communicate(timeout=60)
        assert (recorder.returncode, out) == (0, f"got {name}\n"), err


def _blocked(pid: int, tid: int | None = None) -> set[int]:
    """The signals a thread (its process's main one: tid None) blocks, from /proc."""
    with open(f"/proc/{pid}/task/{tid or pid}/status") as f:
        mask = int(next(line for line in f if line.startswith("SigBlk:")).split()[1], 16)
    return {n for n in range(1, 65) if mask >> (n - 1) & 1}


def test_records_own_threads_leave_every_signal_to_its_main_thread(tmp_path):
    """A signal sent to record (Slurm's SIGCONT and then SIGTERM to a job's
    batch step) goes to its main thread, which passes it on and writes it
    into run.json: record's sampler and py-spy threads block every signal.
    One of them that took it would have Python only note it for the main
    thread, asleep in wait4 until CMD ends: under Slurm, the SIGKILL after
    KillWait came first, and run.json never said SIGTERM. The py-spys it
    starts block none of them: SIGINT has py-spy write what it has."""
    import subprocess

    recorder = subprocess.Popen(writerprof_command() + ["record", "--stacks-by", "py-spy", "-o", str(tmp_path / "run"),
                                                        "--", sys.executable, "-c", HANDLES, "SIGTERM"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert recorder.stdout.readline() == "ready\n"
        deadline = time.monotonic() + 60
        # Until the sampler, py-spy's watch and a py-spy have started, and record
        # waits for CMD: while it starts a thread its main thread blocks every
        # signal too (one that comes meanwhile stays pending, for it).
        while True:
            waiting = open(f"/proc/{recorder.pid}/wchan").read() == "do_wait"
            helpers = [int(t) for t in os.listdir(f"/proc/{recorder.pid}/task") if int(t) != recorder.pid]
            children = {int(c) for t in os.listdir(f"/proc/{recorder.pid}/task")
                        for c in open(f"/proc/{recorder.pid}/task/{t}/children").read().split()}
            spies = [c for c in children if os.path.basename(os.readlink(f"/proc/{c}/exe")).startswith("py-spy")]
            if len(helpers) >= 2 and spies and waiting:
                break
            assert time.monotonic() < deadline, (helpers, children, waiting)
            time.sleep(0.05)
        passed_on = {int(s) for s in PASSED_ON_SIGNALS}
        assert not passed_on & _blocked(recorder.pid)
        for tid in helpers:
            assert passed_on <= _blocked(recorder.pid, tid), tid
        for spy in spies:
            assert signal.SIGINT not in _blocked(spy)
    finally:
        recorder.send_signal(signal.SIGTERM)
        out, err = recorder.communicate(timeout=60)
    assert (recorder.returncode, out) == (0, "got SIGTERM\n"), err


def test_record_passes_signals_on_though_its_parent_blocked_them(tmp_path):
    """A launcher that starts record with SIGUSR1 blocked (a mask survives
    exec): record passes it on all the same, and CMD keeps the mask it was
    given, collecting the signal with sigwait."""
    import subprocess

    code = ("import signal\n"
            "print('ready', sorted(s.name for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])), flush=True)\n"
            "print('got', signal.Signals(signal.sigwait({signal.SIGUSR1})).name, flush=True)\n")
    recorder = subprocess.Popen(writerprof_command() + ["record", "-o", str(tmp_path / "run"), "--",
                                                        sys.executable, "-c", code],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1}))
    assert recorder.stdout.readline() == "ready ['SIGUSR1']\n"  # CMD's mask, as record's parent gave it
    recorder.send_signal(signal.SIGUSR1)
    out, err = recorder.communicate(timeout=60)
    assert (recorder.returncode, out) == (0, "got SIGUSR1\n"), err


def test_a_signal_record_came_with_ignored_stays_ignored_for_the_command(tmp_path):
    """`nohup writerprof record -- CMD`, or a background job of a shell
    without job control (SIGINT and SIGQUIT ignored): CMD comes with the same
    signals ignored as it does run plainly, and a SIGINT sent to record ends
    neither."""
    import subprocess

    code = ("import signal, sys\n"
            "print([signal.getsignal(s) == signal.SIG_IGN for s in (signal.SIGINT, signal.SIGQUIT, "
            "signal.SIGHUP, signal.SIGTERM)], flush=True)\n"
            "sys.stdin.readline()\n")
    ignored = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)

    def ignoring():
        for signum in ignored:
            signal.signal(signum, signal.SIG_IGN)

    seen = {}
    for how, prefix in (("plain", []), ("recorded", writerprof_command() + ["record", "-o", str(tmp_path / "run"),
                                                                             "--"])):
        child = subprocess.Popen(prefix + [sys.executable, "-c", code], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ignoring)
        seen[how] = child.stdout.readline()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate("\n", timeout=60)
        assert (child.returncode, out) == (0, ""), (how, err)
    assert seen["recorded"] == seen["plain"] == "[True, True, True, False]\n"
