/* Exact decimal <-> float64 (tickwire/decimal.h).
 *
 * This first version is the slow, obviously correct one: strtod on a
 * checked copy for parsing, and for formatting the shortest %.*e precision
 * that round-trips through strtod, rewritten in fixed notation.  It is the
 * reference the fast conversions are tested against. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/decimal.h"

int tw_decimal_to_double(const char *s, size_t len, double *out)
{
    if (len > TW_DECIMAL_IN_MAX)
        return -E2BIG;
    size_t i = 0, digits = 0, dots = 0;
    if (i < len && s[i] == '-')
        i++;
    for (; i < len; i++) {
        if (s[i] >= '0' && s[i] <= '9')
            digits++;
        else if (s[i] == '.' && dots == 0)
            dots++;
        else
            return -EINVAL;
    }
    if (digits == 0)
        return -EINVAL;
    char buf[TW_DECIMAL_IN_MAX + 1];
    memcpy(buf, s, len);
    buf[len] = 0;
    *out = strtod(buf, NULL);
    return 0;
}

/* Rewrites "d.ddde[+-]XX" (the %.*e form) as fixed notation into out. */
static size_t fixed_from_exp(const char *e, char *out)
{
    size_t o = 0;
    const char *p = e;
    if (*p == '-')
        out[o++] = *p++;
    char dig[24];
    size_t nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            dig[nd++] = *p;
    int exp10 = atoi(p + 1);
    while (nd > 1 && dig[nd - 1] == '0')
        nd--;
    /* value = 0.d1d2...dn * 10^(exp10 + 1) */
    int point = exp10 + 1;
    if (point <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int k = 0; k < -point; k++)
            out[o++] = '0';
        memcpy(out + o, dig, nd);
        o += nd;
    } else if ((size_t)point >= nd) {
        memcpy(out + o, dig, nd);
        o += nd;
        for (size_t k = nd; k < (size_t)point; k++)
            out[o++] = '0';
    } else {
        memcpy(out + o, dig, (size_t)point);
        o += (size_t)point;
        out[o++] = '.';
        memcpy(out + o, dig + point, nd - (size_t)point);
        o += nd - (size_t)point;
    }
    out[o] = 0;
    return o;
}

size_t tw_double_to_decimal(double x, char *buf)
{
    if (isnan(x))
        return (size_t)sprintf(buf, "nan");
    if (isinf(x))
        return (size_t)sprintf(buf, x < 0 ? "-inf" : "inf");
    if (x == 0)
        return (size_t)sprintf(buf, signbit(x) ? "-0" : "0");
    char e[40];
    for (int prec = 0; prec < 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec, x);
        if (strtod(e, NULL) == x)
            return fixed_from_exp(e, buf);
    }
    snprintf(e, sizeof(e), "%.16e", x);
    return fixed_from_exp(e, buf);
}
