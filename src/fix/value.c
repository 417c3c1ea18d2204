/* Value decoders: integers, fixed-point prices, UTCTimestamps, and a
 * price's float64 (correctly rounded, through tickwire/decimal.h).  The
 * fixed-point value is exact or an error. */
#include <errno.h>

#include "fix_internal.h"
#include "tickwire/decimal.h"

/* Parses the digits v[0..n) into *acc: 0, -EINVAL on a non-digit, -ERANGE
 * for a value above INT64_MAX. */
static int digits(const char *v, uint32_t n, uint64_t *acc)
{
    uint64_t a = 0;
    uint32_t i = 0;
    if (n <= 18) {
        /* 18 digits stay below 10^18 < 2^63: no overflow check needed. */
        for (; i + 8 <= n; i += 8) {
            int ok = 1;
            uint64_t d = tw__swar_digits(tw__load64(v + i), 8, &ok);
            if (!ok)
                return -EINVAL;
            a = a * 100000000ull + d;
        }
        for (; i < n; i++) {
            unsigned c = (unsigned char)v[i] - '0';
            if (c > 9)
                return -EINVAL;
            a = a * 10 + c;
        }
        *acc = a;
        return 0;
    }
    int rc = 0;
    for (; i < n; i++) {
        unsigned c = (unsigned char)v[i] - '0';
        if (c > 9)
            return -EINVAL;
        if (a > ((uint64_t)INT64_MAX - c) / 10)
            rc = -ERANGE; /* keep looking: a later non-digit makes it -EINVAL */
        else
            a = a * 10 + c;
    }
    *acc = a;
    return rc;
}

int tw_fix_to_i64(const char *v, uint32_t len, int64_t *out)
{
    uint32_t neg = len > 0 && v[0] == '-';
    if (len <= neg)
        return -EINVAL;
    uint64_t a = 0;
    int rc = digits(v + neg, len - neg, &a);
    if (rc != 0)
        return rc;
    *out = neg ? -(int64_t)a : (int64_t)a;
    return 0;
}

static const int64_t pow10_tab[19] = {
    1ll, 10ll, 100ll, 1000ll, 10000ll, 100000ll, 1000000ll, 10000000ll, 100000000ll,
    1000000000ll, 10000000000ll, 100000000000ll, 1000000000000ll, 10000000000000ll,
    100000000000000ll, 1000000000000000ll, 10000000000000000ll, 100000000000000000ll,
    1000000000000000000ll,
};

/* INT64_MAX / 10^d: the largest integer part with d decimals. */
static const uint64_t max_int_tab[19] = {
    9223372036854775807ull, 922337203685477580ull, 92233720368547758ull, 9223372036854775ull,
    922337203685477ull, 92233720368547ull, 9223372036854ull, 922337203685ull, 92233720368ull,
    9223372036ull, 922337203ull, 92233720ull, 9223372ull, 922337ull, 92233ull, 9223ull, 922ull,
    92ull, 9ull,
};

int tw_fix_to_fixed(const char *v, uint32_t len, unsigned decimals, int64_t *out)
{
    if (decimals > 18)
        return -EINVAL;
    uint32_t neg = len > 0 && v[0] == '-';
    uint32_t i = neg;
    uint32_t int_end = i;
    while (int_end < len && v[int_end] != '.')
        int_end++;
    uint32_t nint = int_end - i;
    uint32_t frac = int_end < len ? int_end + 1 : len;
    uint32_t nfrac = len - frac;
    /* "5.", ".5" and "-" are not prices; "5" is. */
    if (nint == 0 || (int_end < len && nfrac == 0))
        return -EINVAL;
    uint64_t a = 0;
    int rc = digits(v + i, nint, &a);
    if (rc == -EINVAL)
        return rc;
    /* Fractional digits past `decimals` must all be zeros: a value with
     * more is valid but not representable (-ERANGE), unless some byte is
     * not a digit at all (-EINVAL). */
    uint32_t keep = nfrac < decimals ? nfrac : decimals;
    for (uint32_t k = keep; k < nfrac; k++) {
        unsigned c = (unsigned char)v[frac + k] - '0';
        if (c > 9)
            return -EINVAL;
        if (c != 0)
            rc = -ERANGE;
    }
    uint64_t f = 0;
    if (digits(v + frac, keep, &f) != 0)
        return -EINVAL;
    if (rc != 0)
        return rc;
    int64_t scale = pow10_tab[decimals];
    int64_t fscale = pow10_tab[decimals - keep];
    /* a * scale + f * fscale must fit in int64 (the bound is a table: a
     * division here would cost more than the rest of the decode). */
    if (a > max_int_tab[decimals])
        return -ERANGE;
    int64_t r = (int64_t)a * scale;
    int64_t fr = (int64_t)f * fscale; /* < scale, cannot overflow */
    if (r > INT64_MAX - fr)
        return -ERANGE;
    r += fr;
    *out = neg ? -r : r;
    return 0;
}

const double tw__fix_pow10_f64[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* The float64 of a price text that tw_fix_to_fixed's syntax accepts:
 * "[-]digits[.digits]".  With at most 19 significant digits making an
 * integer m < 2^53 and at most 22 decimals, m / 10^k is the correctly
 * rounded value (both operands exact, one rounding: Clinger's fast path);
 * everything else goes to tw_decimal_to_double with the leading zeros of
 * the integer part and the trailing zeros of the fraction cut off (they do
 * not change the value and could push a valid price past its input
 * limit).  0, or -EINVAL if the trimmed text is still too long. */
static int px_double(const char *v, uint32_t len, double *out)
{
    uint32_t neg = v[0] == '-';
    uint64_t m = 0;
    unsigned sig = 0, frac = 0;
    int dot = 0;
    for (uint32_t i = neg; i < len; i++) {
        if (v[i] == '.') {
            dot = 1;
            continue;
        }
        unsigned d = (unsigned)(v[i] - '0');
        frac += (unsigned)dot;
        if (sig == 0 && d == 0)
            continue; /* a leading zero */
        if (++sig > 19)
            break;
        m = m * 10 + d;
    }
    if (sig <= 19 && m < (1ull << 53) && frac <= 22) {
        double x = (double)m / tw__fix_pow10_f64[frac];
        *out = neg ? -x : x;
        return 0;
    }
    uint32_t a = neg, b = len;
    while (a + 1 < b && v[a] == '0' && v[a + 1] != '.')
        a++;
    const char *pt = memchr(v, '.', len);
    if (pt) {
        while (b > (uint32_t)(pt - v) + 2 && v[b - 1] == '0')
            b--;
    }
    char tmp[TW_DECIMAL_IN_MAX];
    size_t n = 0;
    if (neg)
        tmp[n++] = '-';
    if (b - a + n > sizeof(tmp))
        return -EINVAL;
    memcpy(tmp + n, v + a, b - a);
    n += b - a;
    return tw_decimal_to_double(tmp, n, out) == 0 ? 0 : -EINVAL;
}

int tw__fix_px(const char *v, uint32_t len, unsigned decimals, int64_t *fx, double *f64)
{
    int rc = tw_fix_to_fixed(v, len, decimals, fx);
    if (rc == -EINVAL)
        return rc;
    if (rc != 0)
        *fx = TW_FIX_PX_NONE;
    if (px_double(v, len, f64) != 0)
        return -EINVAL;
    return rc;
}

int tw_fix_to_qty(const char *v, uint32_t len, int64_t *out)
{
    return tw_fix_to_fixed(v, len, 0, out);
}

int tw_fix_to_bool(const char *v, uint32_t len, int *out)
{
    if (len != 1 || (v[0] != 'Y' && v[0] != 'N'))
        return -EINVAL;
    *out = v[0] == 'Y';
    return 0;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar
 * (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static unsigned days_in_month(unsigned y, unsigned m)
{
    static const unsigned char dm[13] = { 0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    unsigned leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return dm[m] + (m == 2 && leap);
}

/* 0x80 in each byte of w under mask (0xFF per byte to check) that is not
 * an ASCII digit: b < 0x80, b + 0x50 >= 0x80 (b >= '0') and b + 0x46 <
 * 0x80 (b <= '9'), as tw__swar_digits checks; adding to the low seven bits
 * never carries into the next byte. */
static inline uint64_t non_digits(uint64_t w, uint64_t mask)
{
    uint64_t x = w & 0x7F7F7F7F7F7F7F7Full;
    uint64_t good = (x + 0x5050505050505050ull) & ~(x + 0x4646464646464646ull) & ~w;
    return ~good & mask & TW__HIGHS;
}

int tw_fix_to_epoch_ns(const char *v, uint32_t len, int64_t *out)
{
    return tw__fix_epoch_ns(v, len, out, NULL);
}

int tw__fix_epoch_ns(const char *v, uint32_t len, int64_t *out, tw__fix_day_cache *c)
{
    /* YYYYMMDD-HH:MM:SS is 17 bytes; then ".sss", ".ssssss" or
     * ".sssssssss". */
    if (len != 17 && len != 21 && len != 24 && len != 27)
        return -EINVAL;
    /* Two loads hold it all: v[0..8) the date, v[9..17) "HH:MM:SS".  Each
     * pair of digits becomes its number in one multiply-add (byte i of
     * d * 10 + (d >> 8) is 10 * digit i + digit i + 1), so there is no
     * eight-digit number to divide back into year, month and day. */
    uint64_t wd = tw__load64(v), wt = tw__load64(v + 9);
    uint64_t bad = non_digits(wd, ~0ull) | non_digits(wt, 0xFFFF00FFFF00FFFFull) |
                   ((wt & 0x0000FF0000FF0000ull) ^ 0x00003A00003A0000ull) |
                   (uint64_t)(v[8] != '-') | (uint64_t)(len > 17 && v[17] != '.');
    uint64_t d = wd & 0x0F0F0F0F0F0F0F0Full;
    d = d * 10 + (d >> 8);
    unsigned y = (unsigned)(d & 0xFF) * 100 + (unsigned)((d >> 16) & 0xFF);
    unsigned mo = (unsigned)((d >> 32) & 0xFF), dd = (unsigned)((d >> 48) & 0xFF);
    uint64_t t = wt & 0x0F0F000F0F000F0Full;
    t = t * 10 + (t >> 8);
    unsigned h = (unsigned)(t & 0xFF), mi = (unsigned)((t >> 24) & 0xFF),
             s = (unsigned)((t >> 48) & 0xFF);
    uint64_t frac = 0;
    if (len > 17) {
        /* The last eight bytes hold the fraction's last k <= 8 digits at
         * their top; a ninth digit (ns) is v[18]. */
        int ok = 1;
        unsigned k = len - 18 < 8 ? len - 18 : 8;
        uint64_t w = tw__load64(v + len - 8) >> (8 * (8 - k));
        frac = tw__swar_digits(w, k, &ok);
        bad |= (uint64_t)!ok;
        if (len == 27) {
            unsigned d0 = (unsigned char)v[18] - '0';
            bad |= (uint64_t)(d0 > 9);
            frac += (uint64_t)d0 * 100000000ull;
        } else {
            frac *= len == 21 ? 1000000ull : 1000ull;
        }
    }
    /* Second 60 is a leap second, which FIX allows. */
    if (bad || h > 23 || mi > 59 || s > 60)
        return -EINVAL;
    int64_t days;
    if (c && c->date == wd) {
        days = c->days; /* a date already checked and counted */
    } else {
        if (mo - 1 > 11u || dd - 1 >= days_in_month(y, mo))
            return -EINVAL;
        days = days_from_civil((int64_t)y, mo, dd);
        if (c) {
            c->date = wd;
            c->days = days;
        }
    }
    int64_t secs = days * 86400 + (int64_t)(h * 3600 + mi * 60 + s);
    /* int64 ns spans 1677-09-21 to 2262-04-11; outside is not a time we
     * can represent, so it is an error rather than an overflow. */
    if (secs > INT64_MAX / 1000000000ll - 1 || secs < INT64_MIN / 1000000000ll + 1)
        return -ERANGE;
    *out = secs * 1000000000ll + (int64_t)frac;
    return 0;
}
