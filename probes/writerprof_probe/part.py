"""A host's part of a recording, RUN/hosts/HOST/, is one recording's: it
carries that recording's id (format.RUN_ID_FILE, run.json's run_id) from the
moment it appears (made aside with it and renamed into place, so no process
ever finds a part without one). A process of a recording that finds another
recording's part there (a node-local run directory used again: this host's
RUN still holds an earlier recording's part) moves that part aside, whole,
to RUN/previous/ID/ (itself a part `writerprof merge` takes), then makes its
own: two recordings' journals never share a part. Of processes that do so
at once, one moves the old part and one makes the new; a rename never
replaces a part that is not empty.

record makes the launcher host's part so (writerprof.run.directory); the
interposer, which journals before the probe starts, takes the same steps in
C (probes/interposer/journal.c: own_part)."""

import os
import stat

from . import format, journal

_TRIES = 4  # another recording taking the part back each time: give up rather than mix
_claimed = None  # (run, host, run_id) once claimed here: a forked child inherits it


def claim(run, host, run_id):
    """Make RUN/hosts/HOST this recording's part, or find it so; an OSError
    where it cannot be (a read-only or full run directory, or another
    recording taking it back each time). Without a run id (a probe that
    `writerprof record` did not start) nothing is checked."""
    global _claimed
    if not run_id or _claimed == (run, host, run_id):
        return
    host_dir = os.path.join(run, format.HOSTS_DIR, format.safe_host(host))
    for _ in range(_TRIES):
        held = held_by(host_dir)
        if held is not None and held[0] == run_id:
            _claimed = (run, host, run_id)
            return
        if _make(run, host_dir, run_id):  # none there, or an empty directory, which the rename replaces
            _claimed = (run, host, run_id)
            return
        if held is not None:
            _move_aside(run, host_dir, *held)
    import errno  # (only here and below: not at every process's start-up)

    raise OSError(errno.EBUSY, "%s: another recording's part each time it was moved aside" % host_dir)


def held_by(host_dir):
    """(the recording id host_dir carries, "" for none; its inode), or None
    where there is no host_dir."""
    try:
        info = os.lstat(host_dir)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(info.st_mode):  # a link planted at its name, say: never followed, moved aside
        return "", info.st_ino
    try:
        fd = os.open(os.path.join(host_dir, format.RUN_ID_FILE), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # none (a part from before ids, or no part), or not a file: not this recording's
        return "", info.st_ino
    try:
        return os.read(fd, 256).decode("ascii", "replace").strip(), info.st_ino
    finally:
        os.close(fd)


def aside_name(found, inode):
    """The name under RUN/previous/ of a part moved aside: its recording's
    id, or where it has none (or one unfit for a path) unknown-INODE."""
    return found if found.isalnum() and found.isascii() and len(found) <= 64 else "unknown-%d" % inode


def _move_aside(run, host_dir, found, inode):
    aside = os.path.join(run, format.PREVIOUS_DIR, aside_name(found, inode), format.HOSTS_DIR)
    journal.make_dirs(aside)
    try:
        os.rename(host_dir, os.path.join(aside, os.path.basename(host_dir)))
    except OSError:
        pass  # moved by another process of this recording: gone, or its new part there, which stays (the name is taken)


def _make(run, host_dir, run_id):
    """Whether this process made host_dir, with run_id in it: False where a
    part is there already (not empty). Made beside RUN/hosts/, where no
    reader takes it for a host while it is being made."""
    journal.make_dirs(os.path.dirname(host_dir))
    fresh = os.path.join(run, ".%s-%d-%s.new" % (os.path.basename(host_dir), os.getpid(), os.urandom(4).hex()))
    os.mkdir(fresh, journal.PRIVATE_DIR)
    id_file = os.path.join(fresh, format.RUN_ID_FILE)
    try:
        fd = os.open(id_file, journal.NEW, journal.PRIVATE_FILE)
        try:
            os.write(fd, run_id.encode("ascii", "replace") + b"\n")  # a few bytes: one write
        finally:
            os.close(fd)
        os.rename(fresh, host_dir)
        return True
    except OSError as exc:
        for remove, path in ((os.unlink, id_file), (os.rmdir, fresh)):
            try:
                remove(path)
            except OSError:
                pass
        import errno

        if exc.errno in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
            return False
        raise
