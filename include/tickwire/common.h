/* Common definitions shared by every part of tickwire. */
#ifndef TICKWIRE_COMMON_H
#define TICKWIRE_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TW_CACHE_LINE 64
#define TW_ALIGNED(n) __attribute__((aligned(n)))
#define TW_CACHE_ALIGNED TW_ALIGNED(TW_CACHE_LINE)
#define TW_LIKELY(x) __builtin_expect(!!(x), 1)
#define TW_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TW_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define TW_STATIC_ASSERT(c, m) _Static_assert(c, m)

/* TW_VERIFY is always on; TW_ASSERT only in debug builds (TW_DEBUG).  Both
 * are for our own invariants, never for input from outside the process. */
#define TW_VERIFY(c)                                                          \
    do {                                                                      \
        if (TW_UNLIKELY(!(c))) {                                              \
            fprintf(stderr, "%s:%d: verify failed: %s\n", __FILE__, __LINE__, \
                    #c);                                                      \
            abort();                                                          \
        }                                                                     \
    } while (0)
#ifdef TW_DEBUG
#define TW_ASSERT(c) TW_VERIFY(c)
#else
#define TW_ASSERT(c) ((void)0)
#endif

/* Instruction sets, one enum for every part that picks code at run time
 * (the kernel, the FIX scanner).  AUTO: the best the CPU has and the part
 * implements.  The values are stable (the Python binding passes them). */
typedef enum tw_isa {
    TW_ISA_AUTO = 0,
    TW_ISA_SCALAR = 1,
    TW_ISA_AVX2 = 2,
    TW_ISA_AVX512 = 3,
    TW_ISA_SSE2 = 4,
} tw_isa;

/* "auto", "scalar", "sse2", "avx2", "avx512" ("?" for anything else). */
const char *tw_isa_name(tw_isa isa);
/* The inverse of tw_isa_name: 0, or -EINVAL for an unknown name. */
int tw_isa_parse(const char *name, tw_isa *out);
/* 1 if this CPU can run code built for isa (AVX512: F and BW), else 0. */
int tw_cpu_has(tw_isa isa);

/* Error detail for functions that validate outside input: a negative code
 * (the same one the function returns) and a one-line message naming what
 * was wrong.  Callers may pass NULL where they only want the code. */
typedef struct tw_error {
    int code;
    char msg[200];
} tw_error;

/* Error codes beyond errno's (all returned negated). */
enum {
    TW_EBADWINDOW = 1001, /* a window outside [1, 100000] */
    TW_EBADPRICE = 1002,  /* a price <= 0 or +-Inf */
    TW_ENODATA = 1003,    /* n = 0 or no combos */
    TW_EFORMAT = 1004,    /* a file or line that does not parse */
    TW_EBADKERNEL = 1005, /* a kernel definition or plug-in refused */
    TW_EUNRECOVERABLE = 1006, /* a crashed run's state cannot be rebuilt (a journal pruned
                                 past every usable snapshot): refusing to go on */
};

/* Fills err (if not NULL) with code and a printf-style message; returns
 * code so callers can write `return tw__err(err, -EINVAL, "...")`. */
int tw__err(tw_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A static string for a code returned by any tickwire function: common's
 * own codes above, the codes a part has registered (below), else errno's
 * strerror(). */
const char *tw_strerror(int code);

/* A part's strings for its own error codes: called with a code in its
 * range, returns a static string. */
typedef const char *(*tw__strerror_fn)(int code);

/* Makes tw_strerror() answer the codes -first ... -(first + count - 1)
 * with fn.  Common depends on no part, so each part that returns codes of
 * its own registers them, from a constructor in the file that makes those
 * codes (so that any program able to see one, statically linked or not,
 * has the strings too).  Returns 0, -EINVAL for an empty range or one that
 * overlaps common's codes or an earlier registration, -ENOSPC when the
 * table (16 ranges) is full.  Thread-safe; registrations are permanent. */
int tw__strerror_register(int first, int count, tw__strerror_fn fn);

#endif
