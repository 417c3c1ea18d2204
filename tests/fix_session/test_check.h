/* The check of the FIX session layer's C tests: on failure it names the
 * file, line and condition, counts it in `failures` and goes on, so one
 * run reports every failing case. */
#ifndef TW_TESTS_FIX_SESSION_TEST_CHECK_H
#define TW_TESTS_FIX_SESSION_TEST_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(c)                                                                \
    do {                                                                        \
        if (!(c)) {                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                         \
        }                                                                       \
    } while (0)

#endif
