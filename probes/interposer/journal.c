/* writerprof's I/O interposer, its journal: loaded into every process of a
 * recorded command (LD_PRELOAD), it keeps one journal per process image in
 * RUN/hosts/HOST/io/PID-INIT_NS.io: a header, then fixed-size records in a
 * file mapped MAP_SHARED, so a record is in the page cache the moment it is
 * written: it survives SIGKILL, exec and os._exit with no flush. It keeps
 * no fd open, starts no thread and installs no signal handler: the target
 * cannot see it but for LD_PRELOAD in its environment and the mapping in
 * its address space. Inert unless WRITERPROF_RUN is set. */
#include "wpio.h"

int enabled;                     /* WRITERPROF_RUN was set, and the journal not failed */
static char *base;                      /* the reserved range; header at its start */
static struct header *head;
static _Atomic uint64_t mapped_records; /* records the file holds room for */
static int reserve_intact = 1;          /* the unmapped rest of the reservation is still ours */
static atomic_flag growing = ATOMIC_FLAG_INIT;
static char io_path[4096];
static char run_dir[4096];
static size_t run_dir_len;
_Atomic uint8_t fd_kind[FD_SLOTS];
_Atomic int32_t fd_file[FD_SLOTS];
static _Atomic int32_t next_file;
static pid_t owner;                     /* the pid whose journal is mapped */
/* The run directory's path is no plain UTF-8 (a tool reading /proc/PID/maps,
 * py-spy, would choke on our mapping's name): each record is written with
 * pwrite instead, and the reader counts them by the file's size. */
static int write_through;
static _Atomic uint64_t through_next;
__thread int busy TLS;               /* this thread is inside the interposer */
__thread uint32_t my_tid TLS;
static __thread long seen_minflt STATIC_TLS, seen_majflt STATIC_TLS; /* this thread's fault counters at its last reading */
static __thread int faults_read STATIC_TLS;
__thread int64_t faults_due TLS;
enum journal_state { JOURNAL_NONE, JOURNAL_MAKING, JOURNAL_READY, JOURNAL_FAILED };
static _Atomic int journal_state;
static uint32_t journal_via;
static int64_t journal_created_ns, journal_init_ns;
#define RESERVED_BYTES (HEADER_BYTES + (size_t)MAX_RECORDS * RECORD_BYTES + 4096)

/* vfork's child (posix_spawn, subprocess) shares this process's memory until
 * it execs: the fds it closes or replaces are its own, not ours to forget,
 * and its calls are not this process's. */
int vfork_child(void) {
    return (pid_t)syscall(SYS_getpid) != owner;
}

/* --- the journal file ---------------------------------------------------- */

static int raw_open(const char *path, int flags, int mode) { return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode); }
static int raw_close(int fd) { return (int)syscall(SYS_close, fd); }

/* The file's blocks for [from, to), allocated now, so that no store into
 * the mapping can meet a full disk (that would be a SIGBUS in the target):
 * fallocate, or zeros written where the file system has none. */
static int allocate(int fd, off_t from, off_t to) {
    if (syscall(SYS_fallocate, fd, 0, from, to - from) == 0) return 1;
    if (errno != EOPNOTSUPP && errno != ENOSYS) return 0;
    static const char zeros[65536];
    for (off_t at = from; at < to;) {
        size_t n = (size_t)(to - at) < sizeof zeros ? (size_t)(to - at) : sizeof zeros;
        ssize_t done = syscall(SYS_pwrite64, fd, zeros, n, at);
        if (done <= 0) return 0;
        at += done;
    }
    return 1;
}

/* Room for records up to `want`: the file made longer, the new part mapped
 * into the reserved range. One thread at a time; the others drop their
 * record rather than wait (a signal handler may be the one asking). */
static int grow(uint64_t want) {
    for (;;) {
        if (want <= atomic_load_explicit(&mapped_records, memory_order_acquire)) return 1;
        /* Another thread is at it (never this one: a signal handler's call finds busy set). */
        if (!atomic_flag_test_and_set_explicit(&growing, memory_order_acquire)) break;
        sched_yield();
    }
    int ok = 0;
    uint64_t have = atomic_load(&mapped_records);
    if (want <= have) { ok = 1; goto out; }
    uint64_t records = 2 * have;  /* a multiple of FIRST_RECORDS: each segment starts on a page */
    while (records < want) records *= 2;
    if (records > MAX_RECORDS || !reserve_intact) goto out;
    int fd = raw_open(io_path, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) goto out;
    off_t old = HEADER_BYTES + (off_t)have * RECORD_BYTES, size = HEADER_BYTES + (off_t)records * RECORD_BYTES;
    if (allocate(fd, old, size)) {
        /* the new segment alone (page-aligned): the records mapped so far are never unmapped */
        void *at = mmap(base + old, (size_t)(size - old), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, old);
        if (at != MAP_FAILED) {
            atomic_store(&mapped_records, records);
            ok = 1;
        } else {
            reserve_intact = 0; /* a failed MAP_FIXED may have unmapped the rest: no longer ours */
        }
    }
    raw_close(fd);
out:
    atomic_flag_clear_explicit(&growing, memory_order_release);
    return ok;
}

static int journal_ready(void);

static struct record *reserve(uint32_t n) {
    uint64_t at = atomic_fetch_add_explicit(&head->next, n, memory_order_relaxed);
    if (at + n > atomic_load_explicit(&mapped_records, memory_order_acquire) && !grow(at + n)) {
        atomic_fetch_add_explicit(&head->dropped, n, memory_order_relaxed);
        return NULL;
    }
    return (struct record *)(base + HEADER_BYTES + at * RECORD_BYTES);
}

/* Records the caller built, journaled: copied into the mapping, the first
 * one's op stored last (a reader skips a record whose op is still 0); or,
 * where the run directory's path must not be mapped (write_through), written
 * with one pwrite. */
static void emit(struct record *recs, uint32_t n) {
    if (!journal_ready()) return;
    if (write_through) {
        uint64_t at = atomic_fetch_add(&through_next, n);
        int fd = raw_open(io_path, O_WRONLY | O_CLOEXEC, 0);
        if (fd < 0) return;
        syscall(SYS_pwrite64, fd, recs, (size_t)n * RECORD_BYTES, (off_t)(HEADER_BYTES + at * RECORD_BYTES));
        raw_close(fd);
        return;
    }
    struct record *r = reserve(n);
    if (!r) return;
    if (n > 1) memcpy(r + 1, recs + 1, (size_t)(n - 1) * RECORD_BYTES);
    uint8_t op = recs[0].op;
    recs[0].op = 0;
    memcpy(r, recs, RECORD_BYTES);
    __atomic_store_n(&r->op, op, __ATOMIC_RELEASE);
}

static void safe_host(char *out, size_t size) {
    const char *host = getenv("WRITERPROF_HOST");
    struct utsname u;
    if (!host || !*host) host = uname(&u) == 0 ? u.nodename : "";
    size_t n = 0;
    for (; host[n] && n + 1 < size; n++) {
        char c = host[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
        out[n] = ok ? c : '_';
    }
    out[n] = 0;
    if (!n) snprintf(out, size, "localhost");
}

static void make_dirs(char *path) { /* mkdir -p of path's directories, path left as it was */
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        syscall(SYS_mkdirat, AT_FDCWD, path, 0700);
        *p = '/';
    }
}

/* /proc/self/stat's starttime, on CLOCK_MONOTONIC: as the Python probe's
 * identity.start_time_ns computes it, so the two journals of a process agree. */
static int64_t start_time_ns(void) {
    char buf[1024];
    int fd = raw_open("/proc/self/stat", O_RDONLY | O_CLOEXEC, 0);
    if (fd < 0) return 0;
    ssize_t n = syscall(SYS_read, fd, buf, sizeof buf - 1);
    raw_close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    int field = 2;
    unsigned long long ticks = 0;
    for (p++; *p && field < 22; p++)
        if (*p == ' ') field++;
    ticks = strtoull(p, NULL, 10);
    long hz = sysconf(_SC_CLK_TCK);
    struct timespec boot, mono;
    clock_gettime(CLOCK_BOOTTIME, &boot);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    int64_t offset = ((int64_t)boot.tv_sec - mono.tv_sec) * 1000000000 + (boot.tv_nsec - mono.tv_nsec);
    return (int64_t)(ticks * 1000000000ull / (unsigned long long)(hz > 0 ? hz : 100)) - offset;
}

/* This process's journal begins (at load, and in a child after fork); its
 * file is made at its first record, so a process that does no file I/O
 * (a shell, a launcher) leaves none. */
static void begin(uint32_t via, int64_t created_ns) {
    journal_via = via;
    journal_created_ns = created_ns;
    journal_init_ns = now_ns();
    owner = (pid_t)syscall(SYS_getpid);
    atomic_store(&journal_state, JOURNAL_NONE);
    enabled = 1;
}

/* The header's fields, into h (magic left for last). */
static void fill_header(struct header *h) {
    h->header_bytes = HEADER_BYTES;
    h->record_bytes = RECORD_BYTES;
    h->pid = owner;
    h->ppid = (int32_t)syscall(SYS_getppid);
    h->init_ns = journal_init_ns;
    h->created_ns = journal_created_ns ? journal_created_ns : start_time_ns();
    h->via = journal_via;
    h->flags = write_through ? 1 : 0;
    ssize_t n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", h->exe, sizeof h->exe - 1);
    h->exe[n > 0 ? n : 0] = 0;
    int cf = raw_open("/proc/self/comm", O_RDONLY | O_CLOEXEC, 0);
    if (cf >= 0) {
        n = syscall(SYS_read, cf, h->comm, sizeof h->comm - 1);
        if (n > 0 && h->comm[n - 1] == '\n') n--;
        h->comm[n > 0 ? n : 0] = 0;
        raw_close(cf);
    }
}

/* The journal's first segment, allocated and mapped at base; errno says why not. */
static int map_file(int fd) {
    off_t size = HEADER_BYTES + (off_t)FIRST_RECORDS * RECORD_BYTES;
    if (!base) {
        void *r = mmap(NULL, RESERVED_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (r == MAP_FAILED) return 0;
        base = r;
    }
    if (!allocate(fd, 0, size)) return 0;
    if (mmap(base, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
        int err = errno;
        /* A failed MAP_FIXED may have unmapped the reservation, and the range
         * may be the target's memory from now on: never ours to unmap again. */
        base = NULL;
        syscall(SYS_ftruncate, fd, 0);
        errno = err;
        return 0;
    }
    return 1;
}

/* --- the host's part: one recording's ------------------------------------ */
/* RUN/hosts/HOST/ carries its recording's id from the moment it appears; a
 * part of another recording found there is moved aside whole to
 * RUN/previous/ID/ first, so that two recordings never share a part. The
 * steps of probes/writerprof_probe/part.py (which says why), taken here
 * because the interposer journals before the Python probe starts. */
static char run_id[65];                 /* WRITERPROF_RUN_ID; "" when record did not start this */
#define PART_PATH 4608                  /* room for RUN (< 4096), a host (< 256) and the names below */
static int part_owned;                  /* this process image found or made it (a fork child inherits it) */

/* 1 and the id host_dir carries ("" for none) and its inode; 0: no host_dir. */
static int held_by(const char *host_dir, char *found, size_t size, unsigned long long *inode) {
    struct stat st;
    if (syscall(SYS_newfstatat, AT_FDCWD, host_dir, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0;
    *inode = (unsigned long long)st.st_ino;
    found[0] = 0;
    if (!S_ISDIR(st.st_mode)) return 1; /* a link planted at its name, say: never followed, moved aside */
    char path[PART_PATH + 8];
    snprintf(path, sizeof path, "%s/run_id", host_dir);
    int fd = raw_open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
    if (fd < 0) return 1;
    ssize_t n = syscall(SYS_read, fd, found, size - 1);
    raw_close(fd);
    while (n > 0 && (found[n - 1] == '\n' || found[n - 1] == ' ')) n--;
    found[n > 0 ? n : 0] = 0;
    return 1;
}

static void move_aside(const char *host, const char *host_dir, const char *found, unsigned long long inode) {
    int plain_id = *found && strlen(found) <= 64;
    for (const char *c = found; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) plain_id = 0;
    char aside[2 * PART_PATH];
    if (plain_id) snprintf(aside, sizeof aside, "%s/previous/%s/hosts/%s", run_dir, found, host);
    else snprintf(aside, sizeof aside, "%s/previous/unknown-%llu/hosts/%s", run_dir, inode, host);
    make_dirs(aside);
    /* fails where another process moved it: gone, or its new part there, which the taken name keeps */
    syscall(SYS_renameat, AT_FDCWD, host_dir, AT_FDCWD, aside);
}

/* 1 where this process made host_dir with run_id in it; 0 where a part is
 * there (not empty) or it cannot be made. */
static int make_part(const char *host, char *host_dir) {
    char fresh[PART_PATH], id_path[PART_PATH + 8];
    snprintf(fresh, sizeof fresh, "%s/.%s-%d-%lld.new", run_dir, host, (int)syscall(SYS_getpid), (long long)now_ns());
    snprintf(id_path, sizeof id_path, "%s/run_id", fresh);
    make_dirs(id_path);
    int fd = raw_open(id_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    int ok = 0;
    if (fd >= 0) {
        char line[80];
        int n = snprintf(line, sizeof line, "%s\n", run_id);
        ok = syscall(SYS_write, fd, line, (size_t)n) == n;
        raw_close(fd);
    }
    /* host_dir's parents first: make_dirs makes a path's directories, not its last component */
    make_dirs(host_dir);
    if (ok && syscall(SYS_renameat, AT_FDCWD, fresh, AT_FDCWD, host_dir) == 0) return 1;
    syscall(SYS_unlinkat, AT_FDCWD, id_path, 0);
    syscall(SYS_unlinkat, AT_FDCWD, fresh, AT_REMOVEDIR);
    return 0;
}

static int own_part(const char *host) {
    if (!run_id[0] || part_owned) return 1;
    char host_dir[PART_PATH], found[80];
    unsigned long long inode = 0;
    if (snprintf(host_dir, sizeof host_dir, "%s/hosts/%s", run_dir, host) >= (int)sizeof host_dir) return 0;
    for (int tries = 0; tries < 4; tries++) { /* another recording taking it back each time: give up rather than mix */
        int held = held_by(host_dir, found, sizeof found, &inode);
        if ((held && strcmp(found, run_id) == 0) || make_part(host, host_dir)) return part_owned = 1;
        if (held) move_aside(host, host_dir, found, inode);
    }
    return 0;
}

static int make_file(void) {
    char host[256];
    safe_host(host, sizeof host);
    if (!own_part(host)) return 0;
    if (snprintf(io_path, sizeof io_path, "%s/hosts/%s/io/%d-%lld.io", run_dir, host, (int)owner,
                 (long long)journal_init_ns) >= (int)sizeof io_path)
        return 0;
    int fd = raw_open(io_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 && errno == ENOENT) { /* the host's io/ is made by its first process */
        make_dirs(io_path);
        fd = raw_open(io_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    }
    if (fd < 0) return 0;
    if (!write_through && !map_file(fd)) {
        if (errno == ENOSPC || errno == EDQUOT) { /* a full disk: no journal, and no empty file */
            raw_close(fd);
            syscall(SYS_unlinkat, AT_FDCWD, io_path, 0);
            return 0;
        }
        write_through = 1; /* a file system that maps no shared file (9p, FUSE): written through */
    }
    if (write_through) {
        static char block[HEADER_BYTES];
        memset(block, 0, sizeof block);
        struct header *h = (struct header *)block;
        fill_header(h);
        memcpy(h->magic, MAGIC, 8);
        ssize_t done = syscall(SYS_pwrite64, fd, block, sizeof block, (off_t)0);
        raw_close(fd);
        return done == (ssize_t)sizeof block;
    }
    raw_close(fd);
    head = (struct header *)base;
    fill_header(head);
    atomic_store(&mapped_records, FIRST_RECORDS);
    memcpy(head->magic, MAGIC, 8); /* last: a reader takes a file without it for one cut short */
    return 1;
}

/* Whether a path is plain UTF-8 without control characters: what a tool
 * reading /proc/PID/maps can be trusted to read. */
static int plain(const char *p) {
    const unsigned char *s = (const unsigned char *)p;
    while (*s) {
        unsigned char c = *s;
        int more = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
        if (more < 0 || c < 0x20 || c == 0x7F) return 0;
        for (s++; more > 0; more--, s++)
            if ((*s & 0xC0) != 0x80) return 0;
    }
    return 1;
}

/* The journal's file, made by the first thread to need it; the others wait. */
static int journal_ready(void) {
    int state = atomic_load_explicit(&journal_state, memory_order_acquire);
    if (state == JOURNAL_READY) return 1;
    if (state == JOURNAL_FAILED || vfork_child()) return 0;
    int none = JOURNAL_NONE;
    if (atomic_compare_exchange_strong(&journal_state, &none, JOURNAL_MAKING)) {
        int ok = make_file();
        atomic_store_explicit(&journal_state, ok ? JOURNAL_READY : JOURNAL_FAILED, memory_order_release);
        if (!ok) enabled = 0; /* a read-only or full run directory: no cost per call from here on */
        return ok;
    }
    while ((state = atomic_load_explicit(&journal_state, memory_order_acquire)) == JOURNAL_MAKING) sched_yield();
    return state == JOURNAL_READY;
}

static void forget_all(void) {
    for (int i = 0; i < FD_SLOTS; i++) atomic_store_explicit(&fd_kind[i], FD_UNKNOWN, memory_order_relaxed);
}

static void after_fork_child(void) {
    my_tid = 0;
    faults_read = 0;
    faults_due = 0;
    if (!enabled) return;
    int64_t forked = now_ns();
    /* The parent's journal is shared with this mapping: this child's goes elsewhere
     * (its reservation kept, if it was one; a written-through journal has no mapping). */
    if (head) {
        munmap(base, reserve_intact ? RESERVED_BYTES
                                    : HEADER_BYTES + (size_t)atomic_load(&mapped_records) * RECORD_BYTES);
        base = NULL;
        reserve_intact = 1;
    }
    head = NULL;
    atomic_store(&mapped_records, 0);
    atomic_store(&through_next, 0);
    atomic_store(&next_file, 0);
    forget_all(); /* file numbers are per journal: each file is learned again, with its PATH */
    begin(2, forked);
}

/* --- what an fd is -------------------------------------------------------- */

void forget(int fd) {
    if (fd >= 0 && fd < FD_SLOTS) atomic_store_explicit(&fd_kind[fd], FD_UNKNOWN, memory_order_relaxed);
}

#define TEXT_RECORDS ((REQUEST_TEXT_MAX + PATH_CHUNK - 1) / PATH_CHUNK)
_Static_assert(TEXT_RECORDS >= MAX_PATH_RECORDS, "a path's text fits");

/* A record followed by PATH_DATA records carrying text (count: its length):
 * a file's path, a request's line. No faults are read for it (they are the
 * call's record's). */
void put_text(uint8_t op, int fd, int32_t file, int64_t start, int64_t end, int64_t result, const char *text,
              size_t len) {
    uint32_t extra = (uint32_t)((len + PATH_CHUNK - 1) / PATH_CHUNK);
    if (extra > TEXT_RECORDS) { extra = TEXT_RECORDS; len = (size_t)extra * PATH_CHUNK; }
    struct record recs[1 + TEXT_RECORDS];
    memset(recs, 0, (size_t)(1 + extra) * RECORD_BYTES);
    for (uint32_t i = 0; i < extra; i++) {
        char *slot = (char *)(recs + 1 + i);
        size_t part = len - (size_t)i * PATH_CHUNK < PATH_CHUNK ? len - (size_t)i * PATH_CHUNK : PATH_CHUNK;
        slot[0] = (char)OP_PATH_DATA;
        memcpy(slot + 1, text + (size_t)i * PATH_CHUNK, part);
    }
    recs[0].op = op;
    recs[0].fd = fd;
    recs[0].file = file;
    recs[0].tid = tid();
    recs[0].start_ns = start;
    recs[0].end_ns = end;
    recs[0].result = result;
    recs[0].count = (uint32_t)len;
    recs[0].cpu = -1;
    emit(recs, 1 + extra);
}

/* fd, a file or a peer (kind) with that path, given this journal's next
 * number and its PATH record; cached where it has a slot. */
int32_t name_fd(int fd, int kind, const char *path, size_t len) {
    int32_t number = atomic_fetch_add(&next_file, 1);
    if (len > (size_t)MAX_PATH_RECORDS * PATH_CHUNK) len = (size_t)MAX_PATH_RECORDS * PATH_CHUNK;
    int64_t now = now_ns();
    put_text(OP_PATH, fd, number, now, now, 0, path, len);
    if (fd >= 0 && fd < FD_SLOTS) {
        atomic_store_explicit(&fd_file[fd], number, memory_order_relaxed);
        atomic_store_explicit(&fd_kind[fd], (uint8_t)kind, memory_order_release);
    }
    return number;
}

static void other(int fd) {
    if (fd < FD_SLOTS) atomic_store_explicit(&fd_kind[fd], FD_OTHER, memory_order_release);
}

/* Learn fd: a regular file or block device outside the run directory, or a
 * connected TCP socket (its path its peer, "tcp:ADDR:PORT"), gets a number
 * and a PATH record; anything else is not checkpoint I/O. Returns its kind,
 * its number in *file. errno is left as it was. */
int learn(int fd, int32_t *file) {
    int err = errno, kind = FD_OTHER;
    struct stat st;
    char path[4096];
    if (syscall(SYS_fstat, fd, &st) != 0) goto out; /* not cached: a bad fd now may be a file later */
    if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = syscall(SYS_readlinkat, AT_FDCWD, link, path, sizeof path - 1);
        if (n < 0) n = 0;
        path[n] = 0;
        if (run_dir_len && (size_t)n >= run_dir_len && memcmp(path, run_dir, run_dir_len) == 0 &&
            (path[run_dir_len] == '/' || path[run_dir_len] == 0))
            other(fd); /* writerprof's own journals */
        else if (strncmp(path, "/proc/", 6) == 0 || strncmp(path, "/sys/", 5) == 0)
            other(fd); /* the kernel's files (a thread naming itself): no storage I/O */
        else
            *file = name_fd(fd, (kind = FD_FILE), path, (size_t)n);
    } else if (S_ISSOCK(st.st_mode)) {
        int peer = peer_of(fd, path, sizeof path);
        if (peer > 0)
            *file = name_fd(fd, (kind = FD_PEER), path, (size_t)peer);
        else if (peer == 0)
            other(fd);
        /* (< 0: a TCP socket not connected yet, not cached: learned again at its next call) */
    } else {
        other(fd);
    }
out:
    errno = err;
    return kind;
}

/* --- the records ---------------------------------------------------------- */

/* The faults since this thread's last reading: every fault lands on one record. */
static void faults(int32_t *minflt, int32_t *majflt, int read) {
    *minflt = *majflt = 0;
    if (!read && faults_read) return;
    struct rusage u;
    if (getrusage(RUSAGE_THREAD, &u) != 0) return;
    if (faults_read) {
        *minflt = (int32_t)(u.ru_minflt - seen_minflt);
        *majflt = (int32_t)(u.ru_majflt - seen_majflt);
    }
    faults_read = 1;
    seen_minflt = u.ru_minflt;
    seen_majflt = u.ru_majflt;
}

/* At a call's start FAULT_READ_MIN_NS or more after the last reading
 * (begin_ns): the faults since are no call's. */
void skip_faults(int64_t start) {
    int32_t minflt, majflt;
    faults(&minflt, &majflt, 1);
    faults_due = start + FAULT_READ_MIN_NS;
}

void put(uint8_t op, int fd, int32_t file, int64_t start, int64_t end, int64_t result,
                const void *addr, int err, uint32_t count) {
    struct record r;
    int long_call = end - start >= FAULT_READ_MIN_NS;
    faults(&r.minflt, &r.majflt, long_call);
    if (long_call) faults_due = end + FAULT_READ_MIN_NS;
    r.op = op;
    r.flags = result < 0 ? 1 : 0;
    r.cpu = (int16_t)sched_getcpu();
    r.fd = fd;
    r.file = file;
    r.tid = tid();
    r.start_ns = start;
    r.end_ns = end;
    r.result = result;
    r.addr = (uint64_t)(uintptr_t)addr;
    r.err = result < 0 ? err : 0;
    r.count = count;
    emit(&r, 1);
}

/* --- opening and closing -------------------------------------------------- */

/* A new fd: learned now (its path is certain only now), its open recorded. */
void opened(int fd, int flags, int64_t start, int64_t end) {
    int err = errno;
    busy = 1;
    forget(fd);
    int32_t file = -1;
    if (learn(fd, &file) == FD_FILE) put(OP_OPEN, fd, file, start, end, fd, NULL, 0, (uint32_t)flags);
    busy = 0;
    errno = err;
}

int closing(int fd, int *file) {
    *file = -1;
    if (enabled && vfork_child()) return 0;
    if (!active()) { forget(fd); return 0; }
    busy = 1;
    uint8_t kind = fd >= 0 && fd < FD_SLOTS ? atomic_load(&fd_kind[fd]) : FD_UNKNOWN;
    if (kind == FD_FILE || kind == FD_PEER) *file = atomic_load(&fd_file[fd]);
    forget(fd);
    busy = 0;
    return *file >= 0;
}

/* --- start ---------------------------------------------------------------- */

__attribute__((constructor)) static void start(void) {
    int err = errno;
    const char *run = getenv("WRITERPROF_RUN");
    if (run && *run && strlen(run) < sizeof run_dir) {
        /* as the kernel names it (/proc/self/fd links): the probe's own journals are told apart by it */
        if (!realpath(run, run_dir)) snprintf(run_dir, sizeof run_dir, "%s", run);
        run_dir_len = strlen(run_dir);
        while (run_dir_len > 1 && run_dir[run_dir_len - 1] == '/') run_dir[--run_dir_len] = 0;
        write_through = !plain(run_dir);
        const char *id = getenv("WRITERPROF_RUN_ID");
        if (id && strlen(id) < sizeof run_id) snprintf(run_id, sizeof run_id, "%s", id);
        begin(1, 0);
        pthread_atfork(NULL, NULL, after_fork_child);
    }
    errno = err;
}
