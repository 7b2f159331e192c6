/* writerprof's I/O interposer: what its parts share. journal.c keeps
 * each process's journal (the file, its records, what each fd is);
 * wpio.c holds the file calls it interposes, net.c the socket and TLS
 * calls, http.c the HTTP it recognizes in their data. The format is
 * writerprof_probe/iofile.py's, the one definition the loader reads. */
#ifndef WPIO_H
#define WPIO_H
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

#define EXPORT __attribute__((visibility("default")))
#define HIDDEN __attribute__((visibility("hidden")))
/* A preloaded library's static TLS: no __tls_get_addr on the hot path. */
#define TLS __attribute__((visibility("hidden"), tls_model("initial-exec")))
#define STATIC_TLS __attribute__((tls_model("initial-exec")))

/* Keep in step with probes/writerprof_probe/iofile.py. */
#define MAGIC "WPIO\0\0\0\1"
#define HEADER_BYTES 4096             /* a page: each segment the file grows by starts on a page */
#define RECORD_BYTES 64
#define FIRST_RECORDS 1024           /* 64 KiB at first (most processes need no more), doubled as it fills */
#define MAX_RECORDS (16u << 20)      /* 1 GiB of address space reserved, used as it fills */
#define PATH_CHUNK 63                /* path bytes carried by one PATH_DATA record */
#define MAX_PATH_RECORDS 64
#define FAULT_READ_MIN_NS 50000         /* a reading costs ~0.3 us: only where it is small beside the call */

enum op {
    OP_NONE = 0, OP_OPEN = 1, OP_CLOSE = 2, OP_WRITE = 3, OP_PWRITE = 4, OP_WRITEV = 5, OP_PWRITEV = 6,
    OP_FSYNC = 7, OP_FDATASYNC = 8, OP_SYNC_FILE_RANGE = 9, OP_MSYNC = 10, OP_READ = 11, OP_PREAD = 12,
    OP_READV = 13, OP_PREADV = 14, OP_FWRITE = 15, OP_FREAD = 16, OP_FCLOSE = 17, OP_FADVISE = 18,
    OP_FFLUSH = 19, OP_PATH = 20, OP_PATH_DATA = 21, OP_CONNECT = 22, OP_SEND = 23, OP_RECV = 24,
    OP_TLS_WRITE = 25, OP_TLS_READ = 26, OP_REQUEST = 27, OP_RESPONSE = 28,
};

struct record {               /* 64 bytes, little-endian, op written last */
    uint8_t op;
    uint8_t flags;            /* 1: the call failed (err is its errno) */
    int16_t cpu;              /* CPU at the call's end, -1 unknown */
    int32_t fd;
    int32_t file;             /* this process's number for the file (its PATH record), -1 none */
    uint32_t tid;
    int64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
    int64_t result;           /* bytes moved, or the call's return value */
    int32_t minflt, majflt;   /* this thread's page faults in the call (read at its start where the last
                                 reading is FAULT_READ_MIN_NS old, and after calls that long or longer) */
    uint64_t addr;            /* the caller's buffer (a shared-memory buffer's pages are known by it) */
    int32_t err;
    uint32_t count;           /* iovcnt; open's flags; fadvise's advice; a PATH record's path length */
};
_Static_assert(sizeof(struct record) == RECORD_BYTES, "record size");

struct header {
    char magic[8];
    uint32_t header_bytes, record_bytes;
    int32_t pid, ppid;
    int64_t init_ns;          /* when this journal began (CLOCK_MONOTONIC) */
    int64_t created_ns;       /* when the process was created: the fork, or /proc starttime */
    uint32_t via;             /* 1: exec (or the first image), 2: fork */
    uint32_t flags;           /* 1: written through (no mapping): count the records by the file's size */
    _Atomic uint64_t next;    /* records handed out (some may still be being written) */
    _Atomic uint64_t dropped; /* records lost: the reserve full, or the file could not grow */
    char exe[256];
    char comm[32];
};
_Static_assert(sizeof(struct header) <= HEADER_BYTES, "header size");

/* FD_PEER: a connected TCP socket (AF_INET/AF_INET6 stream), its "file" its peer. */
enum fd_kind { FD_UNKNOWN = 0, FD_OTHER = 1, FD_FILE = 2, FD_PEER = 3 };
#define FD_SLOTS 65536


/* The state of this process's journal (journal.c). */
extern int enabled HIDDEN;                       /* WRITERPROF_RUN was set, and the journal not failed */
extern _Atomic uint8_t fd_kind[FD_SLOTS] HIDDEN; /* what each fd is: enum fd_kind */
extern _Atomic int32_t fd_file[FD_SLOTS] HIDDEN; /* a file's or peer's number in the journal */
extern __thread int busy TLS;                    /* this thread is inside the interposer */
extern __thread uint32_t my_tid TLS;
extern __thread int64_t faults_due TLS;          /* when a call's start next reads this thread's faults */
/* This thread's timed SSL_write or SSL_read, while it runs: the peer its socket calls went to. */
struct tls_call {
    int inside, fd;
    int32_t file;
};
extern __thread struct tls_call in_tls TLS;

int learn(int fd, int32_t *file) HIDDEN;
int32_t name_fd(int fd, int kind, const char *path, size_t len) HIDDEN;
void forget(int fd) HIDDEN;
int vfork_child(void) HIDDEN;
void put(uint8_t op, int fd, int32_t file, int64_t start, int64_t end, int64_t result, const void *addr, int err,
         uint32_t count) HIDDEN;
void put_text(uint8_t op, int fd, int32_t file, int64_t start, int64_t end, int64_t result, const char *text,
              size_t len) HIDDEN;
void skip_faults(int64_t start) HIDDEN;
void opened(int fd, int flags, int64_t start, int64_t end) HIDDEN;
int closing(int fd, int *file) HIDDEN;
int peer_of(int fd, char *out, size_t size) HIDDEN;
void http_seen(int sending, int fd, int32_t file, int64_t start, int64_t end, const void *data, size_t n) HIDDEN;

/* The next definition of name after this library's: libc's. */
#define RESOLVE(name) \
    do { if (!real_##name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name); } while (0)

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A timed call's start: a record's faults are those inside its call, not the
 * thread's work since its last reading (a copy between two writes). */
static inline int64_t begin_ns(void) {
    int64_t start = now_ns();
    if (start >= faults_due) skip_faults(start);
    return start;
}

static inline uint32_t tid(void) {
    if (!my_tid) my_tid = (uint32_t)syscall(SYS_gettid);
    return my_tid;
}

static inline int active(void) {
    return enabled && !busy;
}


/* What fd is (enum fd_kind: FD_FILE, FD_PEER or FD_OTHER) and, for a file
 * or a peer, its number into *file: one load where it is neither. */
static inline int kind_of(int fd, int32_t *file) {
    if (fd < 0) return FD_OTHER;
    if (fd < FD_SLOTS) {
        uint8_t kind = atomic_load_explicit(&fd_kind[fd], memory_order_acquire);
        if (kind == FD_OTHER) return FD_OTHER;
        if (kind != FD_UNKNOWN) {
            *file = atomic_load_explicit(&fd_file[fd], memory_order_relaxed);
            return kind;
        }
    }
    return learn(fd, file);
}

/* The file number of fd if it is checkpoint I/O, else -1. */
static inline int32_t file_of(int fd) {
    int32_t file = -1;
    return kind_of(fd, &file) == FD_FILE ? file : -1;
}

/* The body every fd call shares: time it if fd is checkpoint I/O, and
 * journal `moved` (an expression of the call's result_) as its result. */
#define TIMED_AS(op, fd, call, moved, addr, count)                                    \
    do {                                                                              \
        int fd_ = (fd);                                                               \
        int32_t file_ = -1;                                                           \
        if (active()) {                                                               \
            busy = 1;                                                                 \
            file_ = file_of(fd_);                                                     \
            busy = 0;                                                                 \
        }                                                                             \
        if (file_ < 0) return call;                                                   \
        int64_t start_ = begin_ns();                                                  \
        __typeof__(call) result_ = call;                                              \
        int64_t end_ = now_ns();                                                      \
        int err_ = errno;                                                             \
        busy = 1;                                                                     \
        put(op, fd_, file_, start_, end_, (int64_t)(moved), addr, err_, count);       \
        busy = 0;                                                                     \
        errno = err_;                                                                 \
        return result_;                                                               \
    } while (0)
#define TIMED_FD(op, fd, call, addr, count) TIMED_AS(op, fd, call, result_, addr, count)

/* A call that moves data on a file or a socket: timed as TIMED_FD where fd
 * is a file or a peer, but a peer's not inside this thread's timed TLS call
 * (whose plaintext is journaled, on this peer: the bytes count once). `data` and `cap`
 * (expressions, of the call's buffer: its first) are looked at for HTTP
 * (http_seen) up to the bytes the call moved, never past them; `addr` and
 * `count` only where the call succeeded (a failed one's pointers may be bad:
 * EFAULT). */
#define TIMED_DATA(op, fd, call, addr, count, sending, data, cap)                     \
    do {                                                                              \
        int fd_ = (fd);                                                               \
        int32_t file_ = -1;                                                           \
        int kind_ = FD_OTHER;                                                         \
        if (active()) {                                                               \
            busy = 1;                                                                 \
            kind_ = kind_of(fd_, &file_);                                             \
            busy = 0;                                                                 \
        }                                                                             \
        if (kind_ == FD_OTHER) return call;                                           \
        if (kind_ == FD_PEER && in_tls.inside) {                                      \
            in_tls.fd = fd_;                                                          \
            in_tls.file = file_;                                                      \
            return call;                                                              \
        }                                                                             \
        int64_t start_ = begin_ns();                                                  \
        __typeof__(call) result_ = call;                                              \
        int64_t end_ = now_ns();                                                      \
        int err_ = errno;                                                             \
        busy = 1;                                                                     \
        put(op, fd_, file_, start_, end_, (int64_t)result_,                           \
            result_ >= 0 ? (addr) : NULL, err_, result_ >= 0 ? (count) : 0);          \
        if (kind_ == FD_PEER && result_ > 0) {                                        \
            size_t cap_ = (cap);                                                      \
            http_seen(sending, fd_, file_, start_, end_, (data),                      \
                      (size_t)result_ < cap_ ? (size_t)result_ : cap_);               \
        }                                                                             \
        busy = 0;                                                                     \
        errno = err_;                                                                 \
        return result_;                                                               \
    } while (0)

/* A close of fd (its file forgotten), timed if it was checkpoint I/O or a peer. */
#define CLOSED(op, fd, call)                                                          \
    do {                                                                              \
        int file_;                                                                    \
        if (!closing(fd, &file_)) return call;                                        \
        int64_t start_ = begin_ns();                                                  \
        int result_ = call;                                                           \
        int64_t end_ = now_ns();                                                      \
        int err_ = errno;                                                             \
        busy = 1;                                                                     \
        put(op, fd, file_, start_, end_, result_, NULL, err_, 0);                     \
        busy = 0;                                                                     \
        errno = err_;                                                                 \
        return result_;                                                               \
    } while (0)

#endif
