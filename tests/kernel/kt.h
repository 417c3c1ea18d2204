/* Tiny helpers for the kernel's C tests. */
#ifndef TW_KERNEL_TEST_H
#define TW_KERNEL_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int kt_failures;

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            kt_failures++;                                                     \
        }                                                                      \
    } while (0)

#define CHECKF(c, ...)                                                         \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #c); \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            kt_failures++;                                                     \
        }                                                                      \
    } while (0)

/* Same double: both NaN, or the same bits (so +0 and -0 differ). */
static inline int kt_same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof(a)) == 0;
}

static inline int kt_done(const char *name)
{
    if (kt_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, kt_failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
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

#endif
