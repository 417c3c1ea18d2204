/* The slow, obviously correct decimal conversions the fast ones are tested
 * against (decimal_internal.h): strtod on a checked copy, and a shortest
 * search with printf's correctly rounded "%.*e" digits and strtod as the
 * judge of what round-trips.  Both use libc in the C locale. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/decimal_internal.h"
#include "tickwire/decimal.h"

int tw__decimal_to_double_ref(const char *s, size_t len, double *out)
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

size_t tw__decimal_fixed_from_printf(const char *s, char *out)
{
    size_t o = 0;
    const char *p = s;
    if (*p == '-')
        out[o++] = *p++;
    /* The digits, and the position of the point among them. */
    char dig[TW_DECIMAL_MAX];
    int nd = 0, point = -1;
    for (; *p && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.')
            point = nd;
        else if (nd < (int)sizeof(dig))
            dig[nd++] = *p;
    }
    if (point < 0)
        point = nd;
    if (*p)
        point += atoi(p + 1);
    int lead = 0;
    while (lead < nd && dig[lead] == '0')
        lead++;
    while (nd > lead && dig[nd - 1] == '0')
        nd--;
    if (nd == lead) {
        out[o++] = '0';
        out[o] = 0;
        return o;
    }
    point -= lead;
    const char *d = dig + lead;
    int n = nd - lead;
    if (point <= 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int k = 0; k < -point; k++)
            out[o++] = '0';
        memcpy(out + o, d, (size_t)n);
        o += (size_t)n;
    } else if (point >= n) {
        memcpy(out + o, d, (size_t)n);
        o += (size_t)n;
        for (int k = n; k < point; k++)
            out[o++] = '0';
    } else {
        memcpy(out + o, d, (size_t)point);
        o += (size_t)point;
        out[o++] = '.';
        memcpy(out + o, d + point, (size_t)(n - point));
        o += (size_t)(n - point);
    }
    out[o] = 0;
    return o;
}

/* 1 if the decimal m * 10^e (with x's sign) converts back to x. */
static int round_trips(double x, unsigned long long m, int e, char *text, size_t cap)
{
    snprintf(text, cap, "%s%llue%d", signbit(x) ? "-" : "", m, e);
    return strtod(text, NULL) == x;
}

/* The p-digit decimal closest to x among those that convert back to x,
 * into text (exponent form); 0 if there is none.  If any does, the nearest
 * p-digit decimal (printf's, correctly rounded) does, unless x is a power
 * of two: only then is the interval of the numbers that round to x
 * lopsided (its lower half is half as wide), and the one p-digit decimal
 * inside may be the first one across x from the nearest. */
static int closest_with(double x, int p, char *text, size_t cap)
{
    snprintf(text, cap, "%.*e", p - 1, x);
    if (strtod(text, NULL) == x)
        return 1;
    int e2;
    if (frexp(fabs(x), &e2) != 0.5)
        return 0;
    unsigned long long m = 0, one = 1;
    for (const char *q = text; *q && *q != 'e'; q++)
        if (*q >= '0' && *q <= '9')
            m = m * 10 + (unsigned long long)(*q - '0');
    for (int k = 1; k < p; k++)
        one *= 10;
    int ex = atoi(strchr(text, 'e') + 1) - (p - 1); /* text = m * 10^ex */
    char c[48];
    if (round_trips(x, m + 1, ex, c, sizeof c) ||
        /* Below 10^(p-1) the p-digit decimals are ten times as dense. */
        (m == one ? round_trips(x, 10 * one - 1, ex - 1, c, sizeof c)
                  : round_trips(x, m - 1, ex, c, sizeof c))) {
        snprintf(text, cap, "%s", c);
        return 1;
    }
    return 0;
}

size_t tw__double_to_decimal_ref(double x, char *buf)
{
    if (isnan(x))
        return (size_t)sprintf(buf, "nan");
    if (isinf(x))
        return (size_t)sprintf(buf, x < 0 ? "-inf" : "inf");
    if (x == 0)
        return (size_t)sprintf(buf, signbit(x) ? "-0" : "0");
    /* The fewest digits p for which some p-digit decimal converts back to x.
     * A p-digit one is also a (p+1)-digit one, so "some p-digit decimal
     * does" is false up to a p and true from there on: bisect.  17 digits
     * always do. */
    char text[48];
    int lo = 1, hi = 17;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (closest_with(x, mid, text, sizeof text))
            hi = mid;
        else
            lo = mid + 1;
    }
    TW_VERIFY(closest_with(x, lo, text, sizeof text));
    return tw__decimal_fixed_from_printf(text, buf);
}
