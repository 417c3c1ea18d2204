/* Value decoders: integers, fixed-point prices, UTCTimestamps.  No
 * floating point anywhere: a price is exact or an error. */
#include <errno.h>

#include "fix_internal.h"

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

int tw_fix_to_epoch_ns(const char *v, uint32_t len, int64_t *out)
{
    /* YYYYMMDD-HH:MM:SS is 17 bytes; then ".sss", ".ssssss" or
     * ".sssssssss". */
    if (len != 17 && len != 21 && len != 24 && len != 27)
        return -EINVAL;
    if (v[8] != '-' || v[11] != ':' || v[14] != ':' || (len > 17 && v[17] != '.'))
        return -EINVAL;
    int ok = 1;
    unsigned ymd = (unsigned)tw__swar_digits(tw__load64(v), 8, &ok);
    /* "HH:MM:SS" is v[9..17): its six digits gathered into one word with
     * shifts (building the word byte by byte in memory would stall the
     * load that reads it back). */
    uint64_t t = tw__load64(v + 9);
    uint64_t hms_w = (t & 0xFFFF) | ((t >> 8) & 0xFFFF0000ull) | ((t >> 16) & 0xFFFF00000000ull);
    unsigned hhmmss = (unsigned)tw__swar_digits(hms_w, 6, &ok);
    uint64_t frac = 0;
    if (len > 17) {
        /* The last eight bytes hold the fraction's last k <= 8 digits at
         * their top; a ninth digit (ns) is v[18]. */
        unsigned k = len - 18 < 8 ? len - 18 : 8;
        uint64_t w = tw__load64(v + len - 8) >> (8 * (8 - k));
        frac = tw__swar_digits(w, k, &ok);
        if (len == 27) {
            unsigned d0 = (unsigned char)v[18] - '0';
            ok &= d0 <= 9;
            frac += (uint64_t)d0 * 100000000ull;
        } else {
            frac *= len == 21 ? 1000000ull : 1000ull;
        }
    }
    if (!ok)
        return -EINVAL;
    /* Consecutive timestamps are nearly always on the same day: the day
     * number of the last date seen is kept per thread. */
    static _Thread_local unsigned last_ymd;
    static _Thread_local int64_t last_days;
    int64_t days;
    if (TW_LIKELY(ymd == last_ymd && ymd != 0)) {
        days = last_days;
    } else {
        unsigned y = ymd / 10000, mo = ymd / 100 % 100, d = ymd % 100;
        if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
            return -EINVAL;
        days = days_from_civil((int64_t)y, mo, d);
        last_ymd = ymd;
        last_days = days;
    }
    unsigned h = hhmmss / 10000, mi = hhmmss / 100 % 100, s = hhmmss % 100;
    /* Second 60 is a leap second, which FIX allows. */
    if (h > 23 || mi > 59 || s > 60)
        return -EINVAL;
    int64_t secs = days * 86400 + (int64_t)(h * 3600 + mi * 60 + s);
    /* int64 ns spans 1677-09-21 to 2262-04-11; outside is not a time we
     * can represent, so it is an error rather than an overflow. */
    if (secs > INT64_MAX / 1000000000ll - 1 || secs < INT64_MIN / 1000000000ll + 1)
        return -ERANGE;
    *out = secs * 1000000000ll + (int64_t)frac;
    return 0;
}
