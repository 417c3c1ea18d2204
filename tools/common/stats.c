/* Order statistics for the benchmarks (stats.h). */
#include "common/stats.h"

#include <stdlib.h>

static int cmp_f64(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void tw__sort_f64(double *v, size_t n) { qsort(v, n, sizeof(*v), cmp_f64); }

void tw__sort_u64(uint64_t *v, size_t n) { qsort(v, n, sizeof(*v), cmp_u64); }

double tw__median_f64(double *v, size_t n)
{
    if (n == 0)
        return 0;
    tw__sort_f64(v, n);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double tw__median_u64(uint64_t *v, size_t n)
{
    if (n == 0)
        return 0;
    tw__sort_u64(v, n);
    return n % 2 ? (double)v[n / 2] : 0.5 * ((double)v[n / 2 - 1] + (double)v[n / 2]);
}

static size_t rank(size_t n, double p)
{
    size_t i = (size_t)((double)n * p);
    return i < n ? i : n - 1;
}

double tw__pct_f64(const double *v, size_t n, double p) { return n ? v[rank(n, p)] : 0; }

uint64_t tw__pct_u64(const uint64_t *v, size_t n, double p) { return n ? v[rank(n, p)] : 0; }
