/* A driver of probes/interposer/http.c for tests/unit/test_http_lines.py.
 * stdin: cases, each a 4-byte little-endian length then its bytes. For each
 * case it prints one line, "TEXT_LENGTH CONTENT_LENGTH STATUS CAPPED TEXT"
 * (CAPPED: the text's length into an output of CAP bytes), and runs both
 * functions on every prefix of it: each buffer, input and output, is
 * allocated at its exact size, so that under AddressSanitizer a read or a
 * write past one ends the driver. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define CAP 16

static void line(const char *data, size_t n, int print) {
    char *exact = malloc(n ? n : 1), *out = malloc(REQUEST_TEXT_MAX), *capped = malloc(CAP);
    memcpy(exact, data, n);
    int64_t length, ignored;
    size_t len = http_request(exact, n, out, REQUEST_TEXT_MAX, &length);
    size_t short_len = http_request(exact, n, capped, CAP, &ignored);
    int status = http_status(exact, n);
    if (print) {
        printf("%zu %lld %d %zu ", len, (long long)length, status, short_len);
        fwrite(out, 1, len, stdout);
        putchar('\n');
    }
    free(exact);
    free(out);
    free(capped);
}

int main(void) {
    unsigned char size[4];
    while (fread(size, 1, 4, stdin) == 4) {
        size_t n = size[0] | size[1] << 8 | size[2] << 16 | (size_t)size[3] << 24;
        char *data = malloc(n ? n : 1);
        if (fread(data, 1, n, stdin) != n) return 2;
        for (size_t k = 0; k <= n; k++) line(data, k, k == n);
        free(data);
    }
    return 0;
}
