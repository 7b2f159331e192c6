"""A journal for unit tests of the probe's hooks: records and events kept in
memory, the records as their fields (as the hot path packs them or not)."""

from writerprof.probes.writerprof_probe import format as journal_format


class MemoryJournal:
    def __init__(self):
        self.records, self.events = [], []

    def record(self, values):
        self.records.append(tuple(values))

    def record_packed(self, record, end_ns):
        self.records.append(journal_format.CHUNK.unpack(record))

    def event(self, kind, **fields):
        self.events.append((kind, fields))
