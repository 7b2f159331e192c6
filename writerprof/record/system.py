"""The one layer through which writerprof reads sysfs and procfs. Its root can
point at a fixture tree (a copy of /sys and /proc laid out under their real
paths), so that 2-, 4- and 8-node machines are tested on a 1-node one, and
the same code reads the real files on a multi-socket host."""

from __future__ import annotations

import os
from pathlib import Path

_READ_BYTES = 1 << 16


class System:
    """Reads files under `root` ("/" on a real host) by their absolute paths."""

    def __init__(self, root: str | os.PathLike = "/"):
        self.root = Path(root)
        self.real = self.root == Path("/")  # the host's own /proc, not a fixture tree

    def path(self, path: str) -> str:
        return path if self.real else str(self.root) + path

    def read(self, path: str) -> str | None:
        """The file's text, or None where it does not exist or cannot be read
        (a process that just exited, an attribute this kernel lacks)."""
        # Bare os calls: a file object's set-up (an fstat, an ioctl, a buffer)
        # cost more than the read of a small /proc file, for the sampler.
        try:
            fd = os.open(self.path(path), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            parts = []
            while chunk := os.read(fd, _READ_BYTES):
                parts.append(chunk)
        except OSError:  # a directory, or a process gone mid-read
            return None
        finally:
            os.close(fd)
        return b"".join(parts).decode("utf-8", "replace")

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(self.path(path))

    def listdir(self, path: str) -> list[str]:
        try:
            return os.listdir(self.path(path))
        except OSError:
            return []


HOST = System()
