/* writerprof's I/O interposer: the HTTP/1.x request and status lines at the
 * start of the data a socket call moved. Of a request only its method and
 * its target are kept, and of the target's query string only the keys that
 * say which request of which upload it is: a presigned URL's signature,
 * credential and token never reach the journal. Every read is bounded by
 * the n bytes given (a call's data, which may end anywhere). */
#include <string.h>

#include "http.h"

static const char *const METHODS[] = {"PUT", "POST", "GET", "HEAD", "DELETE"};
/* S3's multipart upload's keys (create, part, complete) and a multi-object
 * delete's: iofile.KEPT_QUERY_KEYS. */
static const char *const KEPT[] = {"uploads", "uploadId", "partNumber", "delete"};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct text {
    char *at;
    size_t len, cap;
};

static void add(struct text *t, const char *s, size_t n) {
    if (n > t->cap - t->len) n = t->cap - t->len; /* capped: the rest is dropped */
    memcpy(t->at + t->len, s, n);
    t->len += n;
}

static int digit(char c) { return c >= '0' && c <= '9'; }
static int lower(char c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }

static int kept(const char *key, size_t n) {
    for (size_t i = 0; i < COUNT(KEPT); i++)
        if (strlen(KEPT[i]) == n && memcmp(KEPT[i], key, n) == 0) return 1;
    return 0;
}

/* The target before its query: as it is, but an absolute-form target
 * (through a proxy) without its authority's "user:password@". */
static void path_part(struct text *t, const char *s, size_t n) {
    if (n && s[0] != '/') {
        size_t at = 0;
        while (at + 3 <= n && memcmp(s + at, "://", 3) != 0) at++;
        if (at + 3 <= n) {
            size_t host = at + 3, from = host, end = host;
            for (; end < n && s[end] != '/'; end++)
                if (s[end] == '@') from = end + 1;
            add(t, s, host);
            add(t, s + from, n - from);
            return;
        }
    }
    add(t, s, n);
}

/* The query string's kept parameters (key or key=value), in their order. */
static void query_part(struct text *t, const char *q, size_t n) {
    int first = 1;
    for (size_t at = 0; at < n;) {
        size_t end = at, key = at;
        while (end < n && q[end] != '&') end++;
        while (key < end && q[key] != '=') key++;
        if (kept(q + at, key - at)) {
            add(t, first ? "?" : "&", 1);
            add(t, q + at, end - at);
            first = 0;
        }
        at = end + 1;
    }
}

/* A header line's value if the line (len bytes at l) is header `name`
 * (lower case, with its colon) with a whole decimal value, else -1. */
static int64_t header_value(const char *l, size_t len, const char *name, size_t name_len) {
    size_t i = 0;
    while (i < name_len && i < len && lower(l[i]) == name[i]) i++;
    if (i != name_len) return -1;
    size_t v = name_len, digits = 0;
    int64_t value = 0;
    while (v < len && (l[v] == ' ' || l[v] == '\t')) v++;
    for (; v < len && digit(l[v]) && digits < 18; v++, digits++) value = value * 10 + (l[v] - '0');
    while (v < len && (l[v] == ' ' || l[v] == '\t')) v++;
    return digits && v == len ? value : -1;
}

/* The request body's bytes of payload among the header lines at h (after
 * the request line's version), -1 where not there whole: Content-Length,
 * or, for an aws-chunked body (botocore over HTTPS), its
 * x-amz-decoded-content-length: the object's bytes, without the framing. */
static int64_t content_length(const char *h, size_t n) {
    static const char LENGTH[] = "content-length:", DECODED[] = "x-amz-decoded-content-length:";
    int64_t length = -1, decoded = -1;
    size_t at = 0;
    while (at < n && h[at] != '\n') at++; /* the request line's end */
    for (at++; at < n;) {
        size_t end = at;
        while (end < n && h[end] != '\n') end++;
        if (end == n) break; /* a line the data cut: its value may be too */
        size_t len = end - at;
        if (len && h[end - 1] == '\r') len--;
        if (!len) break; /* the headers' end */
        int64_t v;
        if ((v = header_value(h + at, len, LENGTH, sizeof LENGTH - 1)) >= 0) length = v;
        else if ((v = header_value(h + at, len, DECODED, sizeof DECODED - 1)) >= 0) decoded = v;
        at = end + 1;
    }
    return decoded >= 0 ? decoded : length;
}

size_t http_request(const char *d, size_t n, char *out, size_t cap, int64_t *length) {
    *length = -1;
    size_t m = 0;
    for (size_t i = 0; i < COUNT(METHODS) && !m; i++) {
        size_t len = strlen(METHODS[i]);
        if (n > len && memcmp(d, METHODS[i], len) == 0 && d[len] == ' ') m = len;
    }
    if (!m) return 0;
    size_t from = m + 1, end = from;
    for (; end < n && d[end] != ' '; end++)
        if ((unsigned char)d[end] < 0x20 || d[end] == 0x7f) return 0;
    if (end == n || end == from) return 0;
    if (d[from] != '/' && !(end - from >= 4 && memcmp(d + from, "http", 4) == 0)) return 0;
    size_t version = end + 1; /* "HTTP/1.x" after the target: a request line, not data that looks like one */
    if (n - version < 8 || memcmp(d + version, "HTTP/1.", 7) != 0 || !digit(d[version + 7])) return 0;
    struct text t = {out, 0, cap};
    add(&t, d, m + 1);
    size_t q = from;
    while (q < end && d[q] != '?' && d[q] != '#') q++;
    path_part(&t, d + from, q - from);
    if (q < end && d[q] == '?') {
        size_t stop = q + 1;
        while (stop < end && d[stop] != '#') stop++; /* a fragment, never sent by a client: dropped */
        query_part(&t, d + q + 1, stop - q - 1);
    }
    *length = content_length(d + version + 8, n - version - 8);
    return t.len;
}

int http_status(const char *d, size_t n) {
    if (n < 12 || memcmp(d, "HTTP/1.", 7) != 0 || !digit(d[7]) || d[8] != ' ') return 0;
    if (!digit(d[9]) || !digit(d[10]) || !digit(d[11])) return 0;
    if (n > 12 && d[12] != ' ' && d[12] != '\r' && d[12] != '\n') return 0;
    return (d[9] - '0') * 100 + (d[10] - '0') * 10 + (d[11] - '0');
}
