"""The I/O interposer's journal (probes/interposer/journal.c, loaded by
LD_PRELOAD into every process of a recorded command): the one definition of
its files, which writerprof's loader reads (writerprof.run.io). The probe
itself never reads or writes them.

A process journals into RUN/hosts/HOST/io/PID-INIT_NS.io (a new file per
image: at start, and in a child after fork): HEADER_BYTES of header
(HEADER_FIELDS, then zeros), then fixed-size records (IO_FIELDS) in a file mapped
MAP_SHARED, so each is on its way to disk the moment it is written (a
SIGKILL, exec or os._exit loses none). The file has room for FIRST_RECORDS
at first, doubled each time it fills; `next` in the header counts the records handed out, and a record
whose op is still 0 was never finished (its process died in the middle of
it): skipped.

Which fds it times: regular files and block devices, outside the run
directory; not pipes, sockets or terminals. Each such file gets a number per
journal at its open, or at its first use when it was opened where no
interposer sees (before the process started, by a libc-internal open), and
one PATH record (op "path", file, count: the path's length in bytes) whose
path follows in PATH_DATA records (op "path_data", then PATH_CHUNK bytes of
the path each)."""

MAGIC = b"WPIO\0\0\0\1"
HEADER_BYTES = 4096  # a page: each segment the file grows by starts on one
FIRST_RECORDS = 1024
PATH_CHUNK = 63

# pid, ppid; init_ns: the journal's start (CLOCK_MONOTONIC); created_ns: the
# process's creation (the fork, or /proc starttime, as identity.start_time_ns
# computes it); via: VIA; flags: WRITTEN_THROUGH; next: records handed out;
# dropped: records lost (the reserve full, the file would not grow); exe:
# /proc/self/exe; comm.
HEADER_FIELDS = (
    ("magic", "S8"), ("header_bytes", "u4"), ("record_bytes", "u4"), ("pid", "i4"), ("ppid", "i4"),
    ("init_ns", "i8"), ("created_ns", "i8"), ("via", "u4"), ("flags", "u4"), ("next", "u8"),
    ("dropped", "u8"), ("exe", "S256"), ("comm", "S32"),
)
VIA = {1: "exec", 2: "fork"}
# Where the run directory's path is not plain UTF-8, the journal is not
# mapped (a tool reading /proc/PID/maps, py-spy, would fail on its name):
# each record is written with pwrite, `next` stays 0, and the records are
# counted by the file's size.
WRITTEN_THROUGH = 1

# One record per call on a timed fd:
#   op          OPS code
#   flags       1: the call failed (err: its errno)
#   cpu         CPU at the call's end (sched_getcpu), -1 unknown
#   fd, file    the fd and this journal's number for its file (-1: none, msync)
#   tid         native thread id
#   start_ns, end_ns   CLOCK_MONOTONIC
#   result      bytes moved (read, write: what the call returned; fwrite,
#               fread: items times size), or the call's return value
#   minflt, majflt     this thread's page faults since its last reading (read
#               after calls of FAULT_READ_MIN_NS or more; a shorter call's
#               faults land on the next reading)
#   addr        the caller's buffer (writev: the first one's): a shared-memory
#               buffer's pages are known by their addresses (SHM records)
#   count       writev's iovcnt; open's flags; fadvise's advice; msync's flags;
#               a PATH record's path length
IO_FIELDS = (
    ("op", "u1"), ("flags", "u1"), ("cpu", "i2"), ("fd", "i4"), ("file", "i4"), ("tid", "u4"),
    ("start_ns", "i8"), ("end_ns", "i8"), ("result", "i8"), ("minflt", "i4"), ("majflt", "i4"),
    ("addr", "u8"), ("err", "i4"), ("count", "u4"),
)
RECORD_BYTES = 64
FAULT_READ_MIN_NS = 50_000

OPS = {
    "open": 1, "close": 2, "write": 3, "pwrite": 4, "writev": 5, "pwritev": 6, "fsync": 7, "fdatasync": 8,
    "sync_file_range": 9, "msync": 10, "read": 11, "pread": 12, "readv": 13, "preadv": 14, "fwrite": 15,
    "fread": 16, "fclose": 17, "fadvise": 18, "fflush": 19, "path": 20, "path_data": 21,
}
WRITES = ("write", "pwrite", "writev", "pwritev", "fwrite")
READS = ("read", "pread", "readv", "preadv", "fread")
SYNCS = ("fsync", "fdatasync", "sync_file_range", "msync")
CLOSES = ("close", "fclose")

IO_DIR = "io"
IO_SUFFIX = ".io"
LIBRARY = "libwriterprof_io.so"  # beside this package's directory (writerprof.probes)
