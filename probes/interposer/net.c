/* writerprof's I/O interposer, the network: a TCP socket's connect, sends
 * and receives, and OpenSSL's SSL_write and SSL_read on it, timed and
 * journaled as a file's calls are (wpio.c), the socket's "file" its peer
 * ("tcp:ADDR:PORT"). Of their data only the HTTP request and status lines
 * are journaled (http.c: method, redacted target, Content-Length, status).
 * Unix-domain sockets, UDP and pipes go straight through. A call's
 * arguments, result, errno and the bytes it moves are never changed. */
#include "wpio.h" /* first: it defines _GNU_SOURCE */

#include <arpa/inet.h>
#include <link.h>
#include <netinet/in.h>

__thread struct tls_call in_tls TLS;

static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static ssize_t (*real_send)(int, const void *, size_t, int);
static ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static ssize_t (*real_recv)(int, void *, size_t, int);
static ssize_t (*real_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
static ssize_t (*real_recvmsg)(int, struct msghdr *, int);

/* --- peers ---------------------------------------------------------------- */

/* An AF_INET/AF_INET6 address as "tcp:ADDR:PORT" or "tcp:[ADDR]:PORT" into
 * out (iofile.PEER_PREFIX): its length, 0 for another family. */
static size_t peer_text(const struct sockaddr *sa, socklen_t len, char *out, size_t size) {
    char host[INET6_ADDRSTRLEN];
    int n = -1;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        if (inet_ntop(AF_INET, &in->sin_addr, host, sizeof host))
            n = snprintf(out, size, "tcp:%s:%u", host, (unsigned)ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        if (inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host))
            n = snprintf(out, size, "tcp:[%s]:%u", host, (unsigned)ntohs(in6->sin6_port));
    }
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

static int stream(int fd) {
    int type = 0;
    socklen_t size = sizeof type;
    return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) == 0 && type == SOCK_STREAM;
}

/* The socket fd's peer into out where it is a connected TCP socket: the
 * text's length; 0 where it is no TCP socket; -1 where it is one not
 * connected (yet). */
int peer_of(int fd, char *out, size_t size) {
    struct sockaddr_storage at;
    socklen_t len = sizeof at;
    if (getsockname(fd, (struct sockaddr *)&at, &len) != 0) return 0;
    if ((at.ss_family != AF_INET && at.ss_family != AF_INET6) || !stream(fd)) return 0;
    len = sizeof at;
    if (getpeername(fd, (struct sockaddr *)&at, &len) != 0) return errno == ENOTCONN ? -1 : 0;
    size_t n = peer_text((const struct sockaddr *)&at, len, out, size);
    return n ? (int)n : 0;
}

/* A TCP socket's connect journaled, fd named anew for the peer it connects
 * to where the connection began (done, in progress, or interrupted: it goes
 * on); a failed one with the peer it tried, or the one fd already has. */
static void connected(int fd, const struct sockaddr *addr, socklen_t len, int result, int err, int64_t start,
                      int64_t end) {
    char peer[64];
    if (!addr || (result != 0 && err == EFAULT)) return; /* addr is read only where the kernel could */
    size_t n = peer_text(addr, len, peer, sizeof peer);
    if (!n || !stream(fd)) return;
    int32_t file = -1;
    if (result == 0 || err == EINPROGRESS || err == EINTR) {
        file = name_fd(fd, FD_PEER, peer, n);
    } else if (kind_of(fd, &file) != FD_PEER) {
        file = name_fd(fd, FD_PEER, peer, n);
        forget(fd); /* not connected: learned at its next use */
    }
    put(OP_CONNECT, fd, file, start, end, result, NULL, err, 0);
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    RESOLVE(connect);
    if (!active() || vfork_child()) return real_connect(fd, addr, len);
    int64_t start = begin_ns();
    int result = real_connect(fd, addr, len);
    int64_t end = now_ns();
    int err = errno;
    busy = 1;
    connected(fd, addr, len, result, err, start, end);
    busy = 0;
    errno = err;
    return result;
}

/* --- sends and receives --------------------------------------------------- */

/* A request line at the start of data a call sent, or a status line at the
 * start of data it received: journaled after the call's own record. */
void http_seen(int sending, int fd, int32_t file, int64_t start, int64_t end, const void *data, size_t n) {
    if (!data) return;
    if (sending) {
        char text[REQUEST_TEXT_MAX];
        int64_t length;
        size_t len = http_request(data, n, text, sizeof text, &length);
        if (len) put_text(OP_REQUEST, fd, file, start, end, length, text, len);
    } else {
        int status = http_status(data, n);
        if (status) put_text(OP_RESPONSE, fd, file, start, end, status, NULL, 0);
    }
}

static const struct iovec *first_iov(const struct msghdr *m) {
    return m->msg_iov && m->msg_iovlen > 0 ? m->msg_iov : NULL;
}
#define IOV_BASE(m) (first_iov(m) ? first_iov(m)->iov_base : NULL)
#define IOV_LEN(m) (first_iov(m) ? first_iov(m)->iov_len : 0)

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags) {
    RESOLVE(send);
    TIMED_DATA(OP_SEND, fd, real_send(fd, buf, n, flags), buf, 0, 1, buf, n);
}
EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *to, socklen_t len) {
    RESOLVE(sendto);
    TIMED_DATA(OP_SEND, fd, real_sendto(fd, buf, n, flags, to, len), buf, 0, 1, buf, n);
}
EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags) {
    RESOLVE(sendmsg);
    TIMED_DATA(OP_SEND, fd, real_sendmsg(fd, msg, flags), IOV_BASE(msg), (uint32_t)msg->msg_iovlen, 1,
               IOV_BASE(msg), IOV_LEN(msg));
}
/* A peek (MSG_PEEK) receives nothing: its data comes again. MSG_TRUNC
 * discards the data instead of filling the buffer: nothing to look at. */
EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags) {
    RESOLVE(recv);
    if (flags & MSG_PEEK) return real_recv(fd, buf, n, flags);
    TIMED_DATA(OP_RECV, fd, real_recv(fd, buf, n, flags), buf, 0, 0, flags & MSG_TRUNC ? NULL : buf, n);
}
EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *from, socklen_t *len) {
    RESOLVE(recvfrom);
    if (flags & MSG_PEEK) return real_recvfrom(fd, buf, n, flags, from, len);
    TIMED_DATA(OP_RECV, fd, real_recvfrom(fd, buf, n, flags, from, len), buf, 0, 0, flags & MSG_TRUNC ? NULL : buf,
               n);
}
EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags) {
    RESOLVE(recvmsg);
    if (flags & MSG_PEEK) return real_recvmsg(fd, msg, flags);
    TIMED_DATA(OP_RECV, fd, real_recvmsg(fd, msg, flags), IOV_BASE(msg), (uint32_t)msg->msg_iovlen, 0,
               flags & MSG_TRUNC ? NULL : IOV_BASE(msg), IOV_LEN(msg));
}

/* --- TLS ------------------------------------------------------------------ */
/* OpenSSL's plaintext calls, found in the library the caller would have
 * called: Python's _ssl loads libssl RTLD_LOCAL (no RTLD_NEXT finds it),
 * and a process may hold two libssl (a wheel's own beside the system's),
 * whose SSL objects are not each other's. */

struct tls_calls {
    int (*write)(void *, const void *, int);
    int (*write_ex)(void *, const void *, size_t, size_t *);
    int (*read)(void *, void *, int);
    int (*read_ex)(void *, void *, size_t, size_t *);
    int (*get_fd)(const void *);
};

/* Per call site (a return address): its library's calls. A slot is taken
 * once, filled, then marked ready, and never changed: read without a lock. */
#define TLS_SLOTS 64
static struct {
    _Atomic uintptr_t caller;
    _Atomic int ready;
    struct tls_calls calls;
} tls_sites[TLS_SLOTS];

static void *own_base(void) {
    static void *base;
    Dl_info at;
    if (!base && dladdr((void *)own_base, &at)) base = at.dli_fbase;
    return base;
}

static void *not_ours(void *fn) {
    Dl_info at;
    return fn && !(dladdr(fn, &at) && at.dli_fbase == own_base()) ? fn : NULL;
}

/* name as the loaded object `object` and its dependencies define it. */
static void *in_scope(const char *object, const char *name) {
    void *handle = object && *object ? dlopen(object, RTLD_LAZY | RTLD_NOLOAD) : NULL;
    if (!handle) return NULL;
    void *fn = not_ours(dlsym(handle, name));
    dlclose(handle);
    return fn;
}

static int libssl_named(struct dl_phdr_info *info, size_t size, void *out) {
    (void)size;
    const char *slash = strrchr(info->dlpi_name, '/');
    if (strncmp(slash ? slash + 1 : info->dlpi_name, "libssl", 6) != 0) return 0;
    snprintf(out, 4096, "%s", info->dlpi_name);
    return 1;
}

/* The real `name` for a call from caller, and its library's other calls. */
static int resolve(void *caller, const char *name, struct tls_calls *calls) {
    int err = errno;
    Dl_info at;
    char lib[4096] = "";
    void *fn = NULL, *handle = NULL;
    if (dladdr(caller, &at)) fn = in_scope(at.dli_fname, name); /* the caller's own libssl */
    if (!fn) fn = not_ours(dlsym(RTLD_NEXT, name));             /* one loaded globally (a program linked with it) */
    if (!fn && dl_iterate_phdr(libssl_named, lib)) fn = in_scope(lib, name); /* any loaded */
    /* Its library kept open (never closed): the cached calls stay valid. */
    if (fn && dladdr(fn, &at)) handle = dlopen(at.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle) {
        calls->write = (__typeof__(calls->write))not_ours(dlsym(handle, "SSL_write"));
        calls->write_ex = (__typeof__(calls->write_ex))not_ours(dlsym(handle, "SSL_write_ex"));
        calls->read = (__typeof__(calls->read))not_ours(dlsym(handle, "SSL_read"));
        calls->read_ex = (__typeof__(calls->read_ex))not_ours(dlsym(handle, "SSL_read_ex"));
        calls->get_fd = (__typeof__(calls->get_fd))not_ours(dlsym(handle, "SSL_get_fd"));
    }
    errno = err;
    return handle != NULL;
}

/* The calls for the call site caller (scratch where no slot holds them). */
static const struct tls_calls *tls_calls(void *caller, const char *name, struct tls_calls *scratch) {
    uintptr_t key = (uintptr_t)caller;
    for (size_t i = 0, at = (key >> 4) % TLS_SLOTS; i < TLS_SLOTS; i++, at = (at + 1) % TLS_SLOTS) {
        uintptr_t held = atomic_load_explicit(&tls_sites[at].caller, memory_order_acquire);
        if (held == 0 && atomic_compare_exchange_strong(&tls_sites[at].caller, &held, key)) {
            if (!resolve(caller, name, &tls_sites[at].calls)) break;
            atomic_store_explicit(&tls_sites[at].ready, 1, memory_order_release);
            return &tls_sites[at].calls;
        }
        if (held == key) {
            if (atomic_load_explicit(&tls_sites[at].ready, memory_order_acquire)) return &tls_sites[at].calls;
            break; /* another thread filling it */
        }
    }
    /* No slot for it (all taken, another thread filling it, or no libssl found): this call's alone. */
    memset(scratch, 0, sizeof *scratch);
    resolve(caller, name, scratch);
    return scratch;
}

/* Per thread, the peer each SSL's socket calls last went to, where SSL_get_fd
 * knows none (curl's BIO is its own): for its calls that reach no socket (a
 * read of what OpenSSL had already received). */
#define TLS_PEERS 8
static __thread struct {
    const void *ssl;
    int fd;
    int32_t file;
} tls_peers[TLS_PEERS] STATIC_TLS;

static int tls_peer_slot(const void *ssl) { return (int)(((uintptr_t)ssl >> 4) % TLS_PEERS); }

/* ssl's peer where its socket calls went to one, still open (its number unchanged): into fd, file. */
static void tls_peer(const void *ssl, int *fd, int32_t *file) {
    int at = tls_peer_slot(ssl);
    int32_t now = -1;
    if (tls_peers[at].ssl == ssl && kind_of(tls_peers[at].fd, &now) == FD_PEER && now == tls_peers[at].file) {
        *fd = tls_peers[at].fd;
        *file = now;
    }
}

static void tls_peer_seen(const void *ssl, int fd, int32_t file) {
    int at = tls_peer_slot(ssl);
    tls_peers[at].ssl = ssl;
    tls_peers[at].fd = fd;
    tls_peers[at].file = file;
}

/* A TLS call timed, its plaintext journaled (`moved`, an expression of the
 * call's result_: the bytes, -1 for a failure) on its peer, the socket calls
 * under it not (in_tls). Its peer: SSL_get_fd's, or the one its socket calls
 * go to, or went to (tls_peer); where none (TLS over memory, asyncio's),
 * nothing is journaled: that ciphertext's socket calls, made apart, are its
 * data. */
#define TIMED_TLS(op, ssl, calls, call, moved, buf, cap, sending)                     \
    do {                                                                              \
        int fd_ = -1;                                                                 \
        int32_t file_ = -1;                                                           \
        if (!active() || in_tls.inside || !(ssl) || !(calls)->get_fd) return call;    \
        busy = 1;                                                                     \
        fd_ = (calls)->get_fd(ssl);                                                   \
        if (kind_of(fd_, &file_) != FD_PEER) {                                        \
            fd_ = file_ = -1;                                                         \
            tls_peer(ssl, &fd_, &file_);                                              \
        }                                                                             \
        busy = 0;                                                                     \
        in_tls = (struct tls_call){1, fd_, file_};                                    \
        int64_t start_ = begin_ns();                                                  \
        __typeof__(call) result_ = call;                                              \
        int64_t end_ = now_ns();                                                      \
        fd_ = in_tls.fd;                                                              \
        file_ = in_tls.file;                                                          \
        in_tls.inside = 0;                                                            \
        if (file_ < 0) return result_;                                                \
        int err_ = errno;                                                             \
        int64_t moved_ = (moved);                                                     \
        busy = 1;                                                                     \
        tls_peer_seen(ssl, fd_, file_);                                               \
        put(op, fd_, file_, start_, end_, moved_, buf, err_, 0);                      \
        if (moved_ > 0) {                                                             \
            size_t cap_ = (cap);                                                      \
            http_seen(sending, fd_, file_, start_, end_, buf,                         \
                      (size_t)moved_ < cap_ ? (size_t)moved_ : cap_);                 \
        }                                                                             \
        busy = 0;                                                                     \
        errno = err_;                                                                 \
        return result_;                                                               \
    } while (0)

/* Where no libssl of the caller's is found, a call fails: that cannot be, the caller made ssl with one. */
EXPORT int SSL_write(void *ssl, const void *buf, int num) {
    struct tls_calls scratch;
    const struct tls_calls *c = tls_calls(__builtin_return_address(0), "SSL_write", &scratch);
    if (!c->write) return -1;
    TIMED_TLS(OP_TLS_WRITE, ssl, c, c->write(ssl, buf, num), result_ > 0 ? result_ : -1, buf, num > 0 ? num : 0, 1);
}
EXPORT int SSL_write_ex(void *ssl, const void *buf, size_t num, size_t *written) {
    struct tls_calls scratch;
    const struct tls_calls *c = tls_calls(__builtin_return_address(0), "SSL_write_ex", &scratch);
    if (!c->write_ex) return 0;
    TIMED_TLS(OP_TLS_WRITE, ssl, c, c->write_ex(ssl, buf, num, written),
              result_ == 1 && written ? (int64_t)*written : -1, buf, num, 1);
}
EXPORT int SSL_read(void *ssl, void *buf, int num) {
    struct tls_calls scratch;
    const struct tls_calls *c = tls_calls(__builtin_return_address(0), "SSL_read", &scratch);
    if (!c->read) return -1;
    TIMED_TLS(OP_TLS_READ, ssl, c, c->read(ssl, buf, num), result_ > 0 ? result_ : -1, buf, num > 0 ? num : 0, 0);
}
EXPORT int SSL_read_ex(void *ssl, void *buf, size_t num, size_t *readbytes) {
    struct tls_calls scratch;
    const struct tls_calls *c = tls_calls(__builtin_return_address(0), "SSL_read_ex", &scratch);
    if (!c->read_ex) return 0;
    TIMED_TLS(OP_TLS_READ, ssl, c, c->read_ex(ssl, buf, num, readbytes),
              result_ == 1 && readbytes ? (int64_t)*readbytes : -1, buf, num, 0);
}
