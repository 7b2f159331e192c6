/* writerprof's I/O interposer, the calls: each write, read, sync, open and
 * close of a regular file or block device, whatever made it (os.write, a
 * Python file object, numpy's fwrite, C++ streams), timed and journaled
 * (journal.c), and a TCP socket's write, read and close (its other calls:
 * net.c); every other fd's calls go straight through. A call's arguments,
 * result and errno are never changed. */
#include "wpio.h"

/* The real functions. */
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off64_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pwritev64)(int, const struct iovec *, int, off64_t);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static ssize_t (*real_pwritev64v2)(int, const struct iovec *, int, off64_t, int);
static ssize_t (*real_preadv2)(int, const struct iovec *, int, off_t, int);
static ssize_t (*real_preadv64v2)(int, const struct iovec *, int, off64_t, int);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pread64)(int, void *, size_t, off64_t);
static ssize_t (*real_readv)(int, const struct iovec *, int);
static ssize_t (*real_preadv)(int, const struct iovec *, int, off_t);
static ssize_t (*real_preadv64)(int, const struct iovec *, int, off64_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_sync_file_range)(int, off64_t, off64_t, unsigned int);
static int (*real_msync)(void *, size_t, int);
static int (*real_posix_fadvise)(int, off_t, off_t, int);
static int (*real_posix_fadvise64)(int, off64_t, off64_t, int);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_creat)(const char *, mode_t);
static int (*real_creat64)(const char *, mode_t);
static int (*real_close)(int);
static int (*real_close_range)(unsigned int, unsigned int, int);
static int (*real_dup2)(int, int);
static int (*real_dup3)(int, int, int);
static FILE *(*real_fopen)(const char *, const char *);
static FILE *(*real_fopen64)(const char *, const char *);
static FILE *(*real_freopen)(const char *, const char *, FILE *);
static size_t (*real_fwrite)(const void *, size_t, size_t, FILE *);
static size_t (*real_fread)(void *, size_t, size_t, FILE *);
static int (*real_fflush)(FILE *);
static int (*real_fclose)(FILE *);

static size_t iov_first(const struct iovec *iov, int n) { return n > 0 && iov ? (size_t)iov[0].iov_base : 0; }

EXPORT ssize_t write(int fd, const void *buf, size_t n) {
    RESOLVE(write);
    TIMED_DATA(OP_WRITE, fd, real_write(fd, buf, n), buf, 0, 1, buf, n);
}
EXPORT ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
    RESOLVE(pwrite);
    TIMED_FD(OP_PWRITE, fd, real_pwrite(fd, buf, n, off), buf, 0);
}
EXPORT ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
    RESOLVE(pwrite64);
    TIMED_FD(OP_PWRITE, fd, real_pwrite64(fd, buf, n, off), buf, 0);
}
EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt) {
    RESOLVE(writev);
    TIMED_DATA(OP_WRITEV, fd, real_writev(fd, iov, cnt), (void *)iov_first(iov, cnt), (uint32_t)cnt, 1,
               (void *)iov_first(iov, cnt), cnt > 0 && iov ? iov[0].iov_len : 0);
}
EXPORT ssize_t pwritev(int fd, const struct iovec *iov, int cnt, off_t off) {
    RESOLVE(pwritev);
    TIMED_FD(OP_PWRITEV, fd, real_pwritev(fd, iov, cnt, off), (void *)iov_first(iov, cnt), (uint32_t)cnt);
}
EXPORT ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    RESOLVE(pwritev64);
    TIMED_FD(OP_PWRITEV, fd, real_pwritev64(fd, iov, cnt, off), (void *)iov_first(iov, cnt), (uint32_t)cnt);
}
EXPORT ssize_t pwritev2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    RESOLVE(pwritev2);
    TIMED_FD(OP_PWRITEV, fd, real_pwritev2(fd, iov, cnt, off, flags), (void *)iov_first(iov, cnt), (uint32_t)cnt);
}
EXPORT ssize_t pwritev64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
    RESOLVE(pwritev64v2);
    TIMED_FD(OP_PWRITEV, fd, real_pwritev64v2(fd, iov, cnt, off, flags), (void *)iov_first(iov, cnt), (uint32_t)cnt);
}
EXPORT ssize_t read(int fd, void *buf, size_t n) {
    RESOLVE(read);
    TIMED_DATA(OP_READ, fd, real_read(fd, buf, n), buf, 0, 0, buf, n);
}
EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off) {
    RESOLVE(pread);
    TIMED_FD(OP_PREAD, fd, real_pread(fd, buf, n, off), buf, 0);
}
EXPORT ssize_t pread64(int fd, void *buf, size_t n, off64_t off) {
    RESOLVE(pread64);
    TIMED_FD(OP_PREAD, fd, real_pread64(fd, buf, n, off), buf, 0);
}
EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt) {
    RESOLVE(readv);
    TIMED_DATA(OP_READV, fd, real_readv(fd, iov, cnt), (void *)iov_first(iov, cnt), (uint32_t)cnt, 0,
               (void *)iov_first(iov, cnt), cnt > 0 && iov ? iov[0].iov_len : 0);
}
EXPORT ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off) {
    RESOLVE(preadv);
    TIMED_FD(OP_PREADV, fd, real_preadv(fd, iov, cnt, off), (void *)iov_first(iov, cnt), (uint32_t)cnt);
}
EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off64_t off) {
    RESOLVE(preadv64);
    TIMED_FD(OP_PREADV, fd, real_preadv64(fd, iov, cnt, off), (void *)iov_first(iov, cnt), (uint32_t)cnt);
}
EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags) {
    RESOLVE(preadv2);
    TIMED_FD(OP_PREADV, fd, real_preadv2(fd, iov, cnt, off, flags), (void *)iov_first(iov, cnt), (uint32_t)cnt);
}
EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int cnt, off64_t off, int flags) {
    RESOLVE(preadv64v2);
    TIMED_FD(OP_PREADV, fd, real_preadv64v2(fd, iov, cnt, off, flags), (void *)iov_first(iov, cnt), (uint32_t)cnt);
}
EXPORT int fsync(int fd) {
    RESOLVE(fsync);
    TIMED_FD(OP_FSYNC, fd, real_fsync(fd), NULL, 0);
}
EXPORT int fdatasync(int fd) {
    RESOLVE(fdatasync);
    TIMED_FD(OP_FDATASYNC, fd, real_fdatasync(fd), NULL, 0);
}
EXPORT int sync_file_range(int fd, off64_t off, off64_t n, unsigned int flags) {
    RESOLVE(sync_file_range);
    TIMED_FD(OP_SYNC_FILE_RANGE, fd, real_sync_file_range(fd, off, n, flags), NULL, 0);
}
EXPORT int posix_fadvise(int fd, off_t off, off_t n, int advice) {
    RESOLVE(posix_fadvise);
    /* returns the error number itself: result holds it */
    TIMED_FD(OP_FADVISE, fd, real_posix_fadvise(fd, off, n, advice), NULL, (uint32_t)advice);
}
EXPORT int posix_fadvise64(int fd, off64_t off, off64_t n, int advice) {
    RESOLVE(posix_fadvise64);
    TIMED_FD(OP_FADVISE, fd, real_posix_fadvise64(fd, off, n, advice), NULL, (uint32_t)advice);
}

EXPORT int msync(void *addr, size_t n, int flags) {
    RESOLVE(msync);
    if (!active()) return real_msync(addr, n, flags);
    int64_t start = begin_ns();
    int result = real_msync(addr, n, flags);
    int64_t end = now_ns();
    int err = errno;
    busy = 1;
    put(OP_MSYNC, -1, -1, start, end, result, addr, err, (uint32_t)flags);
    busy = 0;
    errno = err;
    return result;
}

#define OPEN_BODY(call, flags)                                   \
    do {                                                         \
        if (!active()) return call;                              \
        int64_t start_ = now_ns();                               \
        int fd_ = call;                                          \
        int64_t end_ = now_ns();                                 \
        if (fd_ >= 0) opened(fd_, flags, start_, end_);          \
        return fd_;                                              \
    } while (0)

static mode_t mode_arg(int flags, va_list ap) {
    return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

EXPORT int open(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    RESOLVE(open);
    OPEN_BODY(real_open(path, flags, mode), flags);
}
EXPORT int open64(const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    RESOLVE(open64);
    OPEN_BODY(real_open64(path, flags, mode), flags);
}
EXPORT int openat(int dir, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    RESOLVE(openat);
    OPEN_BODY(real_openat(dir, path, flags, mode), flags);
}
EXPORT int openat64(int dir, const char *path, int flags, ...) {
    va_list ap; va_start(ap, flags); mode_t mode = mode_arg(flags, ap); va_end(ap);
    RESOLVE(openat64);
    OPEN_BODY(real_openat64(dir, path, flags, mode), flags);
}
EXPORT int creat(const char *path, mode_t mode) {
    RESOLVE(creat);
    OPEN_BODY(real_creat(path, mode), O_CREAT | O_WRONLY | O_TRUNC);
}
EXPORT int creat64(const char *path, mode_t mode) {
    RESOLVE(creat64);
    OPEN_BODY(real_creat64(path, mode), O_CREAT | O_WRONLY | O_TRUNC);
}

EXPORT int close(int fd) {
    RESOLVE(close);
    CLOSED(OP_CLOSE, fd, real_close(fd));
}

EXPORT int close_range(unsigned int first, unsigned int last, int flags) {
    RESOLVE(close_range);
    int result = real_close_range ? real_close_range(first, last, flags) : (errno = ENOSYS, -1);
    int err = errno;
    if (result == 0 && !(flags & 4 /* CLOSE_RANGE_CLOEXEC */) && !(enabled && vfork_child()))
        for (unsigned int fd = first; fd <= last && fd < FD_SLOTS; fd++) forget((int)fd);
    errno = err;
    return result;
}

EXPORT int dup2(int old, int new) {
    RESOLVE(dup2);
    int result = real_dup2(old, new);
    if (result >= 0 && old != new && !(enabled && vfork_child())) forget(new); /* its old file closed, a new one now: learned at next use */
    return result;
}
EXPORT int dup3(int old, int new, int flags) {
    RESOLVE(dup3);
    int result = real_dup3(old, new, flags);
    if (result >= 0 && !(enabled && vfork_child())) forget(new);
    return result;
}

/* --- stdio: its reads, writes and closes go through libc's own entry
 * points, which no interposer sees; fwrite, fread and fclose are timed here. */

static inline int stream_fd(FILE *f) { return f ? fileno(f) : -1; }

static FILE *opened_stream(FILE *f, int64_t start, int64_t end) {
    if (f && active()) opened(fileno(f), -1, start, end);
    return f;
}

EXPORT FILE *fopen(const char *path, const char *mode) {
    RESOLVE(fopen);
    int64_t start = now_ns();
    FILE *f = real_fopen(path, mode);
    return opened_stream(f, start, now_ns());
}
EXPORT FILE *fopen64(const char *path, const char *mode) {
    RESOLVE(fopen64);
    int64_t start = now_ns();
    FILE *f = real_fopen64(path, mode);
    return opened_stream(f, start, now_ns());
}
EXPORT FILE *freopen(const char *path, const char *mode, FILE *f) {
    RESOLVE(freopen);
    forget(stream_fd(f));
    int64_t start = now_ns();
    FILE *out = real_freopen(path, mode, f);
    return opened_stream(out, start, now_ns());
}

EXPORT size_t fwrite(const void *buf, size_t size, size_t n, FILE *f) {
    RESOLVE(fwrite);
    TIMED_AS(OP_FWRITE, stream_fd(f), real_fwrite(buf, size, n, f), result_ * size, buf, 0);
}
EXPORT size_t fread(void *buf, size_t size, size_t n, FILE *f) {
    RESOLVE(fread);
    TIMED_AS(OP_FREAD, stream_fd(f), real_fread(buf, size, n, f), result_ * size, buf, 0);
}
EXPORT int fflush(FILE *f) {
    RESOLVE(fflush);
    TIMED_FD(OP_FFLUSH, stream_fd(f), real_fflush(f), NULL, 0);
}
EXPORT int fclose(FILE *f) {
    RESOLVE(fclose);
    int fd = stream_fd(f);
    CLOSED(OP_FCLOSE, fd, real_fclose(f)); /* its last buffered write, then the close */
}

