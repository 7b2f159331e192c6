"""Imported by `writerprof repro --main-imports fill_up` (with this directory
on PYTHONPATH): once repro has checked the free space, fills the filesystem
of $FILL_UP_DIR but for $FILL_UP_LEAVE bytes, so that a save that fitted at
the check runs out of room mid-save. Once: a spawn or forkserver child that
re-runs the main imports finds the filler there."""

import os

_path = os.path.join(os.environ["FILL_UP_DIR"], "filler")
if not os.path.exists(_path):
    _free = os.statvfs(os.environ["FILL_UP_DIR"])
    with open(_path, "wb") as _filler:
        _filler.write(b"\0" * max(0, _free.f_bavail * _free.f_frsize - int(os.environ["FILL_UP_LEAVE"])))
