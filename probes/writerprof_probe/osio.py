"""Generic writer hooks on the os module: os.write / pwrite / writev, fsync,
fdatasync, posix_fadvise, and close of a file that was written, timed for
regular files (and block devices) only: the pipes multiprocessing writes are
not checkpoint I/O."""

import os
import stat

from . import calls
from .format import PHASES

_fd_is_file = {}  # fd -> bool, forgotten when the fd is closed or reissued
_written = set()  # fds with a timed write, whose close is timed too


def _is_file(fd):
    known = _fd_is_file.get(fd)
    if known is None:
        try:
            mode = os.fstat(fd).st_mode
        except (OSError, TypeError):
            return False
        known = _fd_is_file[fd] = stat.S_ISREG(mode) or stat.S_ISBLK(mode)
    return known


def _accept_fd(args):
    return bool(args) and _is_file(_fd_of(args[0]))


def _fd_of(arg):
    """os.fsync(f) and os.fdatasync(f) take a file object too (its fileno()):
    a writer's close() that flushes its open file that way is timed as well."""
    if type(arg) is int:
        return arg
    fileno = getattr(arg, "fileno", None)
    try:
        return fileno() if fileno is not None else None
    except Exception:  # closed, or not a file: the call itself will say so
        return None


def _accept_write(args):
    if args and _is_file(args[0]):
        _written.add(args[0])
        return True
    return False


def _accept_close(args):
    fd = args[0] if args else None
    _fd_is_file.pop(fd, None)
    if fd in _written:
        _written.discard(fd)
        return True
    return False


def _forget(fd):
    _fd_is_file.pop(fd, None)
    _written.discard(fd)


def _describe_write(args, result):
    return calls.buffer_of(args[1]) if len(args) > 1 else -1, result if type(result) is int else -1


def _describe_writev(args, result):
    buffers = args[1] if len(args) > 1 else ()
    first = buffers[0] if isinstance(buffers, (list, tuple)) and buffers else None
    return calls.buffer_of(first), result if type(result) is int else -1


def _describe_fadvise(args, result):
    return -1, args[2] if len(args) > 2 else -1


def _describe_none(args, result):
    return -1, -1


# name -> (phase, describe, accept)
_TIMED = {
    "write": ("write", _describe_write, _accept_write),
    "pwrite": ("write", _describe_write, _accept_write),
    "writev": ("write", _describe_writev, _accept_write),
    "fsync": ("fsync", _describe_none, _accept_fd),
    "fdatasync": ("fsync", _describe_none, _accept_fd),
    "posix_fadvise": ("fadvise", _describe_fadvise, _accept_fd),
    "close": ("close", _describe_none, _accept_close),
}


def _reissuing(fn, result_fds):
    """os.open/os.pipe/os.dup: a number they hand out is a new file."""

    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)
        try:
            for fd in result_fds(result, args):
                _forget(fd)
        except Exception:
            pass
        return result

    wrapper.__name__ = wrapper.__qualname__ = fn.__name__
    wrapper.__module__, wrapper.__doc__, wrapper.__wrapped__ = fn.__module__, fn.__doc__, fn
    return wrapper


_REISSUING = {
    "open": lambda fd, args: (fd,),
    "pipe": lambda fds, args: fds,
    "dup": lambda fd, args: (fd,),
    "dup2": lambda fd, args: (args[1],) if len(args) > 1 else (),
}


def install(journal_hook):
    """Wrap the os functions in place; `journal_hook(name, status, reason)`
    journals each outcome. Returns the hooks."""
    hooks = []
    for name, (phase, describe, accept) in _TIMED.items():
        fn = getattr(os, name, None)
        if fn is None:
            journal_hook("os:" + name, "unavailable", "not in this os module")
            continue
        hook = calls.Hook("os:%s=%s" % (name, phase), PHASES[phase], describe, accept)
        setattr(os, name, calls.timed(fn, hook))
        hooks.append(hook)
        journal_hook(hook.name, "applied", None)
    for name, result_fds in _REISSUING.items():
        fn = getattr(os, name, None)
        if fn is not None:
            setattr(os, name, _reissuing(fn, result_fds))
    return hooks
