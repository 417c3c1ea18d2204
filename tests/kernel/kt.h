/* Helpers for the kernel's C tests, on top of the project's check macros
 * (tests/tw_check.h: CHECK, CHECKF, CHECK_EQ, REQUIRE, tw_check_done). */
#ifndef TW_KERNEL_TEST_H
#define TW_KERNEL_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tw_check.h"

/* Same double: both NaN, or the same bits (so +0 and -0 differ). */
static inline int kt_same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof(a)) == 0;
}

/* splitmix64, for test data only. */
static inline uint64_t kt_rand(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double kt_unif(uint64_t *s) { return (double)(kt_rand(s) >> 11) * 0x1.0p-53; }

/* A random walk around 100 with NaN gaps: `gaps` runs of 1..30 bars. */
static inline void kt_series(uint64_t *rs, double *x, size_t n, int gaps)
{
    double c = 100.0;
    for (size_t i = 0; i < n; i++) {
        c *= 1.0 + (kt_unif(rs) - 0.5) * 0.004;
        x[i] = c;
    }
    for (int g = 0; g < gaps && n; g++) {
        size_t at = (size_t)(kt_rand(rs) % n), len = 1 + (size_t)(kt_rand(rs) % 30);
        for (size_t i = at; i < n && i < at + len; i++)
            x[i] = NAN;
    }
}

#endif
