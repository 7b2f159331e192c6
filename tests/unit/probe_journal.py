"""A journal for unit tests of the probe's hooks: records and events kept in
memory, the records as their fields (the hot path appends them packed)."""

from writerprof.probes.writerprof_probe import format as journal_format


class _Unpacked(list):
    """`records`: what the hot path appends packed, kept as its fields."""

    def append(self, record):
        super().append(journal_format.CHUNK.unpack(record))


class MemoryJournal:
    def __init__(self):
        self.records, self.events = _Unpacked(), []

    def record(self, values):
        list.append(self.records, tuple(values))

    def flush_if_due(self, end_ns):
        pass

    def event(self, kind, **fields):
        self.events.append((kind, fields))
