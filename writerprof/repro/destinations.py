"""Where the producer's saves go, seen from the producer: each save's name
there, the check of what a save left, --verify, its removal (unless --keep),
and the end of the run.

  Directory  a file per save in --dir, or in a temporary directory removed
             at the end
  Bucket     an object per save, keyed PREFIX/NAME (--backend s3); the
             producer's own client, used only between saves
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from writerprof.errors import WriterprofError
from writerprof.repro.config import ReproConfig
from writerprof.repro.verify import verify_file, verify_stream


class Directory:
    def __init__(self, config: ReproConfig):
        self.config = config
        self.path = config.directory or tempfile.mkdtemp(prefix="writerprof-repro-")

    def target(self, name: str) -> str:
        return os.path.join(self.path, name)

    def check(self, target: str, save: int) -> None:
        found = os.path.getsize(target)
        if found != self.config.size:
            raise WriterprofError(f"save {save} failed: {target} holds {found} bytes, not {self.config.size}")

    def verify(self, target: str, save: int) -> None:
        verify_file(target, self.config, save)

    def remove(self, target: str, save: int) -> None:
        if os.path.exists(target):
            os.unlink(target)

    def close(self, who: str) -> None:
        if self.config.keep:
            print(f"writerprof repro: {who}files kept in {self.path}", file=sys.stderr)
        elif self.config.directory is None:
            shutil.rmtree(self.path, ignore_errors=True)


class Bucket:
    def __init__(self, config: ReproConfig):
        from writerprof.repro.objectstore import client

        self.config, self.store = config, config.store
        self.client = client(self.store.endpoint)

    def target(self, name: str) -> str:
        return f"{self.store.prefix.strip('/')}/{name}" if self.store.prefix.strip("/") else name

    def check(self, target: str, save: int) -> None:
        """The object's size, as the store has it, is the save's."""
        found = self._request(save, "head_object", Key=target)["ContentLength"]
        if found != self.config.size:
            raise WriterprofError(f"save {save} failed: {self.store.url(target)} holds {found} bytes,"
                                  f" not {self.config.size}")

    def verify(self, target: str, save: int) -> None:
        body = self._request(save, "get_object", Key=target)["Body"]
        with body:
            verify_stream(body, self.store.url(target), self.config, save)

    def remove(self, target: str, save: int) -> None:
        self._request(save, "delete_object", Key=target)

    def close(self, who: str) -> None:
        self.client.close()
        if self.config.keep:
            print(f"writerprof repro: {who}objects kept in {self.store.url(self.target(''))}", file=sys.stderr)

    def _request(self, save: int, operation: str, **args) -> dict:
        from writerprof.repro.objectstore import describe

        try:
            return getattr(self.client, operation)(Bucket=self.store.bucket, **args)
        except Exception as exc:  # botocore's, each said in one line
            raise WriterprofError(f"save {save}: {operation} {self.store.url(args['Key'])} failed:"
                                  f" {describe(exc, self.store.endpoint, self.store.bucket)}") from None


def destination(config: ReproConfig):
    return Directory(config) if config.store is None else Bucket(config)
