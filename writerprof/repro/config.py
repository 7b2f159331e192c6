"""What one reproducer run is asked to do, validated."""

from __future__ import annotations

from dataclasses import dataclass

# The reproducer's main module imports these at module level, in the parent and
# in every child that re-runs it; set from --main-imports by `writerprof repro`.
MAIN_IMPORTS_ENV = "WRITERPROF_REPRO_MAIN_IMPORTS"


@dataclass(frozen=True)
class ObjectStore:
    """--backend s3: where each save goes as one object, and how it is uploaded.
    Credentials are never here: boto3 reads them from the environment or the
    AWS config files, in the writer as in the producer."""

    endpoint: str | None  # None: boto3's own (AWS_ENDPOINT_URL, else AWS)
    bucket: str
    prefix: str
    upload: str  # "multipart" or "transfer"

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


@dataclass(frozen=True)
class ReproConfig:
    saves: int
    size: int
    chunk_size: int
    buffers: int
    start_method: str
    generator: str
    gen_threads: int
    seed: int
    fsync: bool
    fadvise: str
    verify: bool
    directory: str | None
    keep: bool
    json: bool
    main_imports: tuple[str, ...]
    pin_parent: frozenset[int] | None
    pin_when: str
    writer_cpus: frozenset[int] | None
    touch_cpus: frozenset[int] | None
    store: ObjectStore | None = None  # None: files in `directory`

    @property
    def backend(self) -> str:
        return "file" if self.store is None else "s3"

    @property
    def chunks_per_save(self) -> int:
        return -(-self.size // self.chunk_size)
