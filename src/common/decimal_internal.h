/* What the decimal conversions (decimal.c, decimal_ref.c), the table
 * generator (decimal_gen_pow10.c), their tests and fuzzers share.  Not part
 * of the public API. */
#ifndef TW_COMMON_DECIMAL_INTERNAL_H
#define TW_COMMON_DECIMAL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* The 128-bit power-of-ten table covers 10^q for q in [MIN, MAX]:
 * parsing needs [-342, 308] (19 significant digits times 10^q between the
 * smallest subnormal and DBL_MAX), Schubfach 10^-k for k in [-324, 292]. */
#define TW__POW10_MIN (-342)
#define TW__POW10_MAX 324

/* Entry q of the table: T = floor(10^q * 2^(127 - tw__flog2_pow10(q))),
 * so 2^127 <= T < 2^128 (T is 10^q's binary significand truncated to 128
 * bits; exact for 0 <= q <= 55).  out[0] is the high word. */
void tw__decimal_pow10(int q, uint64_t out[2]);

/* Exact integer logarithms by fixed-point multiplication, for the ranges
 * the conversions use (test_decimal_table.c checks every value in them
 * against big integers).  The right shift of a negative product is an
 * arithmetic shift (a floor) with GCC and Clang, which is what we want. */
/* floor(log2(10^q)) for |q| <= 400. */
static inline int tw__flog2_pow10(int q)
{
    return (int)(((int64_t)q * 913124641741LL) >> 38);
}
/* floor(log10(2^e)) for |e| <= 1100. */
static inline int tw__flog10_pow2(int e)
{
    return (int)(((int64_t)e * 661971961083LL) >> 41);
}
/* floor(log10(3/4 * 2^e)) for |e| <= 1100. */
static inline int tw__flog10_three_quarters_pow2(int e)
{
    return (int)(((int64_t)e * 661971961083LL - 274743187321LL) >> 41);
}

/* The shortest decimal f * 10^e that rounds to the finite x > 0 (ties
 * between two shortest: the closer to x, then the even f).  f may end in
 * zeros; 1 <= f < 10^18. */
void tw__decimal_shortest(double x, uint64_t *f, int *e);

/* The slow references the fast conversions are tested against (and the
 * fuzzers compare with): strtod on a checked copy, and the shortest
 * precision p whose nearest p-digit decimal (printf "%.*e", or one of its
 * two p-digit neighbours) converts back to x under strtod, the closest to
 * x when several do.  Same contracts as tw_decimal_to_double and
 * tw_double_to_decimal; they use libc and are not fast. */
int tw__decimal_to_double_ref(const char *s, size_t len, double *out);
size_t tw__double_to_decimal_ref(double x, char *buf);

/* Rewrites printf's "%e" or "%g" output ("-d.ddde+XX", "123.45") of a
 * finite number as fixed notation without trailing fraction zeros into out
 * (TW_DECIMAL_MAX bytes hold any "%.17g" of a double; a larger exponent
 * wants more), NUL-terminated; returns the length.
 * For the reference formatter and for tests that put "%.17g" in FIX form. */
size_t tw__decimal_fixed_from_printf(const char *s, char *out);

#endif
