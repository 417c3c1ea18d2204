/* The one-pass typed decoder (tickwire/fix.h, tw_fix_decode).
 *
 * One pass over the raw bytes does what tw_fix_frame + tw_fix_parse +
 * tw_fix_read_header + the type's accessor do in four:
 *
 *   1. framing: the usual "8=FIX.4.x|9=nnn|35=" head and the trailer where
 *      BodyLength puts it are checked with a few 8-byte loads (frame_fast);
 *      anything else goes to the framer's own code (tw__fix_frame_head), so
 *      the return and *skip are the framer's;
 *   2. the index (soh.c, one variant per ISA): per 64 bytes, SIMD compares
 *      give the SOH and '=' bitmasks and psadbw the byte sum CheckSum is
 *      checked against; one addition per word finds where each field's tag
 *      ends, leaving two bits per field (tag end, SOH) and flagging fields
 *      without '=' or with an empty value;
 *   3. the walk: per field two bit scans, one 8-byte load that ends at the
 *      '=' (the tag's digits, right-aligned, as the key), one multiply to a
 *      bucket of the message type's table whose word holds the key and the
 *      field's case, and a switch on the case that decodes the value
 *      straight into the typed struct (integers and prices by SWAR, prices
 *      also as float64 m / 10^k, UTCTimestamps at fixed positions);
 *   4. the checks that make the result the four-call path's: every field
 *      the walk did not handle is a well-formed tag, no field the message
 *      type reads came twice (popcount of the seen bits against the number
 *      of fields the index counted), the required fields are there.
 *
 * Anything unusual - a malformed field, a repeated field, a bad or unusual
 * value, a missing required field, a group that is not laid out as usual,
 * more fields than the caller's view array - is handed to the four-call
 * path, which finds and classifies it exactly as tw_fix_parse and the
 * accessors do.  So are the MsgTypes without a one-pass reader.  The tests
 * and the fuzz target hold the two paths to the same result.
 *
 * The walk is compiled twice: for the x86-64 baseline, and with BMI1/BMI2/
 * POPCNT/AVX2 (tzcnt, blsr, shlx, popcnt, 32-byte stores) for CPUs that
 * have them; the index variant is the ISA's (scalar, SSE2, AVX2, AVX-512). */
#include <errno.h>
#include <math.h>

#include "fix_internal.h"

/* Bytes indexed per window: 64 words of 64 on the stack. */
#define WINDOW_WORDS 64
#define WINDOW (WINDOW_WORDS * 64)

#define C30 0x3030303030303030ull
#define C76 0x7676767676767676ull

#define B(c) (1ull << (c))

/* ---- small helpers ---------------------------------------------------------- */

typedef char v32 __attribute__((vector_size(32), aligned(1), may_alias));

/* Zeroes a struct of constant size n <= 320 with straight-line vector
 * stores (32 bytes each with AVX, else two of 16): the compiler's memset
 * of a struct this size is `rep stos` or a call, whose start-up costs more
 * than a small message's header, and a loop of stores is turned back into
 * memset. */
static inline __attribute__((always_inline)) void zero(void *p, size_t n)
{
    char *c = p;
#define Z32(i) if (n >= (i) + 32) *(v32 *)(void *)(c + (i)) = (v32){ 0 }
    Z32(0); Z32(32); Z32(64); Z32(96); Z32(128); Z32(160); Z32(192); Z32(224); Z32(256);
    Z32(288);
#undef Z32
    TW_ASSERT(n <= 320);
    size_t i = n / 32 * 32;
    uint64_t z = 0;
    if (n - i >= 16) {
        memcpy(c + i, &z, 8);
        memcpy(c + i + 8, &z, 8);
        i += 16;
    }
    if (n - i >= 8) {
        memcpy(c + i, &z, 8);
        i += 8;
    }
    if (n - i >= 4) {
        memcpy(c + i, &z, 4);
        i += 4;
    }
}

static inline __attribute__((always_inline)) void set_str(tw_fix_str *s, const char *v, uint32_t n)
{
    s->p = v;
    s->len = n;
}

/* 0x80 in each byte of x (a value xor '0' in every byte) that was not a
 * digit; exact for the lowest such byte (a carry only moves up from a byte
 * that is flagged itself), which is all the callers use. */
static inline uint64_t nondigits(uint64_t x)
{
    return ((x + C76) | x) & TW__HIGHS;
}

/* The value of the digits x holds in its top bytes (each byte a digit
 * 0..9, most significant first, zeros below: leading zeros): pairs, quads
 * and octets, each in one multiply.  swar_value: of the n digits (1..8) in
 * x's low n bytes, moved to the top first. */
static inline __attribute__((always_inline)) uint64_t swar_top(uint64_t x)
{
    x = ((x * ((10ull << 8) + 1)) >> 8) & 0x00FF00FF00FF00FFull;
    x = ((x * ((100ull << 16) + 1)) >> 16) & 0x0000FFFF0000FFFFull;
    return (x * ((10000ull << 32) + 1)) >> 32;
}

static inline __attribute__((always_inline)) uint64_t swar_value(uint64_t x, unsigned n)
{
    return swar_top(x << ((64 - 8 * n) & 63));
}

/* The same for n <= 4 digits in the low bytes of a 32-bit word. */
static inline __attribute__((always_inline)) uint32_t swar_value4(uint32_t x, unsigned n)
{
    x <<= (32 - 8 * n) & 31;
    x = ((x * ((10u << 8) + 1)) >> 8) & 0x00FF00FFu;
    return (x * ((100u << 16) + 1)) >> 16;
}

/* ---- values ------------------------------------------------------------------ */

/* Each returns 0 or nonzero (a bad value), as the accessors' decoders for
 * the same kind; the common shapes inline.  A value view starts before
 * t - 1 and the message runs to t + 7, so an 8-byte load at its start
 * stays inside the message; the index guarantees n >= 1. */

/* An integer of 1 to 8 digits inline: its n bytes moved to the top of a
 * word (4 bytes for n <= 4, 8 for more), where the zeros shifted in below
 * read as leading zero digits, so that the check that all are digits and
 * the conversion need no mask.  Anything else (a sign, a point, more
 * digits, a bad byte) through the accessors' decoder `slow`. */
static inline __attribute__((always_inline)) int dec_int(const char *v, uint32_t n, int64_t *out,
                                                         int (*slow)(const char *, uint32_t,
                                                                     int64_t *))
{
    if (TW_LIKELY(n <= 4)) {
        uint32_t w;
        memcpy(&w, v, 4);
        uint32_t y = (w ^ 0x30303030u) << ((32 - 8 * n) & 31);
        if (TW_LIKELY((((y + 0x76767676u) | y) & 0x80808080u) == 0)) {
            y = ((y * ((10u << 8) + 1)) >> 8) & 0x00FF00FFu;
            *out = (int64_t)((y * ((100u << 16) + 1)) >> 16);
            return 0;
        }
    } else if (n <= 8) {
        uint64_t y = (tw__load64(v) ^ C30) << ((64 - 8 * n) & 63);
        if (TW_LIKELY(nondigits(y) == 0)) {
            *out = (int64_t)swar_top(y);
            return 0;
        }
    }
    return slow(v, n, out) != 0;
}

static inline int dec_i64(const char *v, uint32_t n, int64_t *out)
{
    return dec_int(v, n, out, tw_fix_to_i64);
}

static inline int dec_qty(const char *v, uint32_t n, int64_t *out)
{
    return dec_int(v, n, out, tw_fix_to_qty);
}

static inline int dec_i32(const char *v, uint32_t n, int32_t *out)
{
    int64_t x;
    if (dec_i64(v, n, &x) != 0 || x < INT32_MIN || x > INT32_MAX)
        return 1;
    *out = (int32_t)x;
    return 0;
}

static inline int dec_bool(const char *v, uint32_t n, int *out)
{
    *out = v[0] == 'Y';
    return n != 1 || (v[0] != 'Y' && v[0] != 'N');
}

static const int64_t pow10_i64[11] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                       100000000, 1000000000, 10000000000 };

/* A price: fixed point with dec decimals and its float64; 0, or nonzero
 * for a bad value (strict), where loose (TW_FIX_PX_F64) accepts one that
 * does not fit fixed point (*fx = TW_FIX_PX_NONE).  Inline: up to 7 digits
 * with at most one point inside ("172.35", "100"), dec <= 10: the point
 * taken out (the bytes above it move down one), the digits make m < 10^7,
 * and m / 10^k is the correctly rounded double (both exact, one rounding:
 * value.c's px_double).  Anything else is tw__fix_px. */
static inline __attribute__((always_inline)) int dec_px(const char *v, uint32_t n, unsigned dec,
                                                        int loose, int64_t *fx, double *x)
{
    uint64_t w = tw__load64(v) ^ C30;
    unsigned p = (unsigned)__builtin_ctzll(nondigits(w) | (1ull << 63)) >> 3; /* first non-digit */
    uint64_t m;
    unsigned k;
    if (p == n && n) { /* an integer of up to 7 digits */
        m = swar_value(w, n);
        k = 0;
    } else {
        /* The first non-digit must be a point with digits on both sides
         * ("5." and ".5" are not prices), and every byte after it up to
         * the SOH a digit: with the point taken out, the first non-digit
         * is the SOH, now at n - 1 (a zero shifted in at byte 7 when
         * n == 8). */
        uint64_t low = (1ull << (8 * p)) - 1; /* p <= 7 */
        uint64_t w2 = (w & low) | ((w >> 8) & ~low);
        unsigned tz2 = (unsigned)__builtin_ctzll(nondigits(w2) | (1ull << 63));
        int ok = ((w >> (8 * p)) & 0xFF) == ('.' ^ '0') && p - 1u < n - 2u && tz2 == 8 * n - 1;
        if (TW_UNLIKELY(!ok || dec > 10))
            goto slow;
        m = swar_value(w2, n - 1);
        k = n - 1 - p;
    }
    if (TW_LIKELY(k <= dec && dec <= 10)) {
        *x = (double)m / tw__fix_pow10_f64[k];
        *fx = (int64_t)m * pow10_i64[dec - k];
        return 0;
    }
slow:;
    int rc = tw__fix_px(v, n, dec, fx, x);
    return rc != 0 && !(loose && rc == -ERANGE);
}

/* Days from 1970-01-01 to y-m-d (H. Hinnant's days_from_civil), 0 <= y. */
static inline int64_t days_from_civil(unsigned y, unsigned m, unsigned d)
{
    y -= m <= 2;
    unsigned era = y / 400;
    unsigned yoe = y - era * 400;
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return (int64_t)era * 146097 + (int64_t)doe - 719468;
}

/* The first 16 bytes of a UTCTimestamp, "YYYYMMDD-HH:MM:S", as
 * tw_fix_to_epoch_ns checks them (w0, w1: their two 8-byte loads): the
 * seconds since the epoch they stand for (the seconds' tens included) in
 * *base, and in *smax the largest digit the seconds' units may be (9, or 0
 * after a 6: the leap second 60).  0, or 1 if they are not a valid start. */
static __attribute__((noinline)) int ts_prefix(uint64_t w0, uint64_t w1, int64_t *base,
                                               uint32_t *smax)
{
    uint64_t xd = w0 ^ C30;
    uint64_t xt = w1 ^ 0x303A30303A30302Dull; /* "-HH:MM:S": '-' and ':' to 0 */
    /* Digits xor '0' are 0..9 (the add leaves their top bit clear); the
     * separators must be 0 (0x7F leaves it clear only for 0). */
    if (nondigits(xd) | (((xt + 0x767F76767F76767Full) | xt) & TW__HIGHS))
        return 1;
    uint64_t pd = ((xd * ((10ull << 8) + 1)) >> 8) & 0x00FF00FF00FF00FFull;
    unsigned y = (unsigned)(pd & 0xFF) * 100 + (unsigned)((pd >> 16) & 0xFF);
    unsigned mo = (unsigned)((pd >> 32) & 0xFF), dd = (unsigned)(pd >> 48);
    /* Bytes 1, 4 and 7 of pt: hours, minutes; byte 7 the seconds' tens. */
    uint64_t pt = ((xt * ((10ull << 8) + 1)) >> 8);
    unsigned hh = (unsigned)((pt >> 8) & 0xFF), mi = (unsigned)((pt >> 32) & 0xFF);
    unsigned s0 = (unsigned)(xt >> 56);
    static const unsigned char dm[13] = { 0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    /* Second 60 is a leap second, which FIX allows. */
    if (hh > 23 || mi > 59 || s0 > 6 || mo - 1 > 11u)
        return 1;
    unsigned leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (dd - 1 >= dm[mo] + (unsigned)(mo == 2 && leap))
        return 1;
    *base = days_from_civil(y, mo, dd) * 86400 + (int64_t)(hh * 3600 + mi * 60 + s0 * 10);
    *smax = s0 == 6 ? 0 : 9;
    return 0;
}

/* A UTCTimestamp YYYYMMDD-HH:MM:SS[.sss[sss[sss]]] as tw_fix_to_epoch_ns
 * reads it.  The first 16 bytes' seconds are cached in d: consecutive
 * timestamps nearly always share date, hour and minute, so a hit costs
 * two compares, and the rest - the seconds' units digit, the point and
 * the fraction - is one load checked and converted by SWAR (each byte xor
 * what it should be: a digit becomes 0..9, a separator 0). */
static inline __attribute__((always_inline)) int dec_ts(const char *v, uint32_t n, int64_t *out,
                                                        tw_fix_decoded *d)
{
    if (TW_UNLIKELY(n < 17)) /* every load below is inside a value of 17 bytes or more */
        return 1;
    uint64_t w0 = tw__load64(v), w1 = tw__load64(v + 8);
    if (TW_UNLIKELY(w0 != d->ts_key_[0] || w1 != d->ts_key_[1])) {
        /* (The cache starts zeroed: no timestamp starts with NULs.) */
        if (ts_prefix(w0, w1, &d->ts_base_, &d->ts_smax_) != 0)
            return 1;
        d->ts_key_[0] = w0;
        d->ts_key_[1] = w1;
    }
    uint64_t frac, bad;
    unsigned s1;
    if (TW_LIKELY(n == 24)) {
        /* "S.uuuuuu": the seconds' units, the point, six digits. */
        uint64_t x = tw__load64(v + 16) ^ 0x3030303030302E30ull;
        bad = ((x + 0x7676767676767F76ull) | x) & TW__HIGHS;
        s1 = (unsigned)(x & 0xFF);
        frac = swar_top(x & ~0xFFFFull) * 1000;
    } else if (n == 21) {
        /* "M:SS.mmm": the last three bytes of the prefix, then S.mmm. */
        uint64_t x = tw__load64(v + 13) ^ 0x3030302E30303A30ull;
        bad = ((x + 0x7676767F76767F76ull) | x) & TW__HIGHS;
        s1 = (unsigned)((x >> 24) & 0xFF);
        frac = swar_top(x & ~0xFFFFFFFFFFull) * 1000000;
    } else if (n == 17) {
        s1 = (unsigned char)v[16] ^ '0';
        bad = 0;
        frac = 0;
    } else if (n == 27) {
        /* "S.nnnnnnnnn": the units, the point, a digit and eight more. */
        uint64_t x = tw__load64(v + 19) ^ C30;
        unsigned d0 = (unsigned char)v[18] - '0';
        s1 = (unsigned char)v[16] ^ '0';
        bad = nondigits(x) | (unsigned char)(v[17] ^ '.') | (d0 > 9);
        frac = swar_top(x) + (uint64_t)d0 * 100000000ull;
    } else {
        return 1;
    }
    int64_t secs = d->ts_base_ + (int64_t)s1;
    /* int64 ns spans 1677-09-21 to 2262-04-11: a time outside is an error
     * (as in tw_fix_to_epoch_ns), not an overflow. */
    const int64_t lim = INT64_MAX / 1000000000ll - 1;
    if (TW_UNLIKELY(bad || s1 > d->ts_smax_ || (uint64_t)(secs + lim) > (uint64_t)(2 * lim)))
        return 1;
    *out = secs * 1000000000ll + (int64_t)frac;
    return 0;
}

/* ---- the tag tables ---------------------------------------------------------- */

/* A tag's key: its text "digits=" in the low bytes of a word (KEY(37)
 * is 0x3D3733): what a field's first bytes are, masked to the tag and its
 * '='.  TAGKEY, TAGLEN and TAGMASK are integer constant expressions, so
 * the tables and the switches below are built by the compiler. */
#define TAGLEN(t) ((t) < 10 ? 1 : (t) < 100 ? 2 : (t) < 1000 ? 3 : 4)
#define TAGDIG(t, i) ((uint64_t)('0' + (t) / ((i) == 0 ? 1 : (i) == 1 ? 10 : (i) == 2 ? 100 : 1000) % 10))
#define TAGKEY(t)                                                                          \
    ((t) < 10 ? (TAGDIG(t, 0) | 0x3Dull << 8)                                              \
     : (t) < 100 ? (TAGDIG(t, 1) | TAGDIG(t, 0) << 8 | 0x3Dull << 16)                      \
     : (t) < 1000 ? (TAGDIG(t, 2) | TAGDIG(t, 1) << 8 | TAGDIG(t, 0) << 16 | 0x3Dull << 24) \
                  : (TAGDIG(t, 3) | TAGDIG(t, 2) << 8 | TAGDIG(t, 1) << 16 | TAGDIG(t, 0) << 24 | \
                     0x3Dull << 32))
#define TAGMASK(t) (~0ull >> (56 - 8 * TAGLEN(t)))

/* A key's bucket in its type's table of 256: a multiply-shift hash of its
 * low 4 bytes (a 4-digit tag shares a bucket with the tags that start with
 * its digits, which the key kept in the bucket tells apart).
 * Each type's multiplier was found offline so that no two of its tags
 * (the header's included) share a bucket; a tag added to a type that
 * collides makes two case labels equal, a compile error. */
#define HASH(mult, key) (((uint32_t)(key) * (uint32_t)(mult)) >> 24)
#define BUCKET(mult, t) HASH(mult, TAGKEY(t))
#define ER_MULT 0x0ea8120bu
#define NO_MULT 0x0ea8120bu
#define TR_MULT 0x0ea8120bu
#define X_MULT 0x9ff4828bu

/* Each type's tags (the header's first) as X(tag, case): its table of
 * keys, its cases (bit numbers of its seen mask: 0 is the tags it does not
 * take), and what the tests check, all from one list.  A case is below
 * 64 and distinct within its type. */
#define HDR_TAGS(X) X(49, 1) X(56, 2) X(34, 3) X(52, 4) X(122, 5) X(43, 6) X(97, 7)
enum { C_49 = 1, C_56, C_34, C_52, C_122, C_43, C_97, C_BODY };
#define H_REQUIRED (B(C_49) | B(C_56) | B(C_34) | B(C_52))

enum { E37 = C_BODY, E11, E41, E17, E55, E1, E58, E150, E39, E54, E40, E59, E20, E38, E44,
       E32, E31, E151, E14, E6, E60, E103 };
#define ER_TAGS(X)                                                                         \
    HDR_TAGS(X) X(37, E37) X(11, E11) X(41, E41) X(17, E17) X(55, E55) X(1, E1) X(58, E58)  \
    X(150, E150) X(39, E39) X(54, E54) X(40, E40) X(59, E59) X(20, E20) X(38, E38)        \
    X(44, E44) X(32, E32) X(31, E31) X(151, E151) X(14, E14) X(6, E6) X(60, E60)          \
    X(103, E103)

enum { N11 = C_BODY, N55, N1, N54, N40, N59, N21, N38, N44, N60 };
#define NO_TAGS(X)                                                                         \
    HDR_TAGS(X) X(11, N11) X(55, N55) X(1, N1) X(54, N54) X(40, N40) X(59, N59) X(21, N21)  \
    X(38, N38) X(44, N44) X(60, N60)

enum { T112 = C_BODY };
#define TR_TAGS(X) HDR_TAGS(X) X(112, T112)

/* MarketDataIncrementalRefresh: the body's tags, the entry's delimiter and
 * the members the entry struct keeps, and one case for every other member
 * of access.c's md_inc_members (it stays in the entry; any other tag ends
 * the group). */
enum { X262 = C_BODY, X268, X279, X55, X278, X269, X290, X270, X271, X346, X_MEMBER };
#define X_OTHER_MEMBERS(X)                                                                 \
    X(285, X_MEMBER) X(280, X_MEMBER) X(65, X_MEMBER) X(48, X_MEMBER) X(22, X_MEMBER)      \
    X(207, X_MEMBER) X(272, X_MEMBER) X(273, X_MEMBER) X(274, X_MEMBER) X(275, X_MEMBER)   \
    X(276, X_MEMBER) X(277, X_MEMBER) X(282, X_MEMBER) X(283, X_MEMBER) X(284, X_MEMBER)   \
    X(286, X_MEMBER) X(287, X_MEMBER) X(288, X_MEMBER) X(289, X_MEMBER) X(291, X_MEMBER)   \
    X(292, X_MEMBER) X(299, X_MEMBER) X(336, X_MEMBER) X(15, X_MEMBER) X(58, X_MEMBER)     \
    X(1023, X_MEMBER) X(387, X_MEMBER) X(451, X_MEMBER) X(37, X_MEMBER) X(59, X_MEMBER)    \
    X(432, X_MEMBER) X(126, X_MEMBER) X(110, X_MEMBER) X(18, X_MEMBER) X(1070, X_MEMBER)   \
    X(83, X_MEMBER) X(625, X_MEMBER) X(167, X_MEMBER) X(200, X_MEMBER) X(541, X_MEMBER)
#define X_TAGS(X)                                                                          \
    HDR_TAGS(X) X(262, X262) X(268, X268) X(279, X279) X(55, X55) X(278, X278) X(269, X269) \
    X(290, X290) X(270, X270) X(271, X271) X(346, X346) X_OTHER_MEMBERS(X)

#define ER_KEY(t, c) [BUCKET(ER_MULT, t)] = TAGKEY(t),
#define NO_KEY(t, c) [BUCKET(NO_MULT, t)] = TAGKEY(t),
#define TR_KEY(t, c) [BUCKET(TR_MULT, t)] = TAGKEY(t),
#define X_KEY(t, c) [BUCKET(X_MULT, t)] = TAGKEY(t),
/* An empty bucket holds 0, which no key equals (a key's low byte is a
 * digit). */
static const uint64_t er_keys[256] = { ER_TAGS(ER_KEY) };
static const uint64_t no_keys[256] = { NO_TAGS(NO_KEY) };
static const uint64_t tr_keys[256] = { TR_TAGS(TR_KEY) };
static const uint64_t x_keys[256] = { X_TAGS(X_KEY) };
#define ER_CASE(t, c) [BUCKET(ER_MULT, t)] = c,
#define NO_CASE(t, c) [BUCKET(NO_MULT, t)] = c,
#define TR_CASE(t, c) [BUCKET(TR_MULT, t)] = c,
#define X_CASE(t, c) [BUCKET(X_MULT, t)] = c,
/* For the tests: each bucket's case. */
static const uint8_t er_cases[256] = { ER_TAGS(ER_CASE) };
static const uint8_t no_cases[256] = { NO_TAGS(NO_CASE) };
static const uint8_t tr_cases[256] = { TR_TAGS(TR_CASE) };
static const uint8_t x_cases[256] = { X_TAGS(X_CASE) };

static uint64_t tag_key(uint32_t tag)
{
    uint64_t k = 0;
    for (uint32_t t = tag; t; t /= 10)
        k = (k << 8) | (uint64_t)('0' + t % 10);
    /* k has the last digit in its low byte: reverse into first digit, ...,
     * last digit, '='. */
    uint64_t r = 0;
    int i = 0;
    for (; k; i++, k >>= 8)
        r |= (k & 0xFF) << (8 * i);
    return r | (uint64_t)'=' << (8 * i);
}

/* For tests: every type's table finds each of its tags (and the header's)
 * in its case, a tag it does not read in none, and TAGKEY is tag_key. */
int tw__fix_decode_tables_ok(void);
int tw__fix_decode_tables_ok(void)
{
    const struct {
        const uint64_t *keys;
        const uint8_t *cases;
        uint32_t mult;
    } all[] = { { er_keys, er_cases, ER_MULT }, { no_keys, no_cases, NO_MULT },
                { tr_keys, tr_cases, TR_MULT }, { x_keys, x_cases, X_MULT } };
#define CHECK_KEY(t, c) ok &= TAGKEY(t) == tag_key(t);
    int ok = 1;
    X_TAGS(CHECK_KEY)
    ER_TAGS(CHECK_KEY)
    NO_TAGS(CHECK_KEY)
#undef CHECK_KEY
#define TAGNUM(t, c) t,
    static const uint32_t er_t[] = { ER_TAGS(TAGNUM) };
    static const uint32_t no_t[] = { NO_TAGS(TAGNUM) };
    static const uint32_t tr_t[] = { TR_TAGS(TAGNUM) };
    static const uint32_t x_t[] = { X_TAGS(TAGNUM) };
#undef TAGNUM
    const struct {
        const uint32_t *t;
        size_t n;
    } lists[] = { { er_t, TW_ARRAY_SIZE(er_t) }, { no_t, TW_ARRAY_SIZE(no_t) },
                  { tr_t, TW_ARRAY_SIZE(tr_t) }, { x_t, TW_ARRAY_SIZE(x_t) } };
    for (size_t i = 0; i < TW_ARRAY_SIZE(all); i++) {
        size_t found = 0;
        for (uint32_t tag = 1; tag < 10000000; tag = tag < 2000 ? tag + 1 : tag * 3 + 1) {
            int mine = 0;
            for (size_t j = 0; j < lists[i].n; j++)
                mine |= lists[i].t[j] == tag;
            uint64_t k = tag_key(tag);
            unsigned b = HASH(all[i].mult, k);
            int hit = all[i].keys[b] == k && all[i].cases[b] != 0;
            ok &= hit == mine;
            found += (size_t)hit;
        }
        ok &= found == lists[i].n;
    }
    return ok;
}

/* ---- the walk ----------------------------------------------------------------- */

typedef struct walk {
    const char *msg;
    size_t t;    /* offset of "10=": the fields end here */
    size_t wend; /* [0, wend) is indexed */
    tw__fix_index_fn index_fn;
    tw__fix_ix ix;
    uint64_t m[WINDOW_WORDS];
} walk;

/* Indexes the next window of the message into w->m; returns its words, 0
 * when the message is all indexed. */
static __attribute__((noinline)) uint32_t next_window(walk *w)
{
    if (w->wend >= w->t)
        return 0;
    size_t n = w->t - w->wend < WINDOW ? w->t - w->wend : WINDOW;
    w->index_fn(w->msg + w->wend, n, w->m, &w->ix);
    w->wend += n;
    return (uint32_t)((n + 63) / 64);
}

/* The walk over the fields after MsgType is a chain of gotos in one
 * function per message type.  Each case ends with NEXT(t): it finds the
 * next field - start, its first byte (the byte after the previous SOH),
 * end, its SOH (the next bit of the index), w8, its first 8 bytes - and,
 * if those start with "t=" (t: the tag that usually comes next, in the
 * FIX specification's order of the fields a message usually has), sets v
 * and n (the value) and jumps straight to t's case; else to `dispatch`,
 * which finds the tag and its case through the type's table.  Real
 * counterparties send a message type's fields in one order, so nearly
 * every field costs a bit scan, a load and a compare.  NEXT_ANY() always
 * dispatches.  After the last field control goes to `done`; `goto
 * handover` gives the message to the four-call path.  With FIELDS each
 * field's view is written too. */

/* The next field's SOH; at the end of the window, the refill path, which
 * then checks the prediction PRED (a tag, or 0 for none) in a switch. */
#define NEXT_FIELD(PRED)                                                                   \
    do {                                                                                   \
        while (TW_UNLIKELY(cur == 0)) {                                                    \
            if (TW_UNLIKELY(++wi == nw)) {                                                 \
                pred = PRED;                                                               \
                goto next_window_path;                                                     \
            }                                                                              \
            cur = wk.m[wi];                                                                \
            wbase += 64;                                                                   \
        }                                                                                  \
        end = wbase + (size_t)__builtin_ctzll(cur);                                        \
        cur &= cur - 1;                                                                    \
        /* start <= t - 1 and the message runs to t + 7. */                                \
        w8 = tw__load64(msg + start);                                                      \
    } while (0)

/* If the field at start is t's, its value and a jump to its case. */
#define PREDICTED(t)                                                                       \
    do {                                                                                   \
        if (TW_LIKELY((w8 & TAGMASK(t)) == TAGKEY(t))) {                                   \
            /* "t=" holds no SOH, so end > start + TAGLEN(t). */                           \
            v = msg + start + TAGLEN(t) + 1;                                               \
            n = (uint32_t)(end - start) - (TAGLEN(t) + 1);                                 \
            start = end + 1;                                                               \
            if (FIELDS) {                                                                  \
                if (TW_UNLIKELY(count >= fcap))                                            \
                    goto handover; /* the four-call path says -E2BIG where it does */      \
                fields[count++] = (tw_fix_field){ t, n, v };                               \
            }                                                                              \
            goto L_##t;                                                                    \
        }                                                                                  \
    } while (0)

#define NEXT(t)                                                                            \
    do {                                                                                   \
        NEXT_FIELD(t);                                                                     \
        PREDICTED(t);                                                                      \
        goto dispatch;                                                                     \
    } while (0)

#define NEXT_ANY()                                                                         \
    do {                                                                                   \
        NEXT_FIELD(0);                                                                     \
        goto dispatch;                                                                     \
    } while (0)

/* In the refill path: the prediction, for each tag a walker predicts. */
#define PRED_CASE(t)                                                                       \
    case t:                                                                                \
        PREDICTED(t);                                                                      \
        break;

/* Shared by every walker: the refill path (the next window, or the end),
 * which checks the prediction, and the dispatch: the tag is the digits
 * before the field's first non-digit, which must be '=' (else the default
 * case refuses the field), its key those bytes with the '='; the bucket
 * must hold that key, else the type does not read the tag.  KEYS, MULT:
 * the type's table; PREDS: PRED_CASE(t) for every t its NEXT(t) names. */
#define WALK_COMMON(KEYS, MULT, PREDS)                                                     \
    next_window_path:                                                                      \
    for (;;) {                                                                             \
        nw = next_window(&wk);                                                             \
        wi = 0;                                                                            \
        if (nw == 0)                                                                       \
            goto done;                                                                     \
        wbase += 64;                                                                       \
        cur = wk.m[0];                                                                     \
        while (cur == 0 && ++wi < nw) {                                                    \
            cur = wk.m[wi];                                                                \
            wbase += 64;                                                                   \
        }                                                                                  \
        if (cur != 0)                                                                      \
            break;                                                                         \
        wi = nw - 1;                                                                       \
    }                                                                                      \
    end = wbase + (size_t)__builtin_ctzll(cur);                                            \
    cur &= cur - 1;                                                                        \
    w8 = tw__load64(msg + start);                                                          \
    switch (pred) {                                                                        \
        PREDS                                                                              \
    default:                                                                               \
        break;                                                                             \
    }                                                                                      \
    dispatch : {                                                                           \
        uint64_t x_ = w8 ^ C30;                                                            \
        taglen = (unsigned)__builtin_ctzll(nondigits(x_) | (1ull << 63)) >> 3;             \
        key = w8 & (~0ull >> (56 - 8 * taglen));                                           \
        v = msg + start + taglen + 1;                                                      \
        n = (uint32_t)(end - start) - (taglen + 1); /* if the '=' is there */              \
        flen = end - start;                                                                \
        start = end + 1;                                                                   \
        bkt = HASH(MULT, key);                                                             \
        if (FIELDS) {                                                                      \
            if (TW_UNLIKELY(count >= fcap))                                                \
                goto handover;                                                             \
            fields[count++] = (tw_fix_field){ (uint32_t)swar_value(x_, taglen), n, v };     \
        }                                                                                  \
        if (TW_UNLIKELY((KEYS)[bkt] != key))                                               \
            goto other;                                                                    \
    }

/* 1 if tw_fix_parse would refuse the fields of msg[0..t) (t: CheckSum's
 * offset; the message parses up to there as the framer checked): a field
 * whose tag is not 1 to 7 digits without a leading zero and an '=', or
 * whose value is empty.  For the rare messages with a bad value, which
 * may be an empty one. */
static __attribute__((noinline)) int parse_error(const char *msg, size_t t)
{
    size_t i = 0;
    while (i < t) {
        size_t k = 0;
        while (i + k < t && (unsigned)(msg[i + k] - '0') < 10u)
            k++;
        if (k == 0 || k > 7 || msg[i] == '0' || i + k + 1 >= t || msg[i + k] != '=' ||
            msg[i + k + 1] == TW_FIX_SOH)
            return 1;
        const char *e = memchr(msg + i + k + 1, TW_FIX_SOH, t - (i + k + 1));
        if (!e)
            return 1;
        i = (size_t)(e - msg) + 1;
    }
    return 0;
}

/* In the default case: the tag is one the type does not read, so it has
 * not been matched against a key: it must be 1 to 7 digits without a
 * leading zero followed by '=' and a value of at least one byte (the
 * parser's rule), else the message goes to the four-call path.  k: the
 * digits before the first non-digit; w8 the field's first 8 bytes, e the
 * bytes from its start to its SOH. */
static inline __attribute__((always_inline)) int other_tag_ok(uint64_t w8, unsigned k, size_t e)
{
    return k - 1 < 7 && ((w8 >> (8 * k)) & 0xFF) == '=' && (w8 & 0xFF) != '0' && k + 1 < e;
}

/* The header's cases, common to every type's switch; FIRST is the tag a
 * type's body usually starts with. */
#define HEADER_CASES(MULT, h, PRE, FIRST)                                                  \
    case BUCKET(MULT, 49):                                                                 \
    L_49: __attribute__((unused)); PRE; seen |= B(C_49); bad |= !n;                        \
        set_str(&(h)->sender_comp_id, v, n); NEXT(56);                                     \
    case BUCKET(MULT, 56):                                                                 \
    L_56: __attribute__((unused)); PRE; seen |= B(C_56); bad |= !n;                        \
        set_str(&(h)->target_comp_id, v, n); NEXT(34);                                     \
    case BUCKET(MULT, 34):                                                                 \
    L_34: __attribute__((unused)); PRE; seen |= B(C_34);                                   \
        bad |= dec_i64(v, n, &(h)->msg_seq_num); NEXT(52);                                 \
    case BUCKET(MULT, 52):                                                                 \
    L_52: __attribute__((unused)); PRE; seen |= B(C_52);                                   \
        bad |= dec_ts(v, n, &(h)->sending_time_ns, d); NEXT(FIRST);                        \
    case BUCKET(MULT, 122):                                                                \
    L_122: __attribute__((unused)); PRE; seen |= B(C_122);                                 \
        bad |= dec_ts(v, n, &(h)->orig_sending_time_ns, d); NEXT(FIRST);                   \
    case BUCKET(MULT, 43):                                                                 \
    L_43: __attribute__((unused)); PRE; seen |= B(C_43);                                   \
        bad |= dec_bool(v, n, &(h)->poss_dup); NEXT(52);                                   \
    case BUCKET(MULT, 97):                                                                 \
    L_97: __attribute__((unused)); PRE; seen |= B(C_97);                                   \
        bad |= dec_bool(v, n, &(h)->poss_resend); NEXT(52);

/* The setup every walker shares: the first window indexed, the walk put
 * after MsgType(35), whose value is the third field's (the framer checked
 * "35=" at body), the first three views written, the header zeroed. */
#define WALK_SETUP(FIELDS)                                                                 \
    walk wk;                                                                               \
    wk.msg = msg;                                                                          \
    wk.t = hd->t;                                                                          \
    wk.index_fn = ixfn;                                                                    \
    wk.ix = (tw__fix_ix){ 0, 0 };                                                          \
    /* The first window, indexed here rather than in next_window. */                      \
    wk.wend = hd->t < WINDOW ? hd->t : WINDOW;                                             \
    ixfn(msg, wk.wend, wk.m, &wk.ix);                                                      \
    uint32_t nw = (uint32_t)((wk.wend + 63) / 64), wi = 0;                                  \
    size_t wbase = 0, end, start;                                                          \
    const char *v;                                                                         \
    uint32_t n;                                                                            \
    uint64_t w8, key;                                                                      \
    unsigned taglen, bkt, pred;                                                            \
    size_t flen; /* in the default case: the field's bytes before its SOH */               \
    uint64_t seen = 0, bad = 0;                                                            \
    uint32_t u = 0; /* fields walked that no case took */                                  \
    tw_fix_field *fields = d->fields;                                                      \
    uint32_t count = 3, fcap = d->fields_cap - 1; /* the trailer needs a view too */       \
    tw_fix_header *h = &d->hdr;                                                            \
    /* SOHs below body + 3 are 8's and 9's; the next is 35's. */                           \
    uint64_t cur = wk.m[0] & (~0ull << (hd->body + 3));                                    \
    size_t e35;                                                                            \
    while (TW_UNLIKELY(cur == 0)) {                                                        \
        if (TW_UNLIKELY(++wi == nw)) {                                                     \
            nw = next_window(&wk);                                                         \
            wi = 0;                                                                        \
            if (nw == 0)                                                                   \
                goto handover;                                                             \
        }                                                                                  \
        cur = wk.m[wi];                                                                    \
        wbase += 64;                                                                       \
    }                                                                                      \
    e35 = wbase + (size_t)__builtin_ctzll(cur);                                            \
    cur &= cur - 1;                                                                        \
    start = e35 + 1;                                                                       \
    if (FIELDS) {                                                                          \
        if (d->fields_cap < 5)                                                             \
            goto handover;                                                                 \
        fields[0] = (tw_fix_field){ 8, (uint32_t)(hd->begin_end - 2), msg + 2 };           \
        fields[1] = (tw_fix_field){ 9, (uint32_t)(hd->bodylen_end - hd->begin_end - 3),    \
                                    msg + hd->begin_end + 3 };                             \
        fields[2] = (tw_fix_field){ 35, (uint32_t)(e35 - hd->body - 3), msg + hd->body + 3 }; \
    }                                                                                      \
    zero(h, sizeof(*h));                                                                   \
    set_str(&h->begin_string, msg + 2, (uint32_t)(hd->begin_end - 2));                     \
    set_str(&h->msg_type, msg + hd->body + 3, (uint32_t)(e35 - hd->body - 3))

/* What every walker checks after the last field: no field the walk took
 * came twice (the seen bits count them: a repeat sets no new bit), else
 * the four-call path decides; a bad value may be an empty one, which
 * tw_fix_parse refuses: then the message is looked at once more for that;
 * the views are completed.  Then the message parsed as tw_fix_parse
 * parses it, and what is left is the header's and the body's result. */
#define WALK_FINISH(FIELDS, taken)                                                         \
    if ((taken) + u != wk.ix.sohs - 3)                                                     \
        goto handover;                                                                     \
    if (TW_UNLIKELY(bad) && parse_error(msg, hd->t))                                       \
        goto perr;                                                                         \
    if (FIELDS) {                                                                          \
        fields[count] = (tw_fix_field){ 10, 3, msg + hd->t + 3 };                          \
        d->msg.count = count + 1;                                                          \
        d->msg.msg_type = h->msg_type.p;                                                   \
        d->msg.msg_type_len = h->msg_type.len;                                             \
    }                                                                                      \
    *sum = wk.ix.sum;                                                                      \
    *indexed = wk.wend;                                                                    \
    if (bad || (seen & H_REQUIRED) != H_REQUIRED)                                          \
        return -EBADMSG

/* The walkers return 0 when the message decoded, -EBADMSG or -E2BIG when
 * it parsed but the header or body is what the accessors refuse with
 * that, WALK_PARSE_ERROR when tw_fix_parse refuses it, WALK_HANDOVER to
 * hand it to the four-call path; *sum is the byte sum of what they
 * indexed, *indexed how far that is. */
#define WALK_HANDOVER 1
#define WALK_PARSE_ERROR 2
#define WALK_EXITS                                                                         \
    perr:                                                                                  \
    *sum = wk.ix.sum;                                                                      \
    *indexed = wk.wend;                                                                    \
    return WALK_PARSE_ERROR;                                                               \
    handover:                                                                              \
    *sum = wk.ix.sum;                                                                      \
    *indexed = wk.wend;                                                                    \
    return WALK_HANDOVER

/* A tag the type does not read: checked, counted, then the next field. */
#define OTHER_CASE(PRE)                                                                    \
    other:                                                                                 \
    if (TW_UNLIKELY(!other_tag_ok(w8, taglen, flen)))                                      \
        goto perr;                                                                         \
    PRE;                                                                                   \
    u++;                                                                                   \
    NEXT_ANY()

#define STR(MULT, t, c, mem, nx)                                                           \
    case BUCKET(MULT, t):                                                                  \
    L_##t: __attribute__((unused)); seen |= B(c); bad |= !n; set_str(&o->mem, v, n); NEXT(nx);
#define CHR(MULT, t, c, mem, nx)                                                           \
    case BUCKET(MULT, t):                                                                  \
    L_##t: __attribute__((unused)); seen |= B(c); o->mem = *v; bad |= n ^ 1; NEXT(nx);
#define QTY(MULT, t, c, mem, nx)                                                           \
    case BUCKET(MULT, t):                                                                  \
    L_##t: __attribute__((unused)); seen |= B(c); bad |= dec_qty(v, n, &o->mem); NEXT(nx);
#define PX(MULT, t, c, mem, mf, nx)                                                        \
    case BUCKET(MULT, t):                                                                  \
    L_##t: __attribute__((unused)); seen |= B(c);                                          \
        bad |= dec_px(v, n, dec, loose, &o->mem, &o->mf); NEXT(nx);
#define TS(MULT, t, c, mem, nx)                                                            \
    case BUCKET(MULT, t):                                                                  \
    L_##t: __attribute__((unused)); seen |= B(c); bad |= dec_ts(v, n, &o->mem, d); NEXT(nx);

/* ExecutionReport (8): the same members, required fields and decoders as
 * access.c's er_d; NEXT after each is its successor in FIX 4.4's order. */
static inline __attribute__((always_inline)) int walk_exec_report(tw__fix_index_fn ixfn,
                                                                  const tw__fix_head *hd,
                                                                  const char *msg,
                                                                  tw_fix_decoded *d, int FIELDS,
                                                                  uint64_t *sum, size_t *indexed)
{
    WALK_SETUP(FIELDS);
    tw_fix_exec_report *o = &d->u.exec_report;
    zero(o, sizeof(*o));
    o->price_f64 = o->last_px_f64 = o->avg_px_f64 = NAN;
    o->ord_rej_reason = -1;
    const unsigned dec = d->px_decimals;
    const int loose = (d->flags & TW_FIX_PX_F64) != 0;
    NEXT(49);
    WALK_COMMON(er_keys, ER_MULT,
                PRED_CASE(49) PRED_CASE(56) PRED_CASE(34) PRED_CASE(52) PRED_CASE(37)
                PRED_CASE(11) PRED_CASE(17) PRED_CASE(150) PRED_CASE(39) PRED_CASE(1)
                PRED_CASE(55) PRED_CASE(54) PRED_CASE(38) PRED_CASE(40) PRED_CASE(44)
                PRED_CASE(59) PRED_CASE(32) PRED_CASE(31) PRED_CASE(151) PRED_CASE(14)
                PRED_CASE(6) PRED_CASE(60) PRED_CASE(58))
    switch (bkt) {
    HEADER_CASES(ER_MULT, h, (void)0, 37)
    STR(ER_MULT, 37, E37, order_id, 11)
    STR(ER_MULT, 11, E11, cl_ord_id, 17)
    STR(ER_MULT, 41, E41, orig_cl_ord_id, 17)
    STR(ER_MULT, 17, E17, exec_id, 150)
    CHR(ER_MULT, 20, E20, exec_trans_type, 150)
    CHR(ER_MULT, 150, E150, exec_type, 39)
    CHR(ER_MULT, 39, E39, ord_status, 1)
    case BUCKET(ER_MULT, 103):
    L_103: __attribute__((unused)); seen |= B(E103); bad |= dec_i32(v, n, &o->ord_rej_reason); NEXT(1);
    STR(ER_MULT, 1, E1, account, 55)
    STR(ER_MULT, 55, E55, symbol, 54)
    CHR(ER_MULT, 54, E54, side, 38)
    QTY(ER_MULT, 38, E38, order_qty, 40)
    CHR(ER_MULT, 40, E40, ord_type, 44)
    PX(ER_MULT, 44, E44, price, price_f64, 59)
    CHR(ER_MULT, 59, E59, time_in_force, 32)
    QTY(ER_MULT, 32, E32, last_qty, 31)
    PX(ER_MULT, 31, E31, last_px, last_px_f64, 151)
    QTY(ER_MULT, 151, E151, leaves_qty, 14)
    QTY(ER_MULT, 14, E14, cum_qty, 6)
    PX(ER_MULT, 6, E6, avg_px, avg_px_f64, 60)
    TS(ER_MULT, 60, E60, transact_time_ns, 58)
    case BUCKET(ER_MULT, 58):
    L_58: __attribute__((unused)); seen |= B(E58); bad |= !n; set_str(&o->text, v, n); NEXT_ANY();
    default:
        goto other;
    }
    OTHER_CASE((void)0);
done:;
    const uint64_t required = B(E37) | B(E17) | B(E55) | B(E150) | B(E39) | B(E54) | B(E151) |
                              B(E14) | B(E6);
    WALK_FINISH(FIELDS, (uint32_t)__builtin_popcountll(seen));
    return (seen & required) == required ? 0 : -EBADMSG;
    WALK_EXITS;
}

/* NewOrderSingle (D): access.c's no_d, in FIX 4.4's order. */
static inline __attribute__((always_inline)) int walk_new_order(tw__fix_index_fn ixfn,
                                                                const tw__fix_head *hd,
                                                                const char *msg,
                                                                tw_fix_decoded *d, int FIELDS,
                                                                uint64_t *sum, size_t *indexed)
{
    WALK_SETUP(FIELDS);
    tw_fix_new_order *o = &d->u.new_order;
    zero(o, sizeof(*o));
    o->price_f64 = NAN;
    const unsigned dec = d->px_decimals;
    const int loose = (d->flags & TW_FIX_PX_F64) != 0;
    NEXT(49);
    WALK_COMMON(no_keys, NO_MULT,
                PRED_CASE(49) PRED_CASE(56) PRED_CASE(34) PRED_CASE(52) PRED_CASE(11)
                PRED_CASE(1) PRED_CASE(21) PRED_CASE(55) PRED_CASE(54) PRED_CASE(60)
                PRED_CASE(38) PRED_CASE(40) PRED_CASE(44) PRED_CASE(59))
    switch (bkt) {
    HEADER_CASES(NO_MULT, h, (void)0, 11)
    STR(NO_MULT, 11, N11, cl_ord_id, 1)
    STR(NO_MULT, 1, N1, account, 21)
    CHR(NO_MULT, 21, N21, handl_inst, 55)
    STR(NO_MULT, 55, N55, symbol, 54)
    CHR(NO_MULT, 54, N54, side, 60)
    TS(NO_MULT, 60, N60, transact_time_ns, 38)
    QTY(NO_MULT, 38, N38, order_qty, 40)
    CHR(NO_MULT, 40, N40, ord_type, 44)
    PX(NO_MULT, 44, N44, price, price_f64, 59)
    case BUCKET(NO_MULT, 59):
    L_59: __attribute__((unused)); seen |= B(N59); o->time_in_force = *v; bad |= n ^ 1; NEXT_ANY();
    default:
        goto other;
    }
    OTHER_CASE((void)0);
done:;
    const uint64_t required = B(N11) | B(N55) | B(N54) | B(N40) | B(N38);
    WALK_FINISH(FIELDS, (uint32_t)__builtin_popcountll(seen));
    /* access.c's checks after its fill: a limit order needs a price, and
     * a quantity must be positive. */
    if ((seen & required) != required || o->order_qty <= 0 ||
        ((o->ord_type == '2' || o->ord_type == '4') && !(seen & B(N44))))
        return -EBADMSG;
    return 0;
    WALK_EXITS;
}

/* Heartbeat (0) and TestRequest (1), which needs its TestReqID. */
static inline __attribute__((always_inline)) int walk_test_request(tw__fix_index_fn ixfn,
                                                                   const tw__fix_head *hd,
                                                                   const char *msg,
                                                                   tw_fix_decoded *d, int FIELDS,
                                                                   uint64_t *sum, size_t *indexed)
{
    WALK_SETUP(FIELDS);
    tw_fix_heartbeat *o = &d->u.heartbeat;
    zero(o, sizeof(*o));
    NEXT(49);
    WALK_COMMON(tr_keys, TR_MULT,
                PRED_CASE(49) PRED_CASE(56) PRED_CASE(34) PRED_CASE(52) PRED_CASE(112))
    switch (bkt) {
    HEADER_CASES(TR_MULT, h, (void)0, 112)
    case BUCKET(TR_MULT, 112):
    L_112: __attribute__((unused)); seen |= B(T112); bad |= !n; set_str(&o->test_req_id, v, n); NEXT_ANY();
    default:
        goto other;
    }
    OTHER_CASE((void)0);
done:
    WALK_FINISH(FIELDS, (uint32_t)__builtin_popcountll(seen));
    return d->kind == TW_FIX_K_TEST_REQUEST && !(seen & B(T112)) ? -EBADMSG : 0;
    WALK_EXITS;
}

/* MarketDataIncrementalRefresh (X): access.c's read_md for X - the body
 * fields before the first NoMDEntries(268), then its entries (each from a
 * 279 up to the next 279 or the first tag that is not a member), then
 * anything - written straight into the caller's entries.  Its errors as
 * read_md finds them: a count that is not a number, a count not followed
 * by the delimiter or above the fields after it, no 268 (-EBADMSG); more
 * entries than the caller's array (-E2BIG, only if the group's start is
 * sound); fewer entries than announced, a bad value in an entry
 * (-EBADMSG).  Entries in FIX 4.4's order: 279, 269, 278, 55, 270, 271. */
static inline __attribute__((always_inline)) int walk_md_incremental(tw__fix_index_fn ixfn,
                                                                     const tw__fix_head *hd,
                                                                     const char *msg,
                                                                     tw_fix_decoded *d,
                                                                     int FIELDS, uint64_t *sum,
                                                                     size_t *indexed)
{
    WALK_SETUP(FIELDS);
    /* FIRST: right after the count (the delimiter must follow); OVER: a
     * group over the caller's capacity, whose entries are not read. */
    enum { BODY, FIRST, FIRST_OVER, ENTRIES, OVER, AFTER } st = BODY;
    tw_fix_md *o = &d->u.md;
    zero(o, sizeof(*o));
    const unsigned dec = d->px_decimals;
    const int loose = (d->flags & TW_FIX_PX_F64) != 0;
    tw_fix_md_entry *e = d->entries;
    uint64_t nent = 0;  /* entries announced */
    uint32_t k = 0;     /* entries started */
    uint64_t eseen = 0; /* the current entry's seen bits */
    uint32_t taken = 0; /* fields the finished entries took */
    uint64_t at268 = 0; /* the count's field index */
    int xbad = 0;       /* the group is not what the count says */
/* Any field but the delimiter right after the count: the group is bad. */
#define LEAVE_FIRST()                                                                      \
    do {                                                                                   \
        if (TW_UNLIKELY(st == FIRST || st == FIRST_OVER)) {                                \
            xbad = 1;                                                                      \
            st = AFTER;                                                                    \
        }                                                                                  \
    } while (0)
/* A tag that is not a member ends the group: all entries must be there. */
#define END_GROUP()                                                                        \
    do {                                                                                   \
        LEAVE_FIRST();                                                                     \
        if (TW_UNLIKELY(st == ENTRIES)) {                                                  \
            xbad |= k != nent;                                                             \
            st = AFTER;                                                                    \
        }                                                                                  \
    } while (0)
/* An entry's member: into the current entry, in the group only. */
#define ENTRY(t, c, nx, ...)                                                               \
    case BUCKET(X_MULT, t):                                                                \
    L_##t: __attribute__((unused));                                                                                 \
        if (TW_LIKELY(st == ENTRIES)) {                                                    \
            eseen |= B(c);                                                                 \
            __VA_ARGS__;                                                                   \
        } else {                                                                           \
            LEAVE_FIRST();                                                                 \
            bad |= !n;                                                                     \
            u++;                                                                           \
        }                                                                                  \
        NEXT(nx);
    NEXT(49);
    WALK_COMMON(x_keys, X_MULT,
                PRED_CASE(49) PRED_CASE(56) PRED_CASE(34) PRED_CASE(52) PRED_CASE(262)
                PRED_CASE(268) PRED_CASE(279) PRED_CASE(269) PRED_CASE(278) PRED_CASE(55)
                PRED_CASE(270) PRED_CASE(271))
    switch (bkt) {
    HEADER_CASES(X_MULT, h, END_GROUP(), 262)
    case BUCKET(X_MULT, 279):
    L_279: __attribute__((unused));
        if (TW_LIKELY(st == ENTRIES || st == FIRST)) {
            if (TW_UNLIKELY(k == nent)) { /* the last entry ends at the next delimiter */
                st = AFTER;
                bad |= !n;
                u++;
                NEXT_ANY();
            }
            taken += (uint32_t)__builtin_popcountll(eseen);
            eseen = B(X279);
            e = &d->entries[k++];
            st = ENTRIES;
            /* access.c's entry before its fill: zero, px_f64 NaN, then
             * the message's symbol if the entry has none. */
            zero(e, sizeof(*e));
            e->symbol = o->symbol;
            e->px_f64 = NAN;
            e->update_action = *v;
            bad |= n ^ 1;
        } else {
            if (st == FIRST_OVER)
                st = OVER;
            bad |= !n;
            u++;
        }
        NEXT(269);
    case BUCKET(X_MULT, 55):
    L_55: __attribute__((unused));
        bad |= !n;
        if (TW_LIKELY(st == ENTRIES)) {
            eseen |= B(X55);
            set_str(&e->symbol, v, n);
        } else if (st == BODY) {
            seen |= B(X55); /* the message's symbol, the entries' default */
            set_str(&o->symbol, v, n);
        } else {
            LEAVE_FIRST();
            u++;
        }
        NEXT(270);
    ENTRY(269, X269, 278, e->entry_type = *v; bad |= n ^ 1)
    ENTRY(278, X278, 55, bad |= !n; set_str(&e->entry_id, v, n))
    ENTRY(270, X270, 271, bad |= dec_px(v, n, dec, loose, &e->px, &e->px_f64))
    ENTRY(271, X271, 279, bad |= dec_qty(v, n, &e->size))
    ENTRY(290, X290, 279, bad |= dec_i32(v, n, &e->position_no))
    ENTRY(346, X346, 279, bad |= dec_i64(v, n, &e->number_of_orders))
#define MEMBER_CASE(t, c) case BUCKET(X_MULT, t):
    X_OTHER_MEMBERS(MEMBER_CASE)
#undef MEMBER_CASE
        /* A member the entry struct does not keep. */
        LEAVE_FIRST();
        bad |= !n;
        u++;
        NEXT_ANY();
    case BUCKET(X_MULT, 262):
    L_262: __attribute__((unused));
        END_GROUP();
        bad |= !n;
        if (st == BODY) {
            seen |= B(X262);
            set_str(&o->md_req_id, v, n);
        } else {
            u++;
        }
        NEXT(268);
    case BUCKET(X_MULT, 268):
    L_268: __attribute__((unused));
        END_GROUP();
        if (st != BODY) {
            bad |= !n;
            u++;
            NEXT_ANY();
        }
        at268 = 3 + (uint64_t)__builtin_popcountll(seen) + u; /* no repeats: checked at the end */
        seen |= B(X268);
        {
            int64_t cnt;
            if (dec_i64(v, n, &cnt) != 0 || cnt < 0) {
                xbad = 1;
                bad |= !n; /* an empty count is the parser's error, not the group's */
                st = AFTER;
            } else {
                nent = (uint64_t)cnt;
                st = nent == 0 ? AFTER : nent > d->entries_cap ? FIRST_OVER : FIRST;
            }
        }
        NEXT(279);
    default:
        goto other;
    }
    OTHER_CASE(END_GROUP());
#undef ENTRY
#undef END_GROUP
#undef LEAVE_FIRST
done:
    taken += (uint32_t)__builtin_popcountll(eseen);
    WALK_FINISH(FIELDS, (uint32_t)__builtin_popcountll(seen) + taken);
    /* After the last field: a count followed by the trailer, or a body
     * that ended inside the group. */
    xbad |= st == FIRST || st == FIRST_OVER || (st == ENTRIES && k != nent);
    if (!(seen & B(X268)))
        return -EBADMSG;
    /* tw_fix_group_begin refuses a count above the fields after it (all
     * the index counted, the trailer included) before the caller's
     * capacity is looked at. */
    if (st == OVER)
        return nent > wk.ix.sohs + 1 - at268 - 1 ? -EBADMSG : -E2BIG;
    if (xbad)
        return -EBADMSG;
    o->n_entries = k;
    return 0;
    WALK_EXITS;
}
#undef STR
#undef CHR
#undef QTY
#undef PX
#undef TS

/* The one pass for the types that have one, with the views or without. */
static inline __attribute__((always_inline)) int onepass(tw__fix_index_fn ixfn,
                                                         const tw__fix_head *hd, const char *msg,
                                                         tw_fix_decoded *d, uint64_t *sum,
                                                         size_t *indexed)
{
    int fields = d->fields != NULL;
    switch (d->kind) {
    case TW_FIX_K_EXEC_REPORT:
        return fields ? walk_exec_report(ixfn, hd, msg, d, 1, sum, indexed)
                      : walk_exec_report(ixfn, hd, msg, d, 0, sum, indexed);
    case TW_FIX_K_NEW_ORDER:
        return fields ? walk_new_order(ixfn, hd, msg, d, 1, sum, indexed)
                      : walk_new_order(ixfn, hd, msg, d, 0, sum, indexed);
    case TW_FIX_K_MD_INCREMENTAL:
        return fields ? walk_md_incremental(ixfn, hd, msg, d, 1, sum, indexed)
                      : walk_md_incremental(ixfn, hd, msg, d, 0, sum, indexed);
    default:
        return fields ? walk_test_request(ixfn, hd, msg, d, 1, sum, indexed)
                      : walk_test_request(ixfn, hd, msg, d, 0, sum, indexed);
    }
}

/* ---- dispatch -------------------------------------------------------------------- */

/* The kind of each one-character MsgType (the others are OTHER). */
static const unsigned char kind_tab[256] = {
    ['0'] = TW_FIX_K_HEARTBEAT,      ['1'] = TW_FIX_K_TEST_REQUEST,
    ['2'] = TW_FIX_K_RESEND_REQUEST, ['3'] = TW_FIX_K_REJECT,
    ['4'] = TW_FIX_K_SEQUENCE_RESET, ['5'] = TW_FIX_K_LOGOUT,
    ['8'] = TW_FIX_K_EXEC_REPORT,    ['9'] = TW_FIX_K_CANCEL_REJECT,
    ['A'] = TW_FIX_K_LOGON,          ['D'] = TW_FIX_K_NEW_ORDER,
    ['F'] = TW_FIX_K_CANCEL_REQUEST, ['V'] = TW_FIX_K_MD_REQUEST,
    ['W'] = TW_FIX_K_MD_SNAPSHOT,    ['X'] = TW_FIX_K_MD_INCREMENTAL,
    ['Y'] = TW_FIX_K_MD_REQUEST_REJECT, ['h'] = TW_FIX_K_TRADING_SESSION_STATUS,
};

/* The four-call path: tw_fix_parse, then the accessors. */
static __attribute__((noinline)) void decode_generic(const char *msg, size_t n, tw_fix_decoded *d)
{
    tw_fix_field local[TW_FIX_DECODE_FIELDS];
    tw_fix_field *f = d->fields ? d->fields : local;
    tw_fix_msg m = { .fields = f, .cap = d->fields ? d->fields_cap : TW_FIX_DECODE_FIELDS };
    d->msg = (tw_fix_msg){ .fields = d->fields, .cap = d->fields_cap };
    d->parse_rc = tw_fix_parse(msg, n, &m);
    if (d->fields && d->parse_rc == 0)
        d->msg = m;
    if (d->parse_rc != 0) {
        d->rc = d->parse_rc;
        return;
    }
    int rc = tw_fix_read_header(&m, &d->hdr, NULL);
    if (rc != 0) {
        d->rc = rc;
        return;
    }
    unsigned dec = d->px_decimals;
    switch (d->kind) {
    case TW_FIX_K_HEARTBEAT: rc = tw_fix_read_heartbeat(&m, &d->u.heartbeat, NULL); break;
    case TW_FIX_K_TEST_REQUEST: rc = tw_fix_read_test_request(&m, &d->u.test_request, NULL); break;
    case TW_FIX_K_RESEND_REQUEST: rc = tw_fix_read_resend_request(&m, &d->u.resend_request, NULL); break;
    case TW_FIX_K_REJECT: rc = tw_fix_read_reject(&m, &d->u.reject, NULL); break;
    case TW_FIX_K_SEQUENCE_RESET: rc = tw_fix_read_sequence_reset(&m, &d->u.sequence_reset, NULL); break;
    case TW_FIX_K_LOGOUT: rc = tw_fix_read_logout(&m, &d->u.logout, NULL); break;
    case TW_FIX_K_EXEC_REPORT: rc = tw_fix_read_exec_report(&m, dec, &d->u.exec_report, NULL); break;
    case TW_FIX_K_CANCEL_REJECT: rc = tw_fix_read_cancel_reject(&m, &d->u.cancel_reject, NULL); break;
    case TW_FIX_K_LOGON: rc = tw_fix_read_logon(&m, &d->u.logon, NULL); break;
    case TW_FIX_K_NEW_ORDER: rc = tw_fix_read_new_order(&m, dec, &d->u.new_order, NULL); break;
    case TW_FIX_K_CANCEL_REQUEST: rc = tw_fix_read_cancel_request(&m, &d->u.cancel_request, NULL); break;
    case TW_FIX_K_MD_REQUEST: rc = tw_fix_read_md_request(&m, &d->u.md_request, NULL); break;
    case TW_FIX_K_MD_SNAPSHOT:
        rc = tw_fix_read_md_snapshot(&m, dec, &d->u.md, d->entries, d->entries_cap, NULL);
        break;
    case TW_FIX_K_MD_INCREMENTAL:
        rc = tw_fix_read_md_incremental(&m, dec, &d->u.md, d->entries, d->entries_cap, NULL);
        break;
    case TW_FIX_K_MD_REQUEST_REJECT:
        rc = tw_fix_read_md_request_reject(&m, &d->u.md_request_reject, NULL);
        break;
    case TW_FIX_K_TRADING_SESSION_STATUS:
        rc = tw_fix_read_trading_session_status(&m, &d->u.trading_session_status, NULL);
        break;
    case TW_FIX_K_OTHER: rc = -ENOTSUP; break;
    }
    d->rc = rc;
}

/* tw__fix_frame_head's result for the usual shape in a few loads:
 * "8=FIX.4.d<SOH>9=", 1 to 7 digits and SOH, "35=", and "<SOH>10=ddd<SOH>"
 * where BodyLength puts it, all there.  Returns 1 with *h set as the
 * framer sets it, or 0 (the framer then decides, with its errors and
 * *skip).  Each check xors the bytes with what they must be: digits
 * become 0..9 and fixed bytes 0. */
static inline __attribute__((always_inline)) int frame_fast(const char *buf, size_t len,
                                                            unsigned flags, tw__fix_head *h)
{
    if (TW_UNLIKELY(len < 32 || (flags & TW_FIX_NO_BODYLEN)))
        return 0;
    /* "8=FIX.4." then the version digit, SOH, "9=". */
    uint32_t x1;
    memcpy(&x1, buf + 8, 4);
    x1 ^= 0x3D390130u;
    if (tw__load64(buf) != 0x2E342E5849463D38ull || x1 > 9)
        return 0;
    uint64_t x = tw__load64(buf + 12) ^ C30;
    unsigned nk = (unsigned)__builtin_ctzll(nondigits(x) | (1ull << 63)) >> 3;
    if (nk - 1 > 6 || ((x >> (8 * nk)) & 0xFF) != (TW_FIX_SOH ^ '0'))
        return 0;
    uint32_t body_len = nk <= 4 ? swar_value4((uint32_t)x, nk) : (uint32_t)swar_value(x, nk);
    size_t body = 13 + nk;
    uint32_t mt;
    memcpy(&mt, buf + body, 4);
    size_t t = body + body_len;
    if ((mt & 0xFFFFFF) != 0x3D3533 /* "35=" */ || body_len - 5 > TW_FIX_MAX_BODYLEN - 5 ||
        len < t + 7)
        return 0;
    /* SOH "10=" ddd SOH */
    uint64_t tr = tw__load64(buf + t - 1) ^ 0x013030303D303101ull;
    if (((tr + 0x7F7676767F7F7F7Full) | tr) & TW__HIGHS)
        return 0;
    h->begin_end = 9;
    h->bodylen_end = 12 + nk;
    h->body = body;
    h->t = t;
    h->checksum = (unsigned)(((tr >> 32) & 0xFF) * 100 + ((tr >> 40) & 0xFF) * 10 + ((tr >> 48) & 0xFF));
    return 1;
}

/* The types without a one-pass reader: CheckSum, then the four-call path. */
static __attribute__((noinline)) int decode_other(const char *buf, size_t len, tw_fix_decoded *d,
                                                  size_t *skip, const tw__fix_head *h)
{
    unsigned sum = tw_fix_checksum(buf, h->t);
    if (!(d->flags & TW_FIX_NO_CHECKSUM) && sum != h->checksum)
        return tw__fix_bad_checksum(buf, len, h, sum, skip, NULL);
    decode_generic(buf, h->t + 7, d);
    return (int)(h->t + 7);
}

static inline __attribute__((always_inline)) int decode(tw__fix_index_fn ixfn, const char *buf,
                                                        size_t len, tw_fix_decoded *d,
                                                        size_t *skip)
{
    tw__fix_head h;
    if (TW_LIKELY(frame_fast(buf, len, d->flags, &h))) {
        *skip = 0;
    } else {
        int rc = tw__fix_frame_head(buf, len, d->flags, skip, NULL, &h);
        if (rc != 0)
            return rc;
    }
    size_t n = h.t + 7;
    /* MsgType's value starts at body + 3 ("35=" is there: the framer
     * checked) and ends before t - 1. */
    const char *tv = buf + h.body + 3;
    d->kind = tv[1] == TW_FIX_SOH ? (tw_fix_kind)kind_tab[(unsigned char)tv[0]] : TW_FIX_K_OTHER;
    if (tv[0] == TW_FIX_SOH)
        d->kind = TW_FIX_K_OTHER;
    if (TW_UNLIKELY(!((1u << d->kind) & ((1u << TW_FIX_K_EXEC_REPORT) | (1u << TW_FIX_K_NEW_ORDER) |
                                          (1u << TW_FIX_K_MD_INCREMENTAL) |
                                          (1u << TW_FIX_K_HEARTBEAT) |
                                          (1u << TW_FIX_K_TEST_REQUEST)))))
        return decode_other(buf, len, d, skip, &h);
    d->msg = (tw_fix_msg){ .fields = d->fields, .cap = d->fields_cap };
    uint64_t sum;
    size_t indexed;
    int r = onepass(ixfn, &h, buf, d, &sum, &indexed);
    /* The CheckSum: what the walk indexed, plus any rest it did not reach
     * (it stops early when it hands over). */
    if (TW_UNLIKELY(indexed != h.t))
        sum += tw_fix_checksum(buf + indexed, h.t - indexed);
    unsigned cs = (unsigned)sum & 0xFF;
    if (!(d->flags & TW_FIX_NO_CHECKSUM) && cs != h.checksum)
        return tw__fix_bad_checksum(buf, len, &h, cs, skip, NULL);
    if (TW_UNLIKELY(r > 0)) {
        /* Without a view array the four-call path parses into
         * TW_FIX_DECODE_FIELDS on the stack, and a long message would come
         * back short of room where tw_fix_parse, given room, refuses it:
         * the parse error is known here. */
        if (r == WALK_PARSE_ERROR && !d->fields) {
            d->parse_rc = d->rc = -EBADMSG;
            return (int)n;
        }
        decode_generic(buf, n, d);
        return (int)n;
    }
    d->parse_rc = 0;
    d->rc = r;
    return (int)n;
}

typedef int (*decode_fn)(tw__fix_index_fn ixfn, const char *buf, size_t len, tw_fix_decoded *d,
                         size_t *skip);

static int decode_base(tw__fix_index_fn ixfn, const char *buf, size_t len, tw_fix_decoded *d,
                       size_t *skip)
{
    return decode(ixfn, buf, len, d, skip);
}

#if defined(__x86_64__)
/* The same code with BMI1, BMI2, POPCNT and AVX2 (tw__fix_isa_v3), tuned
 * for the AMD cores this runs on (no zeroing before tzcnt for the false
 * dependency some Intel cores have). */
#if defined(__clang__)
#define TW_V3_TARGET __attribute__((target("avx2,bmi,bmi2,popcnt")))
#else
#define TW_V3_TARGET __attribute__((target("avx2,bmi,bmi2,popcnt")))
#endif
TW_V3_TARGET static int decode_v3(tw__fix_index_fn ixfn, const char *buf, size_t len,
                                  tw_fix_decoded *d, size_t *skip)
{
    return decode(ixfn, buf, len, d, skip);
}
#else
#define decode_v3 decode_base
#endif

int tw_fix_decode(const char *buf, size_t len, tw_fix_decoded *d, size_t *skip)
{
    /* acquire: pairs with the release store in soh.c's choose_isa(), which
     * sets tw__fix_v3 before it */
    tw__fix_index_fn ixfn = __atomic_load_n(&tw__fix_index, __ATOMIC_ACQUIRE);
    return (tw__fix_v3 ? decode_v3 : decode_base)(ixfn, buf, len, d, skip);
}

int tw_fix_decode_isa(tw_isa isa, const char *buf, size_t len, tw_fix_decoded *d, size_t *skip)
{
    decode_fn f = tw__fix_isa_v3(tw__fix_resolve_isa(isa)) ? decode_v3 : decode_base;
    return f(tw__fix_index_isa(isa), buf, len, d, skip);
}
