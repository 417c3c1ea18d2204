/* Exact decimal <-> float64 conversion in FIX's `float` form (fix.md,
 * "Parser"; live.md, "Prices are exact"): an optional '-', digits, an
 * optional '.' and digits, no exponent, no leading '+', no spaces.
 *
 * - tw_decimal_to_double: the correctly rounded double (round half to
 *   even), i.e. what strtod gives in the C locale, without locale and
 *   without allocation.
 * - tw_double_to_decimal: the shortest such text that converts back to the
 *   same double (Ryu's / numpy's format_float_positional(x, unique=True)
 *   digits, written out in fixed notation: 100, 100.0000000000001, 0.00001).
 *
 * These are what every price on the venue protocol goes through, both
 * ways, so the close a strategy sees is bit for bit the venue's. */
#ifndef TICKWIRE_DECIMAL_H
#define TICKWIRE_DECIMAL_H

#include "tickwire/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest text tw_double_to_decimal writes, NUL included: the fixed
 * notation of the smallest subnormal (4.9e-324) is "0." then 323 zeros and
 * a digit; of DBL_MAX, 309 digits. */
#define TW_DECIMAL_MAX 336

/* Longest input tw_decimal_to_double accepts (longer text is -E2BIG):
 * enough for any double written out in full (767 significant digits are
 * the most a double's exact value has, plus zeros, sign and point). */
#define TW_DECIMAL_IN_MAX 1100

/* Parses s[0..len) (not NUL-terminated).  Returns 0 with *out set;
 * -EINVAL if the text is not a decimal in the form above (empty, a lone
 * '-' or '.', a second '.', any other byte); -E2BIG if len exceeds
 * TW_DECIMAL_IN_MAX.  Values beyond DBL_MAX round to +-Inf and values below
 * the smallest subnormal to +-0, as strtod does (both still return 0: the
 * caller decides whether such a price is acceptable). */
int tw_decimal_to_double(const char *s, size_t len, double *out);

/* Writes the shortest round-trip text of x into buf (TW_DECIMAL_MAX bytes
 * at least), NUL-terminated, and returns its length.  -0.0 is "-0"; NaN is
 * "nan" and +-Inf "inf"/"-inf" (not FIX values: callers that put prices on
 * the wire never pass them). */
size_t tw_double_to_decimal(double x, char *buf);

#ifdef __cplusplus
}
#endif
#endif
