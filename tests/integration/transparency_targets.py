"""Target programs for the transparency test (test_transparency.py), drawn by
hypothesis, on any CPython from 3.9 that pyenv has, with interpreter options
(-X dev, -W error, -X warn_default_encoding ...): children started every way
(multiprocessing's Process, Pool and ProcessPoolExecutor under fork,
forkserver and spawn; os.fork; a Python subprocess, with or without
LD_PRELOAD; a shell, posix_spawn, os.system, an fd passed on, stdout
redirected), fds closed (the standard ones, then written to; a range; the
limit lowered until EMFILE), signals (dispositions shown; handled, ignored,
blocked and sigwaited for; sent by the process itself, a thread or a child;
children killed, terminated and interrupted), threads, writes of every kind
(os.write, pwrite, writev, buffered and text files, mmap, numpy's tofile, a
shared-memory buffer copied out; fsync, fdatasync, fadvise), what the
runtime shows of itself (os functions pickled, their errors, threads), and
every way of ending (falling off, sys.exit, os._exit, an exception, a
signal, an exec).

Each is rendered to a Python source whose every output is the same from run
to run: children print one at a time or write their own files, never racing
on one stream; nothing printed holds a pid, a time or an address. So a run
under `writerprof record` can be compared with a plain one byte for byte.

Every process of a program (the main one, each child, each re-run of the
main module, an exec'd image) first appends "PID PROBED MAPPED NO_PRELOAD"
to the program's `witness` file beside it: whether the probe is loaded, the
interposer mapped, and LD_PRELOAD taken away by the program. The test reads
it, to know that the recorded run really was recorded; it is not compared."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

# The interpreters a program may name (test_probe_journal.INTERPRETERS' keys;
# one that is not there runs on the current one). numpy is the current one's only.
PYTHONS = ("current", "current", "current", "3.9", "3.10", "3.12", "3.13")
OPTIONS = (("-X", "warn_default_encoding"), ("-X", "dev"), ("-W", "error"), ("-B",), ("-u",), ("-OO",))
METHODS = ("fork", "forkserver", "spawn")
SIZES = (0, 1, 100, 4096, 65537)
SYNCS = ("", "", "fsync", "fdatasync", "fadvise")
WRITE_KINDS = ("write", "pwrite", "writev", "truncate", "mmap", "buffered", "append", "text", "text_default",
               "shared_memory")

# The helpers every program carries: the witness, the writes, what it shows of its signals.
PRELUDE = r'''import errno
import os
import signal
import subprocess
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
_PATTERN = bytes(range(256))
_got = []  # the signals this process's handler caught, in order


def _witness():
    with open("/proc/self/maps", "rb") as maps:
        mapped = b"libwriterprof_io" in maps.read()
    line = "%d %d %d %d\n" % (os.getpid(), "writerprof_probe" in sys.modules, mapped,
                              "TRANSPARENCY_NO_PRELOAD" in os.environ)
    fd = os.open(os.path.join(_HERE, "witness"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _data(size, salt):
    rotated = _PATTERN[salt % 256:] + _PATTERN[:salt % 256]
    return rotated * (size // 256) + rotated[:size % 256]


def _sync(fd, how):
    if how == "fsync":
        os.fsync(fd)
    elif how == "fdatasync":
        os.fdatasync(fd)
    elif how == "fadvise":
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)


def _write(name, kind, size, sync, salt):
    data = _data(size, salt)
    if kind in ("write", "pwrite", "writev", "truncate", "mmap"):
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            if kind in ("write", "truncate"):
                os.write(fd, data)
            elif kind == "pwrite":
                os.pwrite(fd, data, 3000)
                os.pwrite(fd, data[:7], 0)
            elif kind == "writev":
                os.writev(fd, [data[:size // 3], b"", data[size // 3:]])
            else:
                import mmap
                os.ftruncate(fd, size + 1)
                with mmap.mmap(fd, size + 1) as mapped:
                    mapped[1:] = data
                    mapped.flush()
            if kind == "truncate":
                os.ftruncate(fd, size // 3)
            _sync(fd, sync)
        finally:
            os.close(fd)
    elif kind in ("buffered", "append"):
        with open(name, "ab" if kind == "append" else "wb") as f:
            f.write(data)
            if kind == "append":
                f.write(data[::-1])
            f.flush()
            _sync(f.fileno(), sync)
    elif kind == "text":
        with open(name, "w", encoding="utf-8") as f:
            f.write(data.decode("latin-1"))
    elif kind == "text_default":  # the target's own EncodingWarning under -X warn_default_encoding
        with open(name, "w") as f:
            f.write(data.hex())
    elif kind == "numpy":
        # OpenBLAS's threads block no signal: one blocked in main and sigwaited for could end there.
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        import numpy
        numpy.frombuffer(data, dtype=numpy.uint8).tofile(name)
    elif kind == "shared_memory":
        from multiprocessing import shared_memory
        shm = shared_memory.SharedMemory(create=True, size=size + 1)
        try:
            shm.buf[:size] = data
            with open(name, "wb") as f:
                f.write(bytes(shm.buf[:size]))
        finally:
            shm.close()
            shm.unlink()


def _signal_name(number):
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(int(number))


def _handler_name(handler):
    if handler is None:
        return "None"
    if isinstance(handler, int):
        return signal.Handlers(handler).name
    return getattr(handler, "__qualname__", type(handler).__name__)


def _show_signals(who):
    shown = ["%s=%s" % (name, _handler_name(signal.getsignal(getattr(signal, name))))
             for name in ("SIGTERM", "SIGHUP", "SIGINT", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGCHLD",
                          "SIGPIPE", "SIGALRM", "SIGXFSZ")]
    blocked = sorted(map(_signal_name, signal.pthread_sigmask(signal.SIG_BLOCK, [])))
    pending = sorted(map(_signal_name, signal.sigpending()))
    print(who, " ".join(shown), "blocked", blocked, "pending", pending, flush=True)


def _on_signal(signum, frame):
    _got.append(_signal_name(signum))


def _exit_on_signal(signum, frame):
    sys.exit(64 + signum)


def _settled():
    # Whether the threads that ended are gone: one joined moments ago (a pool's too) may still be
    # in its exit, where the kernel counts it (3.12's multi-threaded fork warning) and can hand it
    # a signal sent to the process. Any other thread left must block every signal this sends.
    import threading
    alive = {str(t.native_id) for t in threading.enumerate()}
    sent = sum(1 << (getattr(signal, name) - 1) for name in ("SIGTERM", "SIGHUP", "SIGINT", "SIGUSR1",
                                                                "SIGUSR2", "SIGALRM", "SIGCHLD"))
    for task in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/status" % task, "rb") as f:
                blocked = [int(line.split()[1], 16) for line in f if line.startswith(b"SigBlk:")]
        except (FileNotFoundError, ProcessLookupError):  # ended meanwhile: before the open, or during the read
            continue
        if task not in alive and blocked and blocked[0] & sent != sent:
            return False
    return True


def _settle():
    _wait_for(_settled, "ended threads to be gone")


def _wait_for(done, what):
    # A handler runs in the main thread at the interpreter's next check, not at once.
    deadline = time.monotonic() + 60
    while not done():
        if time.monotonic() > deadline:
            sys.exit("no %s in 60 s" % what)
        time.sleep(0.001)


def _ready_then_wait(conn):
    # Tell the parent this child is ready for its signal, then wait for it: the parent never answers.
    if conn is None:  # a subprocess: its stdout and stdin are pipes from the parent
        print("ready", flush=True)
        sys.stdin.read()
    elif isinstance(conn, tuple):  # os.fork: a pipe each way
        os.write(conn[1], b"r")
        os.read(conn[0], 1)
    else:
        conn.send("ready")
        conn.recv()


def _run_forked(child, i, conn):
    # What multiprocessing does in its fork child, without flushing what the parent had buffered.
    code = 0
    try:
        child(i, conn)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) or exc.code is None else 1
        if not isinstance(exc.code, int) and exc.code is not None:
            print(exc.code, file=sys.stderr, flush=True)
    except BaseException:
        import traceback
        traceback.print_exc()
        code = 1
    finally:
        sys.stderr.flush()
        os._exit(code or 0)


def _run_subprocess(child, i, sig, no_preload):
    # The child is this program again, with this interpreter's options; what it printed, printed after it.
    # no_preload: as a launcher that keeps preloads from its children does (the witness is told).
    argv = [sys.executable] + subprocess._args_from_interpreter_flags() + [__file__, child, str(i)]
    env = None
    if no_preload:
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        env["TRANSPARENCY_NO_PRELOAD"] = "1"
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as proc:
        lines = []
        if sig is not None:
            while True:
                line = proc.stdout.readline()
                if line in (b"ready\n", b""):
                    break
                lines.append(line)
            proc.send_signal(sig)
        lines.append(proc.stdout.read())
        proc.wait()
    print(child, i, "exit", proc.returncode, b"".join(lines).decode("utf-8", "backslashreplace"))


def _exec_tail(i, conn=None):
    # The ending "exec": this program's image replaced by the interpreter running this.
    print("exec'd", i, flush=True)
    _write("exec_tail.bin", "write", 100, "fsync", i)
    sys.exit(2)


def _closed_std(fds, keep):
    sys.stdout.flush()
    sys.stderr.flush()
    for fd in fds:
        os.close(fd)
    outcomes = []
    for fd in fds:
        try:
            os.write(fd, b"written to a closed fd\n")
            outcomes.append("%d written" % fd)
        except OSError as exc:
            outcomes.append("%d %s" % (fd, errno.errorcode[exc.errno]))
    fd = os.open("after_close.txt", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, ("\n".join(outcomes + ["reopened as %d" % fd]) + "\n").encode())
    if not keep:
        os.close(fd)
    _std_on_devnull()


def _std_on_devnull():
    # /dev/null wherever 0, 1 or 2 is still closed, as a daemon does: else a pipe made later takes
    # one of them, and a multiprocessing pool can hang on it (plainly too).
    while True:
        fd = os.open(os.devnull, os.O_RDWR)
        if fd > 2:
            os.close(fd)
            return


def _fds_until_emfile(limit):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    opened = []
    try:
        while True:
            opened.append(os.open(os.devnull, os.O_RDONLY))
    except OSError as exc:
        outcome = errno.errorcode[exc.errno]
    finally:
        for fd in opened:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    print("fds until", outcome, len(opened), opened[:3])


def _introspect():
    import pickle
    for fn in (os.write, os.pwrite, os._exit, os.fsync, os.close, os.open, os.dup2):
        try:
            same = pickle.loads(pickle.dumps(fn)) is fn
        except Exception as exc:
            same = type(exc).__name__
        print(fn.__module__, fn.__qualname__, same, flush=True)
    for call in (lambda: os.write(fd=1, data=b""), lambda: os.pwrite(1, b"", offset=0), lambda: os.write(1),
                 lambda: os.fsync("x"), lambda: os.write(-1, b"x"), lambda: os.close(-1)):
        try:
            call()
        except Exception as exc:
            print(type(exc).__name__, exc, flush=True)


def _show_runtime(who):
    import gc
    import threading
    import warnings
    print(who, threading.active_count(), [t.name for t in threading.enumerate()], sys.getrecursionlimit(),
          sys.getswitchinterval(), gc.isenabled(), gc.get_threshold(), len(warnings.filters), os.umask(0o22),
          sys.getprofile(), sys.gettrace(), sys.stdout.line_buffering, sys.flags.dev_mode, flush=True)


def _reopened(name):
    # The lowest fd free now, said in a file of its own (stdout may be one of those closed).
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b"reopened as %d\n" % fd)
    os.close(fd)
'''

# Signals a child can be sent, and what it does with each: dies of it
# (default), exits with 64+N from a handler (exit), or catches the
# KeyboardInterrupt (SIGINT's default) and exits 5.
SENT_TO_CHILD = (("SIGTERM", "default"), ("SIGTERM", "exit"), ("SIGKILL", "default"), ("SIGINT", "default"),
                 ("SIGUSR1", "exit"), ("SIGHUP", "default"), ("SIGUSR1", "default"))
SELF_KILLS = ("SIGTERM", "SIGKILL", "SIGUSR1", "SIGHUP", "SIGINT")
HANDLED = ("SIGUSR1", "SIGUSR2", "SIGTERM", "SIGHUP", "SIGINT", "SIGALRM")
CHILD_ENDINGS = ("return", "exit", "exit_message", "os_exit", "raise", "kill_self", "signaled")
TASK_ENDINGS = ("return", "raise")


class Source:
    """A program being rendered: its module-level functions, main()'s lines,
    and the signals main() left with a disposition of its own (a forked
    child that must die of one of them sets the default first)."""

    def __init__(self):
        self.functions: list[str] = []
        self.main: list[str] = []
        self.changed: set[str] = set()
        self.count = 0

    def name(self, prefix: str) -> str:
        self.count += 1
        return "%s_%d" % (prefix, self.count)

    def line(self, text: str, indent: int = 1):
        self.main.append("    " * indent + text)


@dataclass(frozen=True)
class Write:
    kind: str
    size: int
    sync: str

    def call(self, name: str, salt: int) -> str:
        return "_write(%s, %r, %d, %r, %d)" % (name, self.kind, self.size, self.sync, salt)


def _default_of(sig: str) -> str:
    return "signal.default_int_handler" if sig == "SIGINT" else "signal.SIG_DFL"


@dataclass(frozen=True)
class Writes:
    writes: tuple[Write, ...]

    def render(self, src: Source):
        tag = src.name("w")
        for j, write in enumerate(self.writes):
            src.line(write.call(repr("%s_%d.bin" % (tag, j)), src.count + j))


@dataclass(frozen=True)
class Output:
    how: str  # print, stderr, raw (os.write to fd 1), many (lines past a pipe's buffer), partial (no newline)

    def render(self, src: Source):
        tag = src.name("out")
        src.line({
            "print": "print(%r, 'to stdout')" % tag,
            "stderr": "print(%r, 'to stderr', file=sys.stderr)" % tag,
            "raw": "os.write(1, b'%s raw to fd 1\\n')" % tag,
            "many": "print('\\n'.join('%s line %%d' %% n for n in range(3000)))" % tag,
            "partial": "sys.stdout.write(%r)" % (tag + " partial "),
        }[self.how])


@dataclass(frozen=True)
class ShowSignals:
    def render(self, src: Source):
        src.line("_show_signals(%r)" % src.name("signals"))


@dataclass(frozen=True)
class Handle:
    sig: str
    send: str  # raise_signal, kill, pthread_kill, thread
    restore: bool

    def render(self, src: Source):
        tag = src.name("handled")
        src.line("previous = signal.signal(signal.%s, _on_signal)" % self.sig)
        src.line("before = len(_got)")
        if self.send == "raise_signal":
            src.line("signal.raise_signal(signal.%s)" % self.sig)
        elif self.send == "kill":
            src.line("os.kill(os.getpid(), signal.%s)" % self.sig)
        elif self.send == "pthread_kill":
            src.line("import threading")
            src.line("signal.pthread_kill(threading.main_thread().ident, signal.%s)" % self.sig)
        else:
            src.line("import threading")
            src.line("sender = threading.Thread(target=os.kill, args=(os.getpid(), signal.%s))" % self.sig)
            src.line("sender.start()")
            src.line("sender.join()")
        src.line("_wait_for(lambda: len(_got) > before, %r)" % self.sig)
        src.line("print(%r, _got)" % tag)
        if self.restore:
            src.line("signal.signal(signal.%s, previous)" % self.sig)
            src.changed.discard(self.sig)
        else:
            src.changed.add(self.sig)


@dataclass(frozen=True)
class Ignore:
    sig: str

    def render(self, src: Source):
        tag = src.name("ignored")
        src.line("previous = signal.signal(signal.%s, signal.SIG_IGN)" % self.sig)
        src.line("os.kill(os.getpid(), signal.%s)" % self.sig)
        src.line("print(%r, %r, _handler_name(signal.getsignal(signal.%s)))" % (tag, self.sig, self.sig))
        src.line("signal.signal(signal.%s, previous)" % self.sig)


@dataclass(frozen=True)
class Sigwait:
    """The checkpoint signal of a batch job (Slurm's --signal=USR1@N): blocked,
    sent, then collected with sigwait."""
    sig: str
    sender: str  # self, thread, subprocess
    show_pending: bool

    def render(self, src: Source):
        tag = src.name("sigwait")
        src.line("signal.pthread_sigmask(signal.SIG_BLOCK, {signal.%s})" % self.sig)
        src.line("_settle()")
        if self.sender == "self":
            src.line("os.kill(os.getpid(), signal.%s)" % self.sig)
        elif self.sender == "thread":
            src.line("import threading")
            src.line("sender = threading.Thread(target=os.kill, args=(os.getpid(), signal.%s))" % self.sig)
            src.line("sender.start()")
            src.line("sender.join()")
        else:
            src.line("subprocess.run([sys.executable, '-c', 'import os, signal; os.kill(os.getppid(), signal.%s)'],"
                     " check=True)" % self.sig)
        if self.show_pending:
            src.line("print(%r, 'pending', sorted(map(_signal_name, signal.sigpending())))" % tag)
        src.line("print(%r, _signal_name(signal.sigwait({signal.%s})))" % (tag, self.sig))
        src.line("signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.%s})" % self.sig)


@dataclass(frozen=True)
class Threads:
    count: int
    writes: tuple[Write, ...]

    def render(self, src: Source):
        name = src.name("thread")
        body = ["def %s(i, results):" % name]
        for j, write in enumerate(self.writes):
            body.append("    " + write.call("'%s_%%d_%d.bin' %% i" % (name, j), src.count + j))
        body.append("    results[i] = '%s %%d wrote %d' %% i" % (name, len(self.writes)))
        src.functions.append("\n".join(body))
        src.line("import threading")
        src.line("results = [None] * %d" % self.count)
        src.line("threads = [threading.Thread(target=%s, args=(i, results)) for i in range(%d)]"
                 % (name, self.count))
        src.line("for thread in threads:")
        src.line("thread.start()", 2)
        src.line("for thread in threads:")
        src.line("thread.join()", 2)
        src.line("print(results)")


@dataclass(frozen=True)
class Children:
    api: str  # process, pool, executor, os_fork, subprocess
    method: str  # process, pool, executor: fork, forkserver or spawn
    count: int
    writes: tuple[Write, ...]
    prints: bool  # each child prints a line (process, os_fork, subprocess: one child at a time)
    show_signals: bool
    introspect: bool
    ending: str
    sig: str  # the signal of a kill_self or signaled ending
    disposition: str  # a signaled ending's: default or exit
    with_block: bool  # pool, executor: a with block (a Pool's ends in terminate()) or close and join
    no_preload: bool  # subprocess: its environment without LD_PRELOAD

    def render(self, src: Source):
        name = src.name("child")
        inherits = self.api in ("os_fork", "pool", "executor") or self.method == "fork"
        body = ["def %s(i, conn=None):" % name, "    _witness()"]
        if self.ending == "kill_self" or (self.ending == "signaled" and self.disposition == "default"):
            if inherits and self.sig in src.changed:  # the parent's handler would catch it
                body.append("    signal.signal(signal.%s, %s)" % (self.sig, _default_of(self.sig)))
        if self.ending == "signaled" and self.disposition == "exit":
            body.append("    signal.signal(signal.%s, _exit_on_signal)" % self.sig)
        if self.show_signals:
            body.append("    _show_signals('%s %%d' %% i)" % name)
        if self.introspect:
            body.append("    _introspect()")
        for j, write in enumerate(self.writes):
            body.append("    " + write.call("'%s_%%d_%d.bin' %% i" % (name, j), src.count + j))
        if self.prints:
            body.append("    print(%r, i, 'wrote', %d, flush=True)" % (name, len(self.writes)))
        body += ["    " + line for line in self._ending(name)]
        src.functions.append("\n".join(body))
        getattr(self, "_render_" + self.api)(src, name)

    def _ending(self, name: str) -> list[str]:
        if self.api in ("pool", "executor"):
            raising = ["if i == %d:" % (self.count - 1), "    raise RuntimeError('%s %%d' %% i)" % name]
            return (raising if self.ending == "raise" else []) + ["return i * 10"]
        return {
            "return": [],
            "exit": ["sys.exit(3)"],
            "exit_message": ["sys.exit('%s %%d failed' %% i)" % name],
            "os_exit": ["os._exit(4)"],
            "raise": ["raise RuntimeError('%s %%d' %% i)" % name],
            "kill_self": ["signal.raise_signal(signal.%s)" % self.sig, "time.sleep(60)"],
            "signaled": (["try:", "    _ready_then_wait(conn)", "except KeyboardInterrupt:", "    sys.exit(5)"]
                         if self.sig == "SIGINT" else ["_ready_then_wait(conn)"]),
        }[self.ending]

    @property
    def _signaled(self) -> bool:
        return self.ending == "signaled"

    def _send(self, pid: str) -> str:
        return "os.kill(%s, signal.%s)" % (pid, self.sig)

    def _render_process(self, src: Source, name: str):
        src.line("import multiprocessing")
        src.line("ctx = multiprocessing.get_context(%r)" % self.method)
        src.line("for i in range(%d):" % self.count)
        if self._signaled:
            src.line("ours, theirs = ctx.Pipe()", 2)
        src.line("child = ctx.Process(target=%s, args=(i, %s))" % (name, "theirs" if self._signaled else "None"), 2)
        if self.method == "fork":
            src.line("_settle()", 2)
        src.line("child.start()", 2)
        if self._signaled:
            src.line("theirs.close()", 2)  # a child that dies before it is ready: EOFError, not a hang
            src.line("ours.recv()", 2)
            sends = {"SIGTERM": "child.terminate()", "SIGKILL": "child.kill()"}
            src.line(sends.get(self.sig, self._send("child.pid")), 2)
        src.line("child.join()", 2)
        src.line("print(%r, i, 'exitcode', child.exitcode)" % name, 2)
        if self._signaled:
            src.line("ours.close()", 2)

    def _render_os_fork(self, src: Source, name: str):
        src.line("for i in range(%d):" % self.count)
        if self._signaled:
            src.line("ready_r, ready_w = os.pipe()", 2)
            src.line("wait_r, wait_w = os.pipe()", 2)
        src.line("_settle()", 2)
        src.line("pid = os.fork()", 2)
        src.line("if pid == 0:", 2)
        src.line("_run_forked(%s, i, %s)" % (name, "(wait_r, ready_w)" if self._signaled else "None"), 3)
        if self._signaled:
            src.line("os.close(ready_w)", 2)
            src.line("os.close(wait_r)", 2)
            src.line("os.read(ready_r, 1)", 2)
            src.line(self._send("pid"), 2)
        src.line("print(%r, i, 'exit', os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))" % name, 2)
        if self._signaled:
            src.line("os.close(ready_r)", 2)
            src.line("os.close(wait_w)", 2)

    def _render_subprocess(self, src: Source, name: str):
        src.line("for i in range(%d):" % self.count)
        src.line("_run_subprocess(%r, i, %s, %r)" % (name, "signal.%s" % self.sig if self._signaled else "None",
                                                     self.no_preload), 2)

    def _render_pool(self, src: Source, name: str):
        src.line("import multiprocessing")
        src.line("ctx = multiprocessing.get_context(%r)" % self.method)
        src.line("sys.stdout.flush()")  # else each forked worker that exits flushes its copy too
        if self.with_block and "SIGTERM" in src.changed and self.method == "fork":
            src.line("signal.signal(signal.SIGTERM, signal.SIG_DFL)")  # terminate()'s, for the workers
            src.changed.discard("SIGTERM")
        self._pooled(src, name, "ctx.Pool(2)", "pool.map(%s, range(%d))" % (name, self.count),
                     ("pool.close()", "pool.join()"))

    def _render_executor(self, src: Source, name: str):
        src.line("import concurrent.futures, multiprocessing")
        src.line("ctx = multiprocessing.get_context(%r)" % self.method)
        src.line("sys.stdout.flush()")
        self._pooled(src, name, "concurrent.futures.ProcessPoolExecutor(2, mp_context=ctx)",
                     "list(pool.map(%s, range(%d)))" % (name, self.count), ("pool.shutdown()",))

    def _pooled(self, src: Source, name: str, make: str, call: str, end: tuple[str, ...]):
        if self.method == "fork":
            src.line("_settle()")
        indent = 1
        if self.with_block:
            src.line("with %s as pool:" % make)
            indent = 2
        else:
            src.line("pool = %s" % make)
        src.line("try:", indent)
        src.line("print(%r, %s)" % (name, call), indent + 1)
        src.line("except Exception as exc:", indent)
        src.line("print(%r, type(exc).__name__, exc)" % name, indent + 1)
        if not self.with_block:
            for line in end:
                src.line(line)
        # Its semaphores released now: a process that ends by os._exit or a signal
        # would leave them to the resource tracker, which names them (randomly) on stderr.
        src.line("del pool")
        src.line("import gc")
        src.line("gc.collect()")


@dataclass(frozen=True)
class CloseStd:
    fds: tuple[int, ...]
    keep: bool  # the file opened after keeps the lowest number (so print() lands in it, if that was 1)

    def render(self, src: Source):
        src.line("_closed_std(%r, %r)" % (self.fds, self.keep))


@dataclass(frozen=True)
class CloseRange:
    low: int
    high: int

    def render(self, src: Source):
        src.line("os.closerange(%d, %d)" % (self.low, self.high))
        src.line("_reopened(%r)" % (src.name("closerange") + ".txt"))
        if self.low < 3:
            src.line("_std_on_devnull()")


@dataclass(frozen=True)
class FdNumbers:
    count: int

    def render(self, src: Source):
        tag = src.name("fds")
        src.line("fds = [os.open('%s_%%d.bin' %% n, os.O_WRONLY | os.O_CREAT, 0o644) for n in range(%d)]"
                 % (tag, self.count))
        src.line("print(%r, fds)" % tag)
        src.line("for fd in fds:")
        src.line("os.close(fd)", 2)


@dataclass(frozen=True)
class FdLimit:
    limit: int

    def render(self, src: Source):
        src.line("_fds_until_emfile(%d)" % self.limit)


@dataclass(frozen=True)
class Introspect:
    def render(self, src: Source):
        src.line("_introspect()")


@dataclass(frozen=True)
class AtExit:
    def render(self, src: Source):
        src.line("import atexit")
        src.line("atexit.register(print, %r, 'at exit')" % src.name("atexit"))


@dataclass(frozen=True)
class Shell:
    """Not Python: a shell's own writes, a file copied, dd, awk's stdio, a shell that kills itself."""
    script: str

    def render(self, src: Source):
        tag = src.name("shell")
        src.line("done = subprocess.run(['sh', '-c', %r], stdout=subprocess.PIPE)" % self.script.replace("TAG", tag))
        src.line("print(%r, done.returncode, done.stdout)" % tag)


SHELL_SCRIPTS = (
    "printf 'TAG %s\\n' written > TAG.txt; cat TAG.txt; exit 3",
    "dd if=/dev/zero of=TAG.bin bs=4096 count=3 status=none && sync TAG.bin; cp TAG.bin TAG.copy; wc -c < TAG.copy",
    "awk 'BEGIN { printf \"TAG awk\\n\" > \"TAG.awk\"; print \"TAG to stdout\"; exit 2 }'",
    "echo TAG; kill -TERM $$; echo never",
)


@dataclass(frozen=True)
class Spawn:
    """A child started another way, sharing the parent's fds: an fd passed to a
    shell (subprocess's vfork), os.posix_spawn, os.system, stdout redirected
    into a file with dup2 around them."""
    how: str  # pass_fds, posix_spawn, system, redirect

    def render(self, src: Source):
        tag = src.name("spawn")
        src.line("sys.stdout.flush()")
        if self.how == "pass_fds":
            src.line("fd = os.open('%s.txt', os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)" % tag)
            src.line("os.write(fd, b'parent before\\n')")
            src.line("done = subprocess.run(['sh', '-c', 'echo child >&%d; exit 7' % fd], pass_fds=[fd])")
            src.line("os.write(fd, b'parent after\\n')")
            src.line("os.close(fd)")
            src.line("print(%r, done.returncode)" % tag)
        elif self.how == "posix_spawn":
            src.line("pid = os.posix_spawn('/bin/sh', ['sh', '-c', 'echo %s; echo %s > %s.txt; exit 5'], os.environ)"
                     % (tag, tag, tag))
            src.line("print(%r, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))" % tag)
        elif self.how == "system":
            src.line("print(%r, os.system('echo %s from system; exit 6'))" % (tag, tag))
        else:
            src.line("saved = os.dup(1)")
            src.line("fd = os.open('%s.txt', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)" % tag)
            src.line("os.dup2(fd, 1)")
            src.line("os.close(fd)")
            src.line("print(%r, 'into the file', flush=True)" % tag)
            src.line("os.system('echo %s shell into the file')" % tag)
            src.line("os.dup2(saved, 1)")
            src.line("os.close(saved)")
            src.line("print(%r, 'back to stdout')" % tag)


@dataclass(frozen=True)
class ShowRuntime:
    def render(self, src: Source):
        src.line("_show_runtime(%r)" % src.name("runtime"))


@dataclass(frozen=True)
class Ending:
    how: str  # fall_off, exit, exit_message, os_exit, raise, kill_self, exec
    code: int
    sig: str
    idle_daemon: bool  # a daemon thread still waiting when the process ends

    def render(self, src: Source):
        if self.idle_daemon:
            src.line("import threading")
            src.line("threading.Thread(target=threading.Event().wait, daemon=True).start()")
        if self.how == "kill_self" and self.sig in src.changed:
            src.line("signal.signal(signal.%s, %s)" % (self.sig, _default_of(self.sig)))
        src.main += ["    " + line for line in {
            "fall_off": ["print('the end')"],
            "exit": ["sys.exit(%d)" % self.code],
            "exit_message": ["sys.exit('main failed')"],
            "os_exit": ["print('lost: never flushed')", "os._exit(%d)" % self.code],
            "raise": ["raise RuntimeError('main')"],
            "kill_self": ["signal.raise_signal(signal.%s)" % self.sig, "time.sleep(60)"],
            "exec": ["print('lost: buffered at the exec')",
                     "os.execv(sys.executable, [sys.executable] + subprocess._args_from_interpreter_flags()"
                     " + [__file__, '_exec_tail', '%d'])" % self.code],
        }[self.how]]


@dataclass(frozen=True)
class Program:
    python: str
    options: tuple[str, ...]
    steps: tuple
    ending: Ending

    def source(self) -> str:
        src = Source()
        for step in self.steps:
            step.render(src)
        self.ending.render(src)
        return "\n\n\n".join([
            PRELUDE.rstrip(),
            "_witness()",
            *src.functions,
            "def main():\n" + "\n".join(src.main),
            "if __name__ == '__main__':\n"
            "    if len(sys.argv) > 1:  # a subprocess child: run that child\n"
            "        globals()[sys.argv[1]](int(sys.argv[2]))\n"
            "    else:\n"
            "        main()",
        ]) + "\n"


# What writes that run at once (in threads, pool workers) leave out: an
# EncodingWarning (two at once under -W error: two tracebacks, in either
# order); in threads, a shared-memory buffer too (its resource tracker's fd,
# once the target closed it, is raced for).
NOT_IN_POOLS = ("text_default",)
NOT_IN_THREADS = ("text_default", "shared_memory")


def _writes(python: str, leave_out: tuple[str, ...] = ()):
    kinds = tuple(k for k in WRITE_KINDS + (("numpy",) if python == "current" else ()) if k not in leave_out)
    return st.lists(st.builds(Write, st.sampled_from(kinds), st.sampled_from(SIZES), st.sampled_from(SYNCS)),
                    min_size=1, max_size=3).map(tuple)


@st.composite
def _children(draw, python: str):
    api = draw(st.sampled_from(("process", "process", "pool", "executor", "os_fork", "subprocess")))
    pooled = api in ("pool", "executor")
    ending = draw(st.sampled_from(TASK_ENDINGS if pooled else CHILD_ENDINGS))
    sig, disposition = draw(st.sampled_from(SENT_TO_CHILD)) if ending == "signaled" else (
        draw(st.sampled_from(SELF_KILLS)), "default")
    return Children(
        api=api, method=draw(st.sampled_from(METHODS)), count=draw(st.integers(1, 3)),
        writes=draw(_writes(python, NOT_IN_POOLS if pooled else ())),
        prints=not pooled and draw(st.booleans()), show_signals=not pooled and draw(st.booleans()),
        introspect=not pooled and draw(st.booleans()),
        ending=ending, sig=sig, disposition=disposition, with_block=draw(st.booleans()),
        no_preload=api == "subprocess" and draw(st.booleans()),
    )


def _steps(python: str):
    children = _children(python)
    return st.one_of(
        _writes(python).map(Writes),
        st.builds(Output, st.sampled_from(("print", "stderr", "raw", "many", "partial"))),
        st.just(ShowSignals()),
        st.builds(Handle, st.sampled_from(HANDLED), st.sampled_from(("raise_signal", "kill", "pthread_kill", "thread")),
                  st.booleans()),
        st.builds(Ignore, st.sampled_from(("SIGUSR1", "SIGTERM", "SIGHUP", "SIGINT"))),
        st.builds(Sigwait, st.sampled_from(("SIGUSR1", "SIGUSR2", "SIGTERM", "SIGHUP")),
                  st.sampled_from(("self", "thread", "subprocess")), st.booleans()),
        st.builds(Threads, st.integers(1, 4), _writes(python, NOT_IN_THREADS)),
        children, children, children,
        st.builds(CloseStd, st.sampled_from(((0,), (1,), (2,), (1, 2), (0, 1, 2))), st.booleans()),
        st.builds(CloseRange, st.sampled_from((0, 3)), st.sampled_from((16, 1024, 65536))),
        st.builds(FdNumbers, st.integers(1, 4)),
        st.builds(FdLimit, st.sampled_from((16, 64))),
        st.just(Introspect()),
        st.just(AtExit()),
        st.builds(Shell, st.sampled_from(SHELL_SCRIPTS)),
        st.builds(Spawn, st.sampled_from(("pass_fds", "posix_spawn", "system", "redirect"))),
        st.just(ShowRuntime()),
    )


_endings = st.builds(
    Ending, st.sampled_from(("fall_off", "fall_off", "exit", "exit_message", "os_exit", "raise", "kill_self", "exec")),
    st.sampled_from((0, 1, 3)), st.sampled_from(SELF_KILLS), st.booleans())


@st.composite
def programs(draw):
    python = draw(st.sampled_from(PYTHONS))
    return Program(
        python=python,
        options=sum(draw(st.lists(st.sampled_from(OPTIONS), max_size=2, unique=True)), ()),
        steps=tuple(draw(st.lists(_steps(python), min_size=1, max_size=6))),
        ending=draw(_endings),
    )
