/* The check of the engine's C tests: on failure it names the file, line
 * and condition, marks the run failed (g_fail) and returns from the test
 * function, whose later steps would only fail in its wake. */
#ifndef TW_TESTS_ENGINE_TEST_CHECK_H
#define TW_TESTS_ENGINE_TEST_CHECK_H

#include <stdio.h>

static int g_fail;

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);  \
            g_fail = 1;                                                            \
            return;                                                                \
        }                                                                          \
    } while (0)

#endif
