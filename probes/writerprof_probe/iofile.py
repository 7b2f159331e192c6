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
directory, and connected TCP sockets (AF_INET/AF_INET6 stream); not pipes,
Unix-domain or UDP sockets, or terminals. Each such file gets a number per
journal at its open (a socket's: its connect), or at its first use when it
was opened where no interposer sees (before the process started, by a
libc-internal open; a socket accepted or connected before), and one PATH
record (op "path", file, count: the path's length in bytes) whose path
follows in PATH_DATA records (op "path_data", then PATH_CHUNK bytes of the
path each). A socket's path is its peer, PEER_PREFIX + "ADDR:PORT" (IPv6:
"[ADDR]:PORT"), never starting with "/".

On a socket it journals connect, send (send, sendto, sendmsg), recv (recv,
recvfrom, recvmsg; not a MSG_PEEK), write, writev, read, readv and close;
and OpenSSL's plaintext calls, tls_write (SSL_write, SSL_write_ex) and
tls_read (SSL_read, SSL_read_ex), on the socket SSL_get_fd gives, or, where
it gives none (a BIO of the client's own, curl's), the one the call's own
socket calls go to (or the SSL's last did, for a read of what OpenSSL had
received already); a TLS object over memory (asyncio's) has none: there the
ciphertext's socket calls are what is journaled. The socket calls a thread
makes inside its SSL_write or SSL_read are not journaled: the plaintext
counts once; those of the handshake are (ciphertext on a connection that has
tls_* records: its raw calls are not its data).

HTTP/1.x: where the data a send, write, writev or tls_write sent begins with
a request line (a method of REQUEST_METHODS, a target starting with "/" or
"http", then "HTTP/1."), a REQUEST record follows the call's: its fd, file,
tid and times, result the Content-Length header's value where it is in the
same data (else -1; an aws-chunked body's x-amz-decoded-content-length where
that is there too), count the length of its text, "METHOD TARGET", which
follows in PATH_DATA records (at most REQUEST_TEXT_MAX bytes); flags 0, cpu
-1 and no faults (the call's record has them). The target
keeps of its query string only the keys KEPT_QUERY_KEYS (the signature,
credential and token of a presigned URL are dropped), and of an absolute
URL's authority no "user:password@". Where the data a recv, read, readv or
tls_read received begins with a status line ("HTTP/1.x NNN"), a RESPONSE
record follows: result the status code (100 Continue included). Nothing else
of the data is ever journaled."""

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
#   result      bytes moved (read, write, send, recv: what the call returned;
#               fwrite, fread: items times size; tls_write, tls_read: the
#               plaintext's bytes, -1 for a failure), or the call's return
#               value (connect's); request: the Content-Length (-1 unknown);
#               response: the status code
#   minflt, majflt     this thread's page faults inside the call (read at its
#               start where the last reading is FAULT_READ_MIN_NS old, and
#               after calls that long or longer; else 0)
#   addr        the caller's buffer (writev, sendmsg: the first one's): a
#               shared-memory buffer's pages are known by their addresses (SHM
#               records); 0 for a failed write, writev, read, readv, send or recv
#   count       writev's iovcnt (sendmsg's, recvmsg's msg_iovlen); open's flags;
#               fadvise's advice; msync's flags; a PATH record's path length,
#               a REQUEST record's text's
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
    "fread": 16, "fclose": 17, "fadvise": 18, "fflush": 19, "path": 20, "path_data": 21, "connect": 22,
    "send": 23, "recv": 24, "tls_write": 25, "tls_read": 26, "request": 27, "response": 28,
}
WRITES = ("write", "pwrite", "writev", "pwritev", "fwrite")
READS = ("read", "pread", "readv", "preadv", "fread")
SYNCS = ("fsync", "fdatasync", "sync_file_range", "msync")
CLOSES = ("close", "fclose")
# The ops only a socket has that move its data (on a socket write and writev
# send too, read and readv receive), and OpenSSL's, whose plaintext they are.
SENDS = ("send", "tls_write")
RECEIVES = ("recv", "tls_read")
TLS = ("tls_write", "tls_read")

PEER_PREFIX = "tcp:"
# Keep in step with probes/interposer/http.c and http.h.
REQUEST_METHODS = ("PUT", "POST", "GET", "HEAD", "DELETE")
KEPT_QUERY_KEYS = ("uploads", "uploadId", "partNumber", "delete")  # S3 multipart's and multi-object delete's
REQUEST_TEXT_MAX = 4096

IO_DIR = "io"
IO_SUFFIX = ".io"
LIBRARY = "libwriterprof_io.so"  # beside this package's directory (writerprof.probes)
