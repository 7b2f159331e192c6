/* The analysis's interval kernels (writerprof.analysis.kernels loads them
 * with ctypes): plain C, no Python API, built as a shared library when the
 * package installs. One pass over the arrays where numpy takes several, each
 * with a temporary the size of the queries. */

#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

/* The first index in [lo, hi) whose value is above x, else hi (a sorted). */
static int64_t upper(const int64_t *a, int64_t lo, int64_t hi, int64_t x)
{
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* x - y as int64 does it in numpy: wrapping, not undefined. */
static int64_t minus(int64_t x, int64_t y)
{
    return (int64_t)((uint64_t)x - (uint64_t)y);
}

/* out[i]: the time inside the intervals [starts[j], ends[j]) (n of them,
 * sorted and disjoint: their ends in order) up to t[i], for m times in any
 * order. A time after the one before it is found by galloping on from the
 * interval found for that one (queries in order, the usual: a pass over the
 * intervals). done: room for n + 1 sums, the caller's (numpy's memory: no
 * allocation here to fail). */
EXPORT void wp_time_inside(const int64_t *starts, const int64_t *ends, int64_t n,
                           const int64_t *t, int64_t m, int64_t *out, int64_t *done)
{
    done[0] = 0; /* done[j]: the time inside the first j intervals (n + 1 of them) */
    for (int64_t j = 0; j < n; j++)
        done[j + 1] = (int64_t)((uint64_t)done[j] + (uint64_t)minus(ends[j], starts[j]));
    int64_t k = 0; /* intervals ended by the time before: ends[k - 1] <= that time */
    for (int64_t i = 0; i < m; i++) {
        int64_t x = t[i];
        if (i == 0 || x >= t[i - 1]) {
            int64_t lo = k, hi = k, step = 1;
            while (hi < n && ends[hi] <= x) {
                lo = hi + 1;
                hi += step;
                step <<= 1;
            }
            k = upper(ends, lo, hi < n ? hi : n, x);
        } else {
            k = upper(ends, 0, k, x);
        }
        int64_t part = 0;
        if (k < n) { /* the interval in progress, if x is in it */
            int64_t length = minus(ends[k], starts[k]);
            part = minus(x, starts[k]);
            part = part > 0 ? part : 0;
            part = part < length ? part : length;
        }
        out[i] = (int64_t)((uint64_t)done[k] + (uint64_t)part);
    }
}

/* The union of n intervals [starts[i], ends[i]), taken in order of their
 * starts (order: their rows in that order, or NULL when they are in it), as
 * sorted disjoint intervals into out_starts and out_ends (n long at most):
 * an interval that starts after every one before it has ended starts a new
 * one, else it joins them (one that starts where they end too). Returns how
 * many. */
EXPORT int64_t wp_merged(const int64_t *starts, const int64_t *ends, int64_t n, const int64_t *order,
                         int64_t *out_starts, int64_t *out_ends)
{
    int64_t found = 0, end = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t row = order ? order[i] : i;
        if (i == 0 || starts[row] > end) {
            if (i > 0)
                out_ends[found - 1] = end;
            out_starts[found++] = starts[row];
            end = ends[row];
        } else if (ends[row] > end) {
            end = ends[row];
        }
    }
    if (found > 0)
        out_ends[found - 1] = end;
    return found;
}
