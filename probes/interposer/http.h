/* writerprof's I/O interposer: the HTTP/1.x it recognizes in the data a
 * socket call moved (http.c). No state and no calls: each function reads
 * only the n bytes it is given. */
#ifndef WPIO_HTTP_H
#define WPIO_HTTP_H
#include <stddef.h>
#include <stdint.h>

/* Keep in step with probes/writerprof_probe/iofile.py. */
#define REQUEST_TEXT_MAX 4096 /* a request's "METHOD TARGET", at most */

/* Where data starts with an HTTP/1.x request line: its "METHOD TARGET" into
 * out (at most cap bytes, no NUL), the target's query string cut to the
 * keys iofile.KEPT_QUERY_KEYS, and its length returned; *length is the
 * Content-Length header's value where it is in data, else -1. 0: no request. */
size_t http_request(const char *data, size_t n, char *out, size_t cap, int64_t *length);

/* Where data starts with an HTTP/1.x status line: its status code; else 0. */
int http_status(const char *data, size_t n);

#endif
