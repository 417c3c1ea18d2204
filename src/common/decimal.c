/* Exact decimal <-> float64 (tickwire/decimal.h), the fast conversions.
 *
 * Parsing, in the order the cases are tried:
 *  1. One pass over the text (sign, integer digits, '.', fraction digits;
 *     eight digits at a time where eight are there) accumulates the digits
 *     into a uint64 w, so that the value is w * 10^q when there are at most
 *     19 of them.
 *  2. Clinger: w <= 2^53 and |q| <= 22 make w and 10^|q| exact doubles, so
 *     one IEEE multiplication or division is the correctly rounded result.
 *  3. Eisel-Lemire: w, normalised, times the 128-bit significand of 10^q
 *     (the generated table, decimal_gen_pow10.c) gives the double's 53 bits
 *     and a rounding bit, unless the bits the product drops could carry
 *     into them or the product sits exactly on a halfway point: then it
 *     says it cannot tell (it never guesses).  With more than 19
 *     significant digits w is the first 19 and the value lies in
 *     [w, w + 1) * 10^q: when both ends give the same double, that is it.
 *  4. Otherwise (hard cases by construction; for prices about never): a
 *     candidate within an ulp from the same product, corrected by comparing
 *     the exact decimal with the exact midpoints to its neighbours, in big
 *     integers (decimal_bigint.h).
 *
 * Formatting: Schubfach (R. Giulietti, "The Schubfach way to render
 * doubles", 2020) computes the decimal interval of the doubles that round
 * to x with three 64x128-bit products (round to odd), and picks the
 * shortest decimal inside it, the closest to x when two are, without a
 * loop over digits.  Java's Double.toString uses the same algorithm with a
 * rule of its own (at least two digits) that we leave out, so the digits
 * are the shortest ones, as Ryu's and numpy's.  They are written in fixed
 * notation with a two-digit table.
 *
 * Sizes (what decimal_bigint.h's 4096 bits must hold): the input has at
 * most TW_DECIMAL_IN_MAX = 1100 digits, so N < 10^1100 (3654 bits), and the
 * slow path only runs for values in [10^-324, 10^309).  With value
 * N * 10^e10 compared against a midpoint h * 2^t near it (h < 2^54), the
 * two sides are N * 5^e10 * 2^(e10 - t) (e10 >= 0: under 10^309 * 2^1383,
 * 2410 bits) or N and h * 5^-e10 shifted to a common power of two (e10 < 0,
 * -e10 <= 1423: 5^1423 has 3304 bits; the shifted side is within a factor
 * of 2^8 of the other), so below 3700 bits. */
#include <errno.h>
#include <string.h>

#include "common/decimal_bigint.h"
#include "common/decimal_internal.h"
#include "tickwire/decimal.h"
#include "tw_decimal_pow10.h"

TW_STATIC_ASSERT(sizeof(double) == sizeof(uint64_t), "binary64 double");

/* The hot path of a parse (scan, Clinger, Eisel-Lemire) is one function
 * body: inlining it is worth about a fifth of the time of a price; the
 * paths that are rarely taken stay out of line and out of the way. */
#define HOT static inline __attribute__((always_inline))
#define COLD static __attribute__((noinline, cold))

#define SIGN_BIT (1ull << 63)
#define INF_BITS 0x7FF0000000000000ull
#define FRAC_MASK ((1ull << 52) - 1)
#define HIDDEN_BIT (1ull << 52)
#define MASK63 ((1ull << 63) - 1)

static inline uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static inline double double_of(uint64_t b)
{
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

void tw__decimal_pow10(int q, uint64_t out[2])
{
    TW_VERIFY(q >= TW__POW10_MIN && q <= TW__POW10_MAX);
    out[0] = pow10_tab[q - TW__POW10_MIN][0];
    out[1] = pow10_tab[q - TW__POW10_MIN][1];
}

/* ---------------------------------------------------------------- parse */

/* 10^0 .. 10^22, the powers of ten that are exact doubles (Clinger). */
static const double exact_pow10[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SWAR_DIGITS 1
#else
#define SWAR_DIGITS 0
#endif

/* 1 if the eight bytes of v are all ASCII digits: every byte's high nibble
 * is 3 and stays 3 when 6 is added (':' .. '?' would carry into it; with
 * all high nibbles 3, no byte carries into the next). */
static inline int all_digits8(uint64_t v)
{
    const uint64_t high = 0xF0F0F0F0F0F0F0F0ull, threes = 0x3030303030303030ull;
    return ((v & high) == threes) & (((v + 0x0606060606060606ull) & high) == threes);
}

/* The value of eight ASCII digits loaded little-endian (the first digit,
 * the most significant, in the lowest byte): adjacent digits combine into
 * 16-bit lanes, those into 32-bit lanes, then the two halves.  No lane
 * overflows into the next (99, 9999, 99999999). */
static inline uint32_t value_digits8(uint64_t v)
{
    v -= 0x3030303030303030ull;
    v = (v * 10 + (v >> 8)) & 0x00FF00FF00FF00FFull;
    v = (v * 100 + (v >> 16)) & 0x0000FFFF0000FFFFull;
    return (uint32_t)(v * 10000 + (v >> 32));
}

/* Accumulates the digits at p (up to end) into *w (wrapping modulo 2^64
 * past 19 digits: the long path re-reads them); returns where they stop. */
static inline const char *eat_digits(const char *p, const char *end, uint64_t *w)
{
    uint64_t x = *w;
#if SWAR_DIGITS
    while (end - p >= 8) {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        if (!all_digits8(v))
            break;
        x = x * 100000000u + value_digits8(v);
        p += 8;
    }
#endif
    for (; p < end; p++) {
        unsigned d = (unsigned)(unsigned char)*p - '0';
        if (d >= 10)
            break;
        x = x * 10 + d;
    }
    *w = x;
    return p;
}

/* The digits of a number: ni integer digits at ip, nf fraction digits at fp
 * (all ASCII digits, checked by the scan). */
struct digits {
    const char *ip, *fp;
    int ni, nf;
};

/* Digit j of the integer digits followed by the fraction digits. */
static inline unsigned digit_at(const struct digits *d, int j)
{
    return (unsigned)((j < d->ni ? d->ip[j] : d->fp[j - d->ni]) - '0');
}

/* How many '0's s[0..n) starts with (ends with, for zeros_back). */
static size_t zeros_front(const char *s, size_t n)
{
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        uint64_t v;
        memcpy(&v, s + i, sizeof v);
        if (v != 0x3030303030303030ull)
            break;
    }
    while (i < n && s[i] == '0')
        i++;
    return i;
}

static size_t zeros_back(const char *s, size_t n)
{
    size_t i = 0;
    for (; n - i >= 8; i += 8) {
        uint64_t v;
        memcpy(&v, s + n - i - 8, sizeof v);
        if (v != 0x3030303030303030ull)
            break;
    }
    while (i < n && s[n - 1 - i] == '0')
        i++;
    return i;
}

/* The positions of the first and last nonzero digits; 0 if all are 0. */
static int nonzero_span(const struct digits *d, int *j0, int *jl)
{
    size_t lead = zeros_front(d->ip, (size_t)d->ni);
    if (lead == (size_t)d->ni)
        lead += zeros_front(d->fp, (size_t)d->nf);
    if (lead == (size_t)(d->ni + d->nf))
        return 0;
    size_t trail = zeros_back(d->fp, (size_t)d->nf);
    if (trail == (size_t)d->nf)
        trail += zeros_back(d->ip, (size_t)d->ni);
    *j0 = (int)lead;
    *jl = d->ni + d->nf - 1 - (int)trail;
    return 1;
}

/* Eisel-Lemire (D. Lemire, "Number parsing at a gigabyte per second",
 * 2021; the variant with a 128-bit table truncated downwards): the bits of
 * the correctly rounded w * 10^q, w != 0, q in [-342, 308], when the
 * truncated product decides them (1), else 0.  Subnormal and overflowing
 * results also return 0 (the slow path does them). */
HOT int eisel_lemire(uint64_t w, int q, uint64_t *out)
{
    TW_ASSERT(w != 0 && q >= TW__POW10_MIN && q <= 308);
    const uint64_t *t = pow10_tab[q - TW__POW10_MIN];
    int lz = __builtin_clzll(w);
    w <<= lz;
    tw__u128 x = (tw__u128)w * t[0];
    uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
    /* The low table word adds less than w to lo: only when that could carry
     * through nine one bits into the significand does it need computing,
     * and then the truncation of the table itself (less than w more in the
     * lowest word) can only be ruled out the same way. */
    if ((hi & 0x1FF) == 0x1FF && lo + w < lo) {
        tw__u128 y = (tw__u128)w * t[1];
        uint64_t yhi = (uint64_t)(y >> 64), ylo = (uint64_t)y;
        uint64_t mlo = lo + yhi, mhi = hi + (mlo < lo);
        if ((mhi & 0x1FF) == 0x1FF && mlo == UINT64_MAX && ylo + w < ylo)
            return 0;
        hi = mhi;
        lo = mlo;
    }
    /* The product is in [2^190, 2^192): keep 54 bits (53 and the rounding
     * bit).  The double is mant * 2^(e2 - 1076), with e2 the biased
     * exponent. */
    unsigned msb = (unsigned)(hi >> 63);
    uint64_t mant = hi >> (msb + 9);
    int e2 = tw__flog2_pow10(q) + 64 + 1023 - lz - (int)(1 - msb);
    /* Exactly on a halfway point as far as we can see, and round-half-up
     * would go the wrong way if it is exactly on it (the even neighbour is
     * below): cannot tell. */
    if (lo == 0 && (hi & 0x1FF) == 0 && (mant & 3) == 1)
        return 0;
    mant = (mant + (mant & 1)) >> 1;
    if (mant >> 53) {
        mant >>= 1;
        e2++;
    }
    if (e2 <= 0 || e2 >= 0x7FF)
        return 0;
    *out = ((uint64_t)e2 << 52) | (mant & FRAC_MASK);
    return 1;
}

/* A double within one ulp of w * 10^q (w != 0): the product above, from the
 * high table word only, rounded half up, subnormals and Inf included.  The
 * slow path corrects it. */
static uint64_t approx_bits(uint64_t w, int q)
{
    const uint64_t *t = pow10_tab[q - TW__POW10_MIN];
    int lz = __builtin_clzll(w);
    w <<= lz;
    uint64_t hi = (uint64_t)(((tw__u128)w * t[0]) >> 64);
    unsigned msb = (unsigned)(hi >> 63);
    uint64_t mant = hi >> (msb + 9);
    int e2 = tw__flog2_pow10(q) + 64 + 1023 - lz - (int)(1 - msb);
    if (e2 >= 0x7FF)
        return INF_BITS;
    if (e2 <= 0) {
        /* Subnormal: the significand is mant * 2^(e2 - 2). */
        int sh = 1 - e2;
        mant = sh < 64 ? mant >> sh : 0;
        e2 = 1;
    }
    /* (mant + 1) >> 1 may reach 2^53: adding it carries into the exponent. */
    uint64_t bits = ((uint64_t)(e2 - 1) << 52) + ((mant + 1) >> 1);
    return bits > INF_BITS ? INF_BITS : bits;
}

/* The exact value N * 10^e10 of the text, arranged for comparisons with
 * midpoints h * 2^t: value * F * 2^roff = lhs * 2^lhs2 with F = 5^-e10 when
 * e10 < 0, else 1. */
struct exact {
    big lhs, f;
    int lhs2, roff;
};

/* The sign of value - (midpoint between the doubles with bits b and b+1),
 * b < INF_BITS. */
static int cmp_midpoint(const struct exact *x, uint64_t b)
{
    uint64_t m = b & FRAC_MASK;
    int be = (int)(b >> 52), e = -1074;
    if (be) {
        m |= HIDDEN_BIT;
        e = be - 1075;
    }
    /* b is m * 2^e and its upper neighbour is one ulp 2^e above (also at
     * the top of a binade), so the midpoint is (2m + 1) * 2^(e - 1). */
    big r, l;
    big_copy(&r, &x->f);
    big_mul_add(&r, 2 * m + 1, 0);
    big_copy(&l, &x->lhs);
    int a = x->lhs2, c = e - 1 + x->roff;
    if (a > c)
        big_shl(&l, (unsigned)(a - c));
    else
        big_shl(&r, (unsigned)(c - a));
    return big_cmp(&l, &r);
}

/* The correctly rounded bits of the text's value (w * 10^q approximates it
 * from below to 19 digits), by big-integer comparisons.  w != 0. */
COLD uint64_t slow_path(const struct digits *d, uint64_t w, int q)
{
    int j0, jl;
    TW_VERIFY(nonzero_span(d, &j0, &jl));
    struct exact x;
    big_set(&x.lhs, 0);
    for (int j = j0; j <= jl;) {
        uint64_t chunk = 0, scale = 1;
        for (int k = 0; k < 19 && j <= jl; k++, j++) {
            chunk = chunk * 10 + digit_at(d, j);
            scale *= 10;
        }
        big_mul_add(&x.lhs, scale, chunk);
    }
    int e10 = d->ni - 1 - jl;
    big_set(&x.f, 1);
    if (e10 >= 0) {
        big_mul_pow5(&x.lhs, (unsigned)e10);
        x.lhs2 = e10;
        x.roff = 0;
    } else {
        big_mul_pow5(&x.f, (unsigned)-e10);
        x.lhs2 = 0;
        x.roff = -e10;
    }
    uint64_t b = approx_bits(w, q);
    int steps = 0;
    /* Up while the value is above the midpoint over b, or on it with b odd
     * (a tie goes to the even neighbour; Inf counts as even, as in IEEE). */
    while (b < INF_BITS) {
        int c = cmp_midpoint(&x, b);
        if (c < 0 || (c == 0 && (b & 1) == 0))
            break;
        b++;
        TW_VERIFY(++steps <= 3);
    }
    /* Down while it is below the midpoint under b, or on it with b odd. */
    while (b > 0) {
        int c = cmp_midpoint(&x, b - 1);
        if (c > 0 || (c == 0 && (b & 1) == 0))
            break;
        b--;
        TW_VERIFY(++steps <= 3);
    }
    return b;
}

/* w * 10^q with w (!= 0) holding every significant digit of d. */
HOT uint64_t convert_exact(uint64_t w, int q, const struct digits *d)
{
    if (w <= (1ull << 53) && q >= -22 && q <= 22)
        return bits_of(q >= 0 ? (double)w * exact_pow10[q] : (double)w / exact_pow10[-q]);
    uint64_t bits;
    if (TW_LIKELY(eisel_lemire(w, q, &bits)))
        return bits;
    return slow_path(d, w, q);
}

/* More than 19 digits (leading or trailing zeros perhaps among them). */
static __attribute__((noinline)) uint64_t convert_long(const struct digits *d)
{
    int j0, jl;
    if (!nonzero_span(d, &j0, &jl))
        return 0;
    /* The value is in [10^k10, 10^(k10 + 1)): below 10^-324 it is under half
     * the smallest subnormal (2^-1075 ~ 2.47e-324), from 10^309 on above
     * DBL_MAX plus half an ulp. */
    int k10 = d->ni - 1 - j0;
    if (k10 < -324)
        return 0;
    if (k10 > 308)
        return INF_BITS;
    uint64_t w = 0;
    if (jl - j0 < 19) {
        for (int j = j0; j <= jl; j++)
            w = w * 10 + digit_at(d, j);
        return convert_exact(w, d->ni - 1 - jl, d);
    }
    for (int j = j0; j < j0 + 19; j++)
        w = w * 10 + digit_at(d, j);
    int q = k10 - 18;
    uint64_t lo, hi;
    if (eisel_lemire(w, q, &lo) && eisel_lemire(w + 1, q, &hi) && lo == hi)
        return lo;
    return slow_path(d, w, q);
}

/* The decimal at the start of s[0..len): bytes consumed with *out set, or
 * -1 (no digit, or longer than TW_DECIMAL_IN_MAX). */
HOT int parse_prefix(const char *s, size_t len, double *out)
{
    if (len > TW_DECIMAL_IN_MAX + 1)
        len = TW_DECIMAL_IN_MAX + 1;
    const char *p = s, *end = s + len;
    uint64_t sign = 0;
    if (p < end && *p == '-') {
        sign = SIGN_BIT;
        p++;
    }
    struct digits d;
    d.ip = p;
    uint64_t w = 0;
    p = eat_digits(p, end, &w);
    d.ni = (int)(p - d.ip);
    d.fp = p;
    d.nf = 0;
    if (p < end && *p == '.') {
        d.fp = ++p;
        p = eat_digits(p, end, &w);
        d.nf = (int)(p - d.fp);
    }
    if (TW_UNLIKELY(d.ni + d.nf == 0 || p - s > TW_DECIMAL_IN_MAX))
        return -1;
    uint64_t bits;
    if (TW_LIKELY(d.ni + d.nf <= 19))
        bits = w ? convert_exact(w, -d.nf, &d) : 0;
    else
        bits = convert_long(&d);
    *out = double_of(bits | sign);
    return (int)(p - s);
}

/* Why s[0..len) (at most TW_DECIMAL_IN_MAX bytes) is not a decimal. */
COLD int explain(const char *s, size_t len, tw_error *err)
{
    if (len == 0)
        return tw__err(err, -EINVAL, "empty");
    int digits = 0, dot = 0;
    for (size_t i = s[0] == '-'; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= '0' && c <= '9')
            digits = 1;
        else if (c == '.' && !dot)
            dot = 1;
        else if (c == '.')
            return tw__err(err, -EINVAL, "a second '.' at byte %zu", i);
        else if (c > ' ' && c < 127)
            return tw__err(err, -EINVAL, "byte %zu ('%c') is not a digit or '.'", i, c);
        else
            return tw__err(err, -EINVAL, "byte %zu (0x%02x) is not a digit or '.'", i, c);
    }
    if (!digits)
        return tw__err(err, -EINVAL, "no digits");
    /* parse_prefix accepts exactly this grammar, so a valid text never
     * comes here. */
    TW_ASSERT(0);
    return tw__err(err, -EINVAL, "not a decimal");
}

int tw_decimal_parse(const char *s, size_t len, double *out, tw_error *err)
{
    if (TW_UNLIKELY(len > TW_DECIMAL_IN_MAX))
        return tw__err(err, -E2BIG, "longer than %d bytes", TW_DECIMAL_IN_MAX);
    double v;
    int n = parse_prefix(s, len, &v);
    if (TW_LIKELY(n >= 0 && (size_t)n == len)) {
        *out = v;
        return 0;
    }
    return explain(s, len, err);
}

int tw_decimal_to_double(const char *s, size_t len, double *out)
{
    return tw_decimal_parse(s, len, out, NULL);
}

int tw_decimal_scan(const char *s, size_t len, double *out)
{
    double v;
    int n = parse_prefix(s, len, &v);
    if (n > 0)
        *out = v;
    return n;
}

/* --------------------------------------------------------------- format */

/* Schubfach's r_o': cp * g / 2^127 rounded to odd, g = g1 2^63 + g0 (the
 * paper's figure 8 and Java's DoubleToDecimal.rop).  The bits of the
 * product below 2^-64 are dropped on purpose: g exceeds the true power of
 * ten by less than one unit, and the proof that the three comparisons
 * below are exact counts on that excess never reaching the sticky bit. */
static inline uint64_t rop(uint64_t g1, uint64_t g0, uint64_t cp)
{
    uint64_t x1 = (uint64_t)(((tw__u128)g0 * cp) >> 64);
    tw__u128 y = (tw__u128)g1 * cp;
    uint64_t y0 = (uint64_t)y, y1 = (uint64_t)(y >> 64);
    uint64_t z = (y0 >> 1) + x1;
    return (y1 + (z >> 63)) | (((z & MASK63) + MASK63) >> 63);
}

static void shortest(uint64_t bits, uint64_t *fo, int *eo)
{
    TW_ASSERT(bits != 0 && bits < INF_BITS);
    uint64_t c = bits & FRAC_MASK;
    int bq = (int)(bits >> 52), q = -1074;
    if (bq != 0) {
        c |= HIDDEN_BIT;
        q = bq - 1075;
        /* An integer below 2^53: ulp < 1, so its own digits are the
         * shortest and closest. */
        if (q < 0 && q > -53) {
            uint64_t f = c >> -q;
            if (f << -q == c) {
                *fo = f;
                *eo = 0;
                return;
            }
        }
    }
    /* The doubles that round to x fill [cbl, cbr] / 4 * 2^q (ends included
     * iff c is even); below a power of two (c = 2^52 and not the smallest
     * exponent) the lower neighbour is only half as far.  k is such that
     * one 10^k step is at most that interval's width and 10^(k+1) is more. */
    uint64_t out = c & 1, cb = c << 2, cbr = cb + 2, cbl;
    int k;
    if (c != HIDDEN_BIT || q == -1074) {
        cbl = cb - 2;
        k = tw__flog10_pow2(q);
    } else {
        cbl = cb - 1;
        k = tw__flog10_three_quarters_pow2(q);
    }
    int h = q + tw__flog2_pow10(-k) + 2;
    TW_ASSERT(h >= 1 && h <= 5);
    /* g = floor(10^-k 2^(125 - floor(log2 10^-k))) + 1, a 126-bit
     * overestimate of 10^-k's significand, from the table's 128 bits. */
    const uint64_t *t = pow10_tab[-k - TW__POW10_MIN];
    tw__u128 g = ((((tw__u128)t[0] << 64) | t[1]) >> 2) + 1;
    uint64_t g1 = (uint64_t)(g >> 63), g0 = (uint64_t)g & MASK63;
    /* vb, vbl, vbr: 4 x, and the interval's ends, in units of 10^k. */
    uint64_t vb = rop(g1, g0, cb << h);
    uint64_t vbl = rop(g1, g0, cbl << h);
    uint64_t vbr = rop(g1, g0, cbr << h);
    uint64_t s = vb >> 2;
    /* One digit fewer: at most one multiple of 10^(k+1) fits in the
     * interval.  (Java starts this test at s >= 100 for its two-digit rule;
     * below 10, only subnormals 1 and 2 ulps, it cannot pick wrong.) */
    uint64_t sp = s / 10;
    int upin = vbl + out <= 40 * sp;
    int wpin = 40 * sp + 40 + out <= vbr;
    if (upin != wpin) {
        *fo = sp + wpin;
        *eo = k + 1;
        return;
    }
    /* s or s + 1 times 10^k: the one inside, or the closer (ties: even). */
    int uin = vbl + out <= 4 * s;
    int win = 4 * s + 4 + out <= vbr;
    if (uin != win) {
        *fo = s + win;
        *eo = k;
        return;
    }
    uint64_t mid = 4 * s + 2;
    *fo = s + (vb > mid || (vb == mid && (s & 1)));
    *eo = k;
}

void tw__decimal_shortest(double x, uint64_t *f, int *e)
{
    shortest(bits_of(x) & ~SIGN_BIT, f, e);
}

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static const uint64_t pow10_u64[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
    100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
    10000000000000ull, 100000000000000ull, 1000000000000000ull, 10000000000000000ull,
    100000000000000000ull, 1000000000000000000ull, 10000000000000000000ull,
};

/* Decimal digits of f >= 1: t = floor(bits * log10(2)) is floor(log10 f)
 * or one more. */
static inline int count_digits(uint64_t f)
{
    int t = ((64 - __builtin_clzll(f)) * 1233) >> 12;
    return t + (f >= pow10_u64[t]);
}

/* The n digits of v < 10^n at p, leading zeros included. */
static inline void put_digits32(char *p, uint32_t v, int n)
{
    p += n;
    for (; n >= 2; n -= 2) {
        uint32_t q = v / 100;
        p -= 2;
        memcpy(p, digit_pairs + 2 * (v - 100 * q), 2);
        v = q;
    }
    if (n)
        *--p = (char)('0' + v);
}

/* The nd digits of f at p, in 8-digit pieces that convert independently. */
static inline void put_digits(char *p, uint64_t f, int nd)
{
    if (nd <= 8) {
        put_digits32(p, (uint32_t)f, nd);
        return;
    }
    uint64_t hi = f / 100000000;
    put_digits32(p + nd - 8, (uint32_t)(f - hi * 100000000), 8);
    if (nd <= 16) {
        put_digits32(p, (uint32_t)hi, nd - 8);
        return;
    }
    uint64_t top = hi / 100000000;
    put_digits32(p + nd - 16, (uint32_t)(hi - top * 100000000), 8);
    put_digits32(p, (uint32_t)top, nd - 16);
}

/* The text of x: its length; written to buf only when it fits in cap. */
static size_t format(double x, char *buf, size_t cap)
{
    uint64_t bits = bits_of(x), mag = bits & ~SIGN_BIT;
    size_t neg = (size_t)(bits >> 63);
    if (TW_UNLIKELY(mag >= INF_BITS || mag == 0)) {
        /* "-inf" / "-0" without the '-' when positive; NaN has no sign. */
        const char *t = mag > INF_BITS ? "nan" : (mag == INF_BITS ? "-inf" : "-0") + !neg;
        size_t n = strlen(t);
        if (n <= cap)
            memcpy(buf, t, n);
        return n;
    }
    uint64_t f;
    int e;
    shortest(mag, &f, &e);
    while (e < 0 && f % 10 == 0) {
        f /= 10;
        e++;
    }
    int nd = count_digits(f), point = nd + e;
    size_t n = neg + (size_t)(e >= 0 ? point : point > 0 ? nd + 1 : 2 - point + nd);
    if (n > cap)
        return n;
    char *o = buf;
    if (neg)
        *o++ = '-';
    if (e >= 0) {
        put_digits(o, f, nd);
        memset(o + nd, '0', (size_t)e);
    } else if (point > 0) {
        put_digits(o, f, nd);
        memmove(o + point + 1, o + point, (size_t)(nd - point));
        o[point] = '.';
    } else {
        o[0] = '0';
        o[1] = '.';
        memset(o + 2, '0', (size_t)-point);
        put_digits(o + 2 - point, f, nd);
    }
    return n;
}

size_t tw_double_to_decimal(double x, char *buf)
{
    size_t n = format(x, buf, TW_DECIMAL_MAX - 1);
    TW_VERIFY(n < TW_DECIMAL_MAX);
    buf[n] = 0;
    return n;
}

int tw_decimal_put(double x, char *buf, size_t cap)
{
    size_t n = format(x, buf, cap);
    return n <= cap ? (int)n : -ENOSPC;
}
