"""Generic writer hooks on the os module: os.write / pwrite / writev, fsync,
fdatasync, posix_fadvise, and close of a file that was written, timed for
regular files (and block devices) only: the pipes multiprocessing writes are
not checkpoint I/O."""

import os
import stat

from . import calls
from .calls import _indent, _shm_index_get
from .format import PHASES

# fd -> what the hooks know of it: NOT_FILE or FILE; and of those files, the
# ones with a timed write (whose close is timed too), in a set: a write's
# accept, pasted in its wrapper, is one `in` (a dict's get and a comparison
# cost ~15 ns more on 3.9). Forgotten when the fd is closed or reissued.
_fd_state = {}
_written_fds = set()
NOT_FILE, FILE = 0, 1
_fd_state_get = _fd_state.get


def _learn(fd):
    """An fd not seen yet: a regular file or a block device, or neither."""
    try:
        mode = os.fstat(fd).st_mode
    except (OSError, TypeError):
        return NOT_FILE  # not cached: a bad fd now may be a file later
    known = _fd_state[fd] = FILE if stat.S_ISREG(mode) or stat.S_ISBLK(mode) else NOT_FILE
    return known


def _accept_fd(args):
    if not args:
        return False
    fd = args[0] if type(args[0]) is int else _fd_of(args[0])
    known = _fd_state_get(fd)
    return (known if known is not None else _learn(fd)) != NOT_FILE


def _fd_of(arg):
    """os.fsync(f) and os.fdatasync(f) take a file object too (its fileno()):
    a writer's close() that flushes its open file that way is timed as well."""
    fileno = getattr(arg, "fileno", None)
    try:
        return fileno() if fileno is not None else None
    except Exception:  # closed, or not a file: the call itself will say so
        return None


def _written(fd):
    """os.write's accept for an fd not known yet as written to."""
    known = _fd_state_get(fd)
    if known is None:
        known = _learn(fd)
    if known == NOT_FILE:
        return False
    _written_fds.add(fd)
    return True


# Pasted in the write hooks: in the steady state of a writer, one lookup.
_accept_write = calls.inline(
    "_accept_write", globals(), "args and (args[0] in _written_fds or _written(args[0]))",
    names=("_written_fds", "_written"))


def _accept_close(args):
    if not args:
        return False
    written = args[0] in _written_fds
    _forget(args[0])
    return written


def _forget(fd):
    _fd_state.pop(fd, None)
    _written_fds.discard(fd)


_describe_write = calls.inline("_describe_write", globals(), "buffer, nbytes", """
    try:
        view = args[1]
    except IndexError:
        view = None
    # rather than type(view): ~25 ns less on 3.9; os.write takes buffers of C types, whose __class__ is their type
    if view.__class__ is memoryview:
%s    else:
        buffer = -1
    nbytes = -1 if result is None else result  # os.write's: an int, or None where it raised
""" % _indent(calls.VIEW_BUFFER, 8), names=("_shm_index_get",))


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

    return calls.disguised(wrapper, fn)


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
        calls.stand_in(os, name, calls.timed(fn, hook))
        hooks.append(hook)
        journal_hook(hook.name, "applied", None)
    for name, result_fds in _REISSUING.items():
        fn = getattr(os, name, None)
        if fn is not None:
            calls.stand_in(os, name, _reissuing(fn, result_fds))
    return hooks
