/* The checks every C test of the project uses (one header, one meaning).
 *
 *   CHECK(c)           on failure: names file, line and condition, counts
 *                      the failure, and goes on (one run reports every
 *                      failing case);
 *   CHECKF(c, fmt...)  the same with a printf-style detail;
 *   CHECK_EQ(a, b)     integers, both values printed on failure;
 *   REQUIRE(c)         CHECK, then returns from the calling void function
 *                      (for steps whose later checks would only fail in
 *                      its wake);
 *   tw_check_done(name) prints "name: ok" or the failure count and gives
 *                      the exit code for main().
 */
#ifndef TW_TESTS_TW_CHECK_H
#define TW_TESTS_TW_CHECK_H

#include <stdio.h>

/* One counter per test program: static, unless the program's files share
 * it (TW_CHECK_SHARED: one file defines `int tw_check_failures;`). */
#ifdef TW_CHECK_SHARED
extern int tw_check_failures;
#else
static int tw_check_failures;
#endif

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);  \
            tw_check_failures++;                                                   \
        }                                                                          \
    } while (0)

#define CHECKF(c, ...)                                                             \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #c);  \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
            tw_check_failures++;                                                   \
        }                                                                          \
    } while (0)

#define CHECK_EQ(a, b)                                                             \
    do {                                                                           \
        long long a_ = (long long)(a), b_ = (long long)(b);                        \
        if (a_ != b_) {                                                            \
            fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", __FILE__,  \
                    __LINE__, #a, a_, #b, b_);                                     \
            tw_check_failures++;                                                   \
        }                                                                          \
    } while (0)

#define REQUIRE(c)                                                                 \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);  \
            tw_check_failures++;                                                   \
            return;                                                                \
        }                                                                          \
    } while (0)

/* TW_TEST_ASAN / TW_TEST_TSAN: defined in the sanitizer builds, for tests
 * that scale their work down there or skip what a sanitizer changes (it
 * intercepts mlockall, TSan makes system calls of its own). */
#if defined(__SANITIZE_ADDRESS__)
#define TW_TEST_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#define TW_TEST_TSAN 1
#endif
#if defined(__has_feature)
#if __has_feature(address_sanitizer) && !defined(TW_TEST_ASAN)
#define TW_TEST_ASAN 1
#endif
#if __has_feature(thread_sanitizer) && !defined(TW_TEST_TSAN)
#define TW_TEST_TSAN 1
#endif
#endif

static inline int tw_check_done(const char *name)
{
    if (tw_check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, tw_check_failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

#endif
