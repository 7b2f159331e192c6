/* writerprof's I/O interposer: what its two parts share. journal.c keeps
 * each process's journal (the file, its records, what each fd is);
 * wpio.c holds the calls it interposes. The format is
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
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

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
    OP_FFLUSH = 19, OP_PATH = 20, OP_PATH_DATA = 21,
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
    int32_t minflt, majflt;   /* this thread's page faults since its last reading (read after calls of
                                 FAULT_READ_MIN_NS or longer; a shorter call's land on the next reading) */
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

enum fd_kind { FD_UNKNOWN = 0, FD_OTHER = 1, FD_FILE = 2 };
#define FD_SLOTS 65536


/* The state of this process's journal (journal.c). */
extern int enabled HIDDEN;                       /* WRITERPROF_RUN was set, and the journal not failed */
extern _Atomic uint8_t fd_kind[FD_SLOTS] HIDDEN; /* what each fd is: enum fd_kind */
extern _Atomic int32_t fd_file[FD_SLOTS] HIDDEN; /* a file fd's number in the journal */
extern __thread int busy TLS;                    /* this thread is inside the interposer */
extern __thread uint32_t my_tid TLS;

int32_t learn(int fd) HIDDEN;
void forget(int fd) HIDDEN;
int vfork_child(void) HIDDEN;
void put(uint8_t op, int fd, int32_t file, int64_t start, int64_t end, int64_t result, const void *addr, int err,
         uint32_t count) HIDDEN;
void opened(int fd, int flags, int64_t start, int64_t end) HIDDEN;
int closing(int fd, int *file) HIDDEN;

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline uint32_t tid(void) {
    if (!my_tid) my_tid = (uint32_t)syscall(SYS_gettid);
    return my_tid;
}

static inline int active(void) {
    return enabled && !busy;
}


/* The file number of fd if it is checkpoint I/O, else -1. */
static inline int32_t file_of(int fd) {
    if (fd < 0) return -1;
    if (fd < FD_SLOTS) {
        uint8_t kind = atomic_load_explicit(&fd_kind[fd], memory_order_acquire);
        if (kind == FD_OTHER) return -1;
        if (kind == FD_FILE) return atomic_load_explicit(&fd_file[fd], memory_order_relaxed);
    }
    return learn(fd);
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
        int64_t start_ = now_ns();                                                    \
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

/* A close of fd (its file forgotten), timed if it was checkpoint I/O. */
#define CLOSED(op, fd, call)                                                          \
    do {                                                                              \
        int file_;                                                                    \
        if (!closing(fd, &file_)) return call;                                        \
        int64_t start_ = now_ns();                                                    \
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
