"""A stand-in for the benchmark's storage writers package (the real names,
written for these tests): the file writer only."""

from .file_writer import FileStorageWriter

__all__ = ["FileStorageWriter"]
