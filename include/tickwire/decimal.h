/* Exact decimal <-> float64 conversion in FIX's `float` form (fix.md,
 * "Parser"; live.md, "Prices are exact"): an optional '-', digits, an
 * optional '.' and digits, no exponent, no leading '+', no spaces.
 *
 * - tw_decimal_to_double: the correctly rounded double (round half to
 *   even), i.e. what strtod gives in the C locale, without locale and
 *   without allocation.  Eisel-Lemire on the first 19 significant digits
 *   with a 128-bit power-of-ten table; the rare inputs it cannot decide
 *   (a product too close to a halfway point, or more than 19 significant
 *   digits where the rest matters) are settled exactly with big integers
 *   on the stack.
 * - tw_double_to_decimal: the shortest such text that converts back to the
 *   same double (Ryu's digits; numpy's format_float_positional(x,
 *   unique=True, trim='-')), written out in fixed notation: 100,
 *   100.0000000000001, 0.00001.  Schubfach (Giulietti) finds the digits.
 *
 * These are what every price on the venue protocol goes through, both
 * ways, so the close a strategy sees is bit for bit the venue's.  All the
 * functions are thread-safe (no state, no locale) and never allocate. */
#ifndef TICKWIRE_DECIMAL_H
#define TICKWIRE_DECIMAL_H

#include "tickwire/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest text tw_double_to_decimal writes, NUL included: the fixed
 * notation of a subnormal has at most "-0." then 324 fraction digits (the
 * smallest, 5e-324, is 323 zeros and a 5); of -DBL_MAX, 310 bytes. */
#define TW_DECIMAL_MAX 336

/* Longest input tw_decimal_to_double accepts (longer text is -E2BIG):
 * enough for any double written out in full (767 significant digits are
 * the most a double's exact value has, plus zeros, sign and point), and for
 * the exact halfway point between two subnormals (1075 fraction digits). */
#define TW_DECIMAL_IN_MAX 1100

/* Parses s[0..len) (not NUL-terminated).  Returns 0 with *out set;
 * -EINVAL if the text is not a decimal in the form above (empty, a lone
 * '-' or '.', a second '.', any other byte); -E2BIG if len exceeds
 * TW_DECIMAL_IN_MAX.  Values beyond DBL_MAX round to +-Inf and values below
 * the smallest subnormal to +-0, as strtod does (both still return 0: the
 * caller decides whether such a price is acceptable).  "-0" is -0.0. */
int tw_decimal_to_double(const char *s, size_t len, double *out);

/* tw_decimal_to_double with the reason for a refusal in err (may be
 * NULL): "byte 3 ('x') is not a digit or '.'", "a second '.' at byte 4",
 * "no digits", "empty", "longer than 1100 bytes".  Same return values. */
int tw_decimal_parse(const char *s, size_t len, double *out, tw_error *err);

/* For a field scanner: parses the longest decimal at the start of
 * s[0..len) and does not look at what follows it (a FIX scanner checks that
 * the next byte is the SOH).  Returns bytes consumed (> 0) with *out set;
 * -1 malformed: no digit at the start ("", "-", ".", "x"), or a number
 * longer than TW_DECIMAL_IN_MAX bytes.  Never -2: the caller has framed the
 * field before converting it.  "1.2.3" consumes 3, "7.\001" consumes 2. */
int tw_decimal_scan(const char *s, size_t len, double *out);

/* Writes the shortest round-trip text of x into buf (TW_DECIMAL_MAX bytes
 * at least), NUL-terminated, and returns its length.  -0.0 is "-0"; NaN is
 * "nan" and +-Inf "inf"/"-inf" (not FIX values: callers that put prices on
 * the wire never pass them). */
size_t tw_double_to_decimal(double x, char *buf);

/* The same text written into buf[0..cap) without a NUL, for builders that
 * append to a message: returns its length (1..TW_DECIMAL_MAX-1), or
 * -ENOSPC (nothing written) when it is longer than cap. */
int tw_decimal_put(double x, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
